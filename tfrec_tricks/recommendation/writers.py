"""Recommendation files: CSV, JSON Lines or Parquet, written whole or not.

A file is written a batch of rows at a time (memory holds a batch, never
the file) into a staging folder beside the target,
``.<name>.<random>.tmp/``, marked as the tool's
(``ownership.mark_staging``), and published by one link or rename when
complete: a reader never sees half a file. An error or Ctrl-C removes
the staging folder (its marker last); a killed process leaves it marked
(or empty, killed before it marked it), and the next writer of the same
file removes it (``output_folders.target_lock``). The target must not
exist: it is never replaced.
"""

import abc
import contextlib
import errno
import os
import tempfile
from collections.abc import Iterator, Sequence
from typing import Any, TextIO

import numpy as np
import pandas as pd

from tfrec_tricks import ownership
from tfrec_tricks.errors import OutputError
from tfrec_tricks.output_folders import TargetKind, overlap, target_lock

RECOMMENDATIONS = TargetKind("recommendations file", "--output")
# File name endings and the format each one means.
EXTENSIONS = {
    ".csv": "csv",
    ".jsonl": "jsonl",
    ".ndjson": "jsonl",
    ".parquet": "parquet",
}
# Rows per Parquet row group (a row group is written when this many rows
# are buffered, and at the end).
ROW_GROUP_ROWS = 65_536


def output_format(path: str, given: str | None = None) -> str:
    """The format of an output file: ``given``, else from its ending.

    >>> output_format("recs.csv"), output_format("out/recs.JSONL")
    ('csv', 'jsonl')
    >>> output_format("recs.txt", "parquet")
    'parquet'

    Raises:
        ValueError: no ``given`` format and an ending that names none.
    """
    if given is not None:
        if given not in FORMATS:
            raise ValueError(
                f"The output format must be one of {sorted(FORMATS)}. "
                f"Received: {given!r}"
            )
        return given
    ending = os.path.splitext(path)[1].lower()
    if ending not in EXTENSIONS:
        raise ValueError(
            f"Cannot tell the output format from {path!r}: name the file "
            f"with one of {sorted(EXTENSIONS)}, or give --format "
            f"{{{','.join(sorted(FORMATS))}}}. Received: ending {ending!r}"
        )
    return EXTENSIONS[ending]


def check_output(path: str, inputs: Sequence[str] = ()) -> None:
    """Refuses an output file that may not be written.

    Args:
        path: str. The file to write.
        inputs: paths the job reads (the run directory, the id and
            history files): the file may not be, or lie inside, one.

    Raises:
        OutputError: ``path`` exists, is one of ``inputs`` or lies inside
            one, or lies inside a folder another tfrec-tricks command
            owns (a run directory, a prepared dataset, ...).
    """
    refuse = "; choose another --output (it is never replaced)."
    if os.path.lexists(path):
        what = "a folder" if os.path.isdir(path) else "a file"
        raise OutputError(f"{path!r} exists ({what})" + refuse)
    for source in inputs:
        how = overlap(path, source)
        if how in ("is", "lies inside"):
            raise OutputError(
                f"{path!r} {how} an input of this command ({source!r})" + refuse
            )
    owner = ownership.owner_of(os.path.realpath(path))
    if owner is not None:
        raise OutputError(
            f"{path!r} lies inside {owner!r}, a "
            f"{ownership.record_kind(owner)} tfrec-tricks wrote; a file "
            "there would mix with it" + refuse
        )


class RecommendationWriter(abc.ABC):
    """Writes recommendation tables to one file, a batch at a time.

    A subclass is one format: ``open`` the file, ``write`` each table's
    rows, ``close`` when done.

    Args:
        path: str. The file to create.
    """

    def __init__(self, path: str) -> None:
        self.path = path
        self.rows = 0

    def write(self, frame: pd.DataFrame) -> None:
        """Appends ``frame``'s rows (columns ``COLUMNS``)."""
        # Here, not at the top: local_engine imports TensorFlow, and the
        # command line checks its output (check_output) before it loads.
        from tfrec_tricks.recommendation.local_engine import COLUMNS

        self._write(frame.loc[:, list(COLUMNS)])
        self.rows += len(frame)

    @abc.abstractmethod
    def _write(self, frame: pd.DataFrame) -> None:
        """Appends the rows of ``frame``."""

    @abc.abstractmethod
    def close(self) -> None:
        """Completes the file (writes what is buffered)."""


class TextWriter(RecommendationWriter):
    """A UTF-8 text file, opened at once."""

    def __init__(self, path: str) -> None:
        super().__init__(path)
        self.handle: TextIO = open(path, "x", encoding="utf-8", newline="")

    def close(self) -> None:
        self.handle.close()


