"""The input files of a Beam preparation: matching them, reading them.

``match_inputs`` turns the given files and glob patterns into the table's
files, in order; ``read_files`` reads each on one worker into rows
(``beam.rows``) and the schema of the columns every file has.

Example:

>>> import os, tempfile
>>> folder = tempfile.mkdtemp()
>>> for k in (10, 2):
...     open(os.path.join(folder, f"part-{k}.tsv"), "w").close()
>>> [os.path.basename(p)
...  for p in match_inputs([os.path.join(folder, "part-*.tsv")])]
['part-2.tsv', 'part-10.tsv']
"""

import contextlib
import os
import shutil
import tempfile
from collections.abc import Iterator

import apache_beam as beam
from apache_beam.io.filesystem import BeamIOError, CompressionTypes
from apache_beam.io.filesystems import FileSystems

from tfrec_tricks.data.beam.rows import file_schema
from tfrec_tricks.data.beam.runner import worker_data_error
from tfrec_tricks.data.sources.loaders import (
    is_pipe,
    natural_sort_key,
    read_records,
    readable_file,
)
from tfrec_tricks.errors import DataError


def match_inputs(inputs: list[str]) -> list[str]:
    """The files of ``inputs``: in order, each pattern's matches sorted.

    Args:
        inputs: list of str. Files or glob patterns, on any Beam file
            system.

    Returns:
        The files, each pattern's matches in natural order
        (``loaders.natural_sort_key``).

    Raises:
        DataError: no input is given, a pattern matches no file, or a
            match is a directory.
    """
    if not inputs:
        raise DataError("prepare_with_beam needs at least one input file.")
    paths = []
    for pattern in inputs:
        # A local path that exists is that file, read literally: a name
        # with '[' is no glob, and a pipe (<(...), a FIFO) is a file.
        if os.path.lexists(pattern):
            found = [pattern]
        else:
            try:
                (result,) = FileSystems.match([pattern])
                found = [m.path for m in result.metadata_list]
            except BeamIOError:
                found = []
        if not found:
            raise DataError(
                f"No input file matches {pattern!r}. Received: "
                f"inputs={inputs!r}"
            )
        folders = [path for path in found if os.path.isdir(path)]
        if folders:
            raise DataError(
                f"{folders[0]!r} is a directory, not a data file; give a "
                f"file or a glob of files (e.g. "
                f"'{os.path.join(folders[0], '*.tsv')}')"
            )
        paths.extend(sorted(found, key=natural_sort_key))
    return paths


def read_files(
    pipeline: beam.Pipeline, paths: list[str], file_format: str
) -> tuple:
    """Reads every file on one worker each.

    Args:
        pipeline: the ``beam.Pipeline`` to add the reading to.
        paths: list of str. The files, from ``match_inputs``.
        file_format: str. One of ``loaders.FORMATS``, or "auto".

    Returns:
        The rows (``beam.rows``), the schema (a singleton side input, see
        ``beam.rows.file_schema``) and a singleton PCollection: how many
        rows were read.
    """
    # A pipe can be read once: this process copies it to a local file
    # (``readable_file``) that the workers read in its place.
    copies = {path: readable_file(path) for path in paths if is_pipe(path)}
    read = (
        pipeline
        | "Files" >> beam.Create(list(enumerate(paths)))
        | "SpreadFiles" >> beam.Reshuffle()
        | "Read"
        >> beam.ParDo(ReadFile(file_format, copies)).with_outputs(
            ReadFile.COLUMNS, main="rows"
        )
    )
    schema = beam.pvalue.AsSingleton(
        read[ReadFile.COLUMNS]
        | "AllColumns" >> beam.combiners.ToList()
        | "Schema" >> beam.Map(file_schema)
    )
    rows_read = read.rows | "CountRead" >> beam.combiners.Count.Globally()
    return read.rows, schema, rows_read


class ReadFile(beam.DoFn):
    """Reads one ``(file index, path)``: its rows, and its columns.

    The main output is the file's rows (``beam.rows``); the ``COLUMNS``
    output is one ``(file index, has timestamps, numeric column names,
    token column names)``.
    A malformed line raises a ``beam.runner.worker_data_error`` that names
    the path and the line.

    Args:
        file_format: str. One of ``loaders.FORMATS``, or "auto".
        copies: dict or None. Maps a pipe's path to the local copy to
            read instead; messages name the path. Defaults to None.
    """

    COLUMNS = "columns"

    def __init__(self, file_format: str, copies: dict | None = None):
        super().__init__()
        self.file_format = file_format
        self.copies = dict(copies or {})

    def process(self, element: tuple[int, str]) -> Iterator:
        file_index, path = element
        try:
            with _local_file(self.copies.get(path, path)) as local:
                try:
                    columns, records = read_records(local, self.file_format)
                    yield beam.pvalue.TaggedOutput(
                        self.COLUMNS,
                        (
                            file_index,
                            columns.has_time,
                            columns.numeric,
                            columns.tokens,
                        ),
                    )
                    for record in records:
                        yield (
                            file_index,
                            record.line,
                            record.user,
                            record.item,
                            record.time,
                            record.numeric,
                            record.other,
                            record.tokens,
                        )
                except DataError as error:
                    message = str(error).replace(local, path)
                    raise DataError(message) from None
        except DataError as error:
            raise worker_data_error(error) from None


@contextlib.contextmanager
def _local_file(path: str) -> Iterator[str]:
    """``path`` itself when local, else a local copy (same file name)."""
    if os.path.isfile(path):
        yield path
        return
    folder = tempfile.mkdtemp(prefix="tfrec_tricks-beam-")
    local = os.path.join(folder, os.path.basename(path) or "input")
    try:
        with (
            FileSystems.open(
                path, compression_type=CompressionTypes.UNCOMPRESSED
            ) as remote,
            open(local, "wb") as handle,
        ):
            shutil.copyfileobj(remote, handle, 1 << 20)
        yield local
    finally:
        shutil.rmtree(folder, ignore_errors=True)