class CsvWriter(TextWriter):
    """CSV with a header line; ids quoted where CSV needs it.

    >>> import os, tempfile
    >>> from tfrec_tricks.recommendation.local_engine import empty_frame
    >>> writer = CsvWriter(os.path.join(tempfile.mkdtemp(), "r.csv"))
    >>> writer.write(empty_frame()); writer.close()
    >>> open(writer.path).read()
    'user_id,rank,item_id,score\\n'
    """

    def __init__(self, path: str) -> None:
        from tfrec_tricks.recommendation.local_engine import COLUMNS

        super().__init__(path)
        self.handle.write(",".join(COLUMNS) + "\n")

    def _write(self, frame: pd.DataFrame) -> None:
        frame.to_csv(self.handle, header=False, index=False)


class JsonLinesWriter(TextWriter):
    """A JSON object per line; scores as float32 prints them."""

    def _write(self, frame: pd.DataFrame) -> None:
        if not len(frame):
            return
        # The shortest text that reads back as the float32 score.
        scores = frame["score"].to_numpy(np.float32).astype(str)
        frame = frame.assign(score=scores.astype(np.float64))
        frame.to_json(
            self.handle,
            orient="records",
            lines=True,
            force_ascii=False,
            double_precision=15,
        )


class ParquetWriter(RecommendationWriter):
    """Parquet: ``user_id`` and ``item_id`` strings, ``rank`` int32,
    ``score`` float32; a row group per ``ROW_GROUP_ROWS`` rows."""

    def __init__(self, path: str) -> None:
        import pyarrow as pa
        import pyarrow.parquet as pq

        super().__init__(path)
        self.schema = pa.schema(
            [
                ("user_id", pa.string()),
                ("rank", pa.int32()),
                ("item_id", pa.string()),
                ("score", pa.float32()),
            ]
        )
        # Created first ("x"), so that an existing file is never replaced.
        open(path, "xb").close()
        self.writer = pq.ParquetWriter(path, self.schema)
        self.buffered: list[pd.DataFrame] = []
        self.buffered_rows = 0

    def _write(self, frame: pd.DataFrame) -> None:
        self.buffered.append(frame)
        self.buffered_rows += len(frame)
        if self.buffered_rows >= ROW_GROUP_ROWS:
            self._flush()

    def _flush(self) -> None:
        import pyarrow as pa

        if not self.buffered:
            return
        table = pd.concat(self.buffered, ignore_index=True)
        self.writer.write_table(
            pa.Table.from_pandas(table, self.schema, preserve_index=False)
        )
        self.buffered, self.buffered_rows = [], 0

    def close(self) -> None:
        self._flush()
        self.writer.close()


FORMATS = {"csv": CsvWriter, "jsonl": JsonLinesWriter, "parquet": ParquetWriter}


@contextlib.contextmanager
def staged_output(path: str, file_format: str) -> Iterator[Any]:
    """A ``RecommendationWriter`` of ``path``, published when the block
    ends without an error.

    Holds ``path``'s lock (``target_lock``) throughout; the file is
    written in a marked staging folder beside ``path`` and linked (or
    renamed) into place, never over an existing file. On any error or
    interruption the staging folder is removed and ``path`` does not
    appear.

    Args:
        path: str. The file to publish.
        file_format: str. A key of ``FORMATS``.

    Raises:
        OutputError: ``path`` appeared meanwhile (nothing is replaced);
            another process holds its lock (``TargetBusyError``).
    """
    real = os.path.realpath(path)
    with target_lock(path, RECOMMENDATIONS):
        parent, name = os.path.split(real)
        staging = tempfile.mkdtemp(
            prefix=f".{name}.", suffix=".tmp", dir=parent
        )
        try:
            ownership.mark_staging(staging, real)
            writer = FORMATS[file_format](os.path.join(staging, name))
            try:
                yield writer
            finally:
                writer.close()
            _publish(writer.path, real, path)
        finally:
            ownership.remove_staging(staging)


def _publish(staged: str, real: str, shown: str) -> None:
    """Links ``staged`` to ``real`` (a rename where links are not
    supported), refusing an existing ``real``."""
    try:
        os.link(staged, real)
        return
    except FileExistsError:
        raise OutputError(
            f"{shown!r} appeared while the recommendations were written; it "
            "is never replaced: choose another --output."
        ) from None
    except OSError as error:
        if error.errno not in (errno.EPERM, errno.ENOTSUP, errno.EXDEV):
            raise
    if os.path.lexists(real):
        raise OutputError(
            f"{shown!r} appeared while the recommendations were written; it "
            "is never replaced: choose another --output."
        )
    os.rename(staged, real)
