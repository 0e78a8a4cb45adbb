"""Preparing a dataset on disk with Apache Beam (``engine="beam"``).

``prepare_with_beam`` writes the same prepared folder (``prepared_format``)
as the local engine, ``write_prepared(user_sequences(...))``: the same
``vocabulary.json`` byte for byte, the same user records (spread over the
shards differently), the same statistics (moments up to the order in which
floating-point sums are added) and the same split histograms in
``metadata.json``. It follows the id rules of ``user_sequences``:

1. each input file is read by one worker with ``read_records``; a row keeps
   ``(file index, line)``, its place in file order. Several files are one
   table, as ``load_source`` concatenates them: timestamps are kept when
   every file has them, numeric columns when every file has them. A glob's
   matches are read in natural order (``part-2`` before ``part-10``).
   With timestamps, rows that repeat an earlier row exactly are counted
   and, with ``drop_duplicates``, dropped: the first in file order is
   kept, as ``read_encoded`` does;
2. the k-core filter: the item bound and the user bound applied in turn,
   ``filter_rounds`` times when both are active (once when only one is,
   which is then final). The result must be stable (every item and user
   within the bounds): if it is not, preparation fails and names
   ``filter_rounds``, to raise;
3. users are ranked by their first kept ``(file index, line)``;
4. a user's rows are sorted by ``(time, file index, line)`` (by
   ``(file index, line)`` without timestamps); items are ranked by their
   first ``(user index, position)`` and numbered from 1;
5. each user becomes one ``tf.train.Example`` (``user_example``), written
   to ``num_shards`` TFRecord shards; training statistics and split counts
   are computed per batch of users and merged.

The two rankings collect ``(id, first place)`` pairs on one worker, as
tf.Transform computes its vocabularies; every worker then holds the item
vocabulary (a dict of raw id to contiguous id) as a side input.

Runners:
    The default runner is Beam's ``DirectRunner`` (this machine). Pass
    ``pipeline_args`` to run the same pipeline elsewhere, e.g. on Dataflow::

        prepare_with_beam(
            ["gs://bucket/interactions/*.tsv"],
            "/mnt/shared/prepared",
            {"max_len": 50, "split": "recbole"},
            pipeline_args=[
                "--runner=DataflowRunner", "--project=my-project",
                "--region=europe-west1",
                "--temp_location=gs://bucket/tmp",
                "--setup_file=./setup.py",  # installs tfrec_tricks
            ],
        )

    or ``--runner=FlinkRunner --flink_master=host:8081`` and
    ``--runner=SparkRunner --spark_master_url=spark://host:7077`` with
    ``--environment_type`` as those runners need. The workers must be able
    to import ``tfrec_tricks`` (``--setup_file``, ``--extra_package`` or a
    custom container). Inputs may be on any Beam file system (``gs://``,
    ``s3://``, ...). The output is staged in a sibling folder of
    ``output`` (``.<name>-<random>``), written by the workers and then
    finished and renamed by this process: with a remote runner ``output``
    must be on a file system that both the workers and this process mount
    as the same path (NFS, a GCS FUSE mount, ...).

Example:

>>> import os, tempfile
>>> folder = tempfile.mkdtemp()
>>> path = os.path.join(folder, "seq.txt")
>>> with open(path, "w") as handle:
...     _ = handle.write("".join(f"u{u} i{(u + i) % 5}\\n"
...                              for u in range(4) for i in range(4)))
>>> output = prepare_with_beam(
...     [path], os.path.join(folder, "prepared"),
...     {"max_len": 3, "split": "recbole"}, file_format="sasrec")
>>> from tfrec_tricks.data.on_disk_dataset import OnDiskDataset
>>> OnDiskDataset(output).vocabulary.users
['u0', 'u1', 'u2', 'u3']
"""

import contextlib
import json
import logging
import os
import re
import shutil
import struct
import tempfile
import traceback
from collections.abc import Callable, Iterable, Iterator

import apache_beam as beam
import numpy as np
from apache_beam.io.filesystem import BeamIOError, CompressionTypes
from apache_beam.io.filesystems import FileSystems
from apache_beam.options.pipeline_options import (
    PipelineOptions,
    StandardOptions,
)
from apache_beam.runners.runner import PipelineState

from tfrec_tricks.atomic_files import publish_directory
from tfrec_tricks.data import prepared_format as fmt
from tfrec_tricks.data.encoded_interactions import DuplicateRows
from tfrec_tricks.data.loaders import (
    is_pipe,
    natural_sort_key,
    read_records,
    readable_file,
)
from tfrec_tricks.data.preparation import Vocabulary
from tfrec_tricks.data.statistics import TrainingStatistics, training_statistics
from tfrec_tricks.data.user_sequences import (
    PADDING,
    SPLITS,
    TIME_GAP,
    UserSequences,
    check_split,
    split_positions,
)
from tfrec_tricks.data.write_prepared import (
    merge_split_counts,
    split_counts,
    write_dataset_files,
)
from tfrec_tricks.errors import DataError

# Shards when ``num_shards`` is not given: the interaction count that
# ``default_num_shards`` scales with is known only after the pipeline.
DEFAULT_NUM_SHARDS = 4
# Rounds of the k-core filter when both bounds are active.
FILTER_ROUNDS = 8
# Users per batch whose statistics are computed at once, then merged.
STATISTICS_BATCH = 1024
DEFAULT_RUNNER = "DirectRunner"

# The pipeline's small outputs, read back by this process, then removed.
_SIDE_FOLDER = "_beam"
_VOCABULARY = "vocabulary.json"
_SUMMARY = "summary.json"
_SHARD_TEMPLATE = "-SSSSS-of-NNNNN"  # what ``fmt.shard_name`` gives

# A row: where it is in file order, then what it says.
_FILE, _LINE, _USER, _ITEM, _TIME, _NUMERIC, _OTHER = range(7)

# A DataError raised on a worker crosses the runner wrapped in its
# traceback: these marks let the driver find the message again.
_ERROR_OPEN = "<<tfrec_tricks.DataError|"
_ERROR_CLOSE = "|tfrec_tricks.DataError>>"
_MARKED_ERROR = re.compile(
    re.escape(_ERROR_OPEN) + "(.*?)" + re.escape(_ERROR_CLOSE), re.DOTALL
)


def prepare_with_beam(
    inputs: list[str],
    output: str,
    options: dict,
    file_format: str = "auto",
    num_shards: int | None = None,
    overwrite: bool = False,
    pipeline_args: list[str] | None = None,
    filter_rounds: int = FILTER_ROUNDS,
    report: Callable[[str], None] | None = None,
) -> str:
    """Prepares interaction files into a dataset folder with Apache Beam.

    Args:
        inputs: list of str. Files or glob patterns, on any Beam file
            system. The table is the files in this order, each pattern's
            matches in natural order (``loaders.natural_sort_key``).
        output: str. The prepared folder; staged aside and renamed when
            complete.
        options: dict. ``max_len`` (required), ``split`` (a key of
            ``SPLITS``, default "recbole"), ``min_user_interactions``
            (default 1), ``min_item_interactions`` (default 0) and
            ``numeric_features`` (default True), as for
            ``user_sequences``; ``drop_duplicates`` (default True), as for
            ``read_encoded``. Stored in ``metadata.json`` as given,
            with any other keys (e.g. ``source``, named in errors).
        file_format: str. One of ``loaders.FORMATS``, or "auto" (guessed
            per file). Defaults to "auto".
        num_shards: int. TFRecord shards. Defaults to
            ``DEFAULT_NUM_SHARDS``.
        overwrite: bool. Replace an existing ``output``. Defaults to
            False.
        pipeline_args: list of str. Beam pipeline options (``--runner``,
            ``--project``, ...); the runner defaults to DirectRunner.
        filter_rounds: int. Rounds of the k-core filter when both
            bounds are active. Defaults to ``FILTER_ROUNDS``.
        report: called with each line the user should read (the exact
            duplicate rows found, ``DuplicateRows.message``). Defaults to
            None (nothing reported).

    Returns:
        ``output``.

    Raises:
        FileExistsError: ``output`` exists and ``overwrite`` is False
            (checked before the pipeline runs).
        DataError: a pattern matches no file, a line is malformed (the
            message names the file and the line), nothing is left after
            filtering, there are no validation or test examples, or the
            filter did not settle in ``filter_rounds`` rounds.
        ValueError: an option is out of range.
    """
    if isinstance(inputs, str):
        raise ValueError(
            "inputs must be a list of files or glob patterns. Received: "
            f"inputs={inputs!r}"
        )
    config = _Config.from_options(options, num_shards, filter_rounds)
    if os.path.exists(output) and not overwrite:
        raise FileExistsError(
            f"{output!r} already exists; pass --overwrite to replace it."
        )
    paths = match_inputs(inputs)
    source = str(options.get("source") or ", ".join(inputs))

    def write(staging: str) -> None:
        staging = os.path.abspath(staging)
        side = os.path.join(staging, _SIDE_FOLDER)
        pipeline = beam.Pipeline(options=_pipeline_options(pipeline_args))
        _build(pipeline, paths, file_format, config, staging, side)
        _run(pipeline)
        vocabulary = Vocabulary(**json.loads(_read_text(side, _VOCABULARY)))
        summary = json.loads(_read_text(side, _SUMMARY))
        shutil.rmtree(side, ignore_errors=True)
        _check_summary(summary, config, source, filter_rounds)
        duplicates = _duplicate_rows(summary["duplicates"], paths, config)
        if duplicates is not None and report is not None:
            report(duplicates.message())
        shard_users = {
            name: _count_records(os.path.join(staging, name))
            for name in _check_shards(staging, config.num_shards)
        }
        statistics = TrainingStatistics.from_dict(summary["statistics"])
        counts = np.zeros(vocabulary.num_items, np.int64)
        counts[: len(statistics.item_counts)] = statistics.item_counts
        statistics.item_counts = counts
        write_dataset_files(
            staging,
            vocabulary,
            statistics,
            summary["split_counts"],
            options,
            summary["feature_names"],
            summary["interactions"],
            "beam",
            shard_users=shard_users,
        )

    return publish_directory(
        output, write, replace=overwrite, kind=fmt.PREPARED_KIND
    )


def match_inputs(inputs: list[str]) -> list[str]:
    """The files of ``inputs``: in order, each pattern's matches sorted.

    Raises:
        DataError: no input is given, or a pattern matches no file.
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


class _Config:
    """The checked preparation options the pipeline needs."""

    def __init__(
        self,
        max_len: int,
        split: str,
        min_user: int,
        min_item: int,
        numeric_features: bool,
        num_shards: int,
        filter_rounds: int,
        drop_duplicates: bool = True,
    ):
        self.max_len = max_len
        self.split = split
        self.min_user = min_user
        self.min_item = min_item
        self.numeric_features = numeric_features
        self.num_shards = num_shards
        self.filter_rounds = filter_rounds
        self.drop_duplicates = drop_duplicates

    @classmethod
    def from_options(
        cls, options: dict, num_shards: int | None, filter_rounds: int
    ) -> "_Config":
        if "max_len" not in options:
            raise ValueError(
                "options must hold max_len. Received: options keys "
                f"{sorted(options)}"
            )
        split = options.get("split", "recbole")
        check_split(split)
        min_user = int(options.get("min_user_interactions", 1))
        if min_user < 1:
            raise ValueError(
                "min_user_interactions must be at least 1. Received: "
                f"min_user_interactions={min_user}"
            )
        if split == "every-user":
            min_user = max(min_user, SPLITS[split][0])
        num_shards = DEFAULT_NUM_SHARDS if num_shards is None else num_shards
        if num_shards <= 0:
            raise ValueError(
                f"num_shards must be positive. Received: {num_shards}"
            )
        if filter_rounds < 1:
            raise ValueError(
                "filter_rounds must be at least 1. Received: "
                f"filter_rounds={filter_rounds}"
            )
        return cls(
            max_len=int(options["max_len"]),
            split=split,
            min_user=min_user,
            min_item=int(options.get("min_item_interactions", 0)),
            numeric_features=bool(options.get("numeric_features", True)),
            num_shards=num_shards,
            filter_rounds=filter_rounds,
            drop_duplicates=bool(options.get("drop_duplicates", True)),
        )


def _pipeline_options(pipeline_args: list[str] | None) -> PipelineOptions:
    options = PipelineOptions(list(pipeline_args or []))
    standard = options.view_as(StandardOptions)
    standard.runner = standard.runner or DEFAULT_RUNNER
    return options


class _QuietDataErrors(logging.Filter):
    """Drops Beam's log record (with a traceback) of a worker's DataError:
    ``_run`` raises it again, as the message the user reads."""

    def filter(self, record: logging.LogRecord) -> bool:
        return _ERROR_OPEN not in record.getMessage()


# Where Beam logs the exception of a DoFn, before the runner re-raises it.
_DOFN_ERROR_LOGGER = "apache_beam.runners.common"


def _run(pipeline: beam.Pipeline) -> None:
    """Runs ``pipeline``; a worker's DataError comes back as itself."""
    quiet = _QuietDataErrors()
    logging.getLogger(_DOFN_ERROR_LOGGER).addFilter(quiet)
    try:
        state = pipeline.run().wait_until_finish()
    except Exception as error:
        message = _marked_message(error)
        if message is None:
            raise
        raise DataError(message) from None
    finally:
        logging.getLogger(_DOFN_ERROR_LOGGER).removeFilter(quiet)
    if state is not None and state != PipelineState.DONE:
        raise RuntimeError(f"The Beam pipeline ended in state {state}.")


def _marked_message(error: BaseException) -> str | None:
    """The first marked DataError message in ``error`` or its chain."""
    text = "".join(traceback.format_exception(error))
    found = _MARKED_ERROR.search(text)
    return found.group(1) if found else None


def _read_text(folder: str, name: str) -> str:
    with FileSystems.open(os.path.join(folder, name)) as handle:
        return handle.read().decode("utf-8")


def _check_summary(
    summary: dict, config: _Config, source: str, filter_rounds: int
) -> None:
    """The errors ``user_sequences`` raises, from the pipeline's counts."""
    if not summary["rows"]:
        raise DataError(f"No interactions in {source}: the files are empty.")
    if summary["unsettled_items"]:
        raise DataError(
            f"The k-core filter of {source} did not settle in "
            f"filter_rounds={filter_rounds} rounds: "
            f"{summary['unsettled_items']:,} items still have fewer than "
            f"min_item_interactions={config.min_item} interactions. Pass a "
            "larger filter_rounds to prepare_with_beam."
        )
    if not summary["users"]:
        raise DataError(
            f"No interactions left in {source} after filtering with "
            f"min_user_interactions={config.min_user}, "
            f"min_item_interactions={config.min_item}."
        )
    test_from, validation_from = SPLITS[config.split]
    for name, needed in (
        ("validation", validation_from),
        ("test", test_from),
    ):
        if not summary[f"{name}_users"]:
            raise DataError(
                f"No {name} examples in {source}: with "
                f"split={config.split!r} a user gives one from {needed} "
                f"interactions on, and the longest of the "
                f"{summary['users']:,} users has {summary['longest']}."
            )


def _check_shards(folder: str, num_shards: int) -> list[str]:
    """The shard names; creates those Beam left out (empty), refuses others."""
    expected = {fmt.shard_name(i, num_shards) for i in range(num_shards)}
    written = {f for f in os.listdir(folder) if f.endswith(".tfrecord")}
    if written - expected:
        raise RuntimeError(
            f"Beam wrote shards named {sorted(written - expected)}; expected "
            f"names like {fmt.shard_name(0, num_shards)!r}."
        )
    for name in expected - written:
        open(os.path.join(folder, name), "wb").close()
    return sorted(expected)


def _count_records(path: str) -> int:
    """The records of a TFRecord file, from their length headers."""
    count = 0
    with open(path, "rb") as handle:
        while header := handle.read(8):
            (length,) = struct.unpack("<Q", header)
            # The header's CRC, the record, the record's CRC.
            handle.seek(4 + length + 4, os.SEEK_CUR)
            count += 1
    return count


# --- the pipeline -----------------------------------------------------------


def _build(
    pipeline: beam.Pipeline,
    paths: list[str],
    file_format: str,
    config: _Config,
    staging: str,
    side: str,
) -> None:
    """Adds the preparation's transforms to ``pipeline``.

    The steps of the module docstring, in order: read the files, count
    (and drop) exact duplicates, apply the k-core filter, rank the users
    and sort each user's rows, rank the items and encode each user, write
    the shards, summarize the users, then write the vocabulary and the
    summary to ``side``.
    """
    rows, schema, rows_read = _read_files(pipeline, paths, file_format)
    rows, duplicates = _drop_duplicate_rows(rows, schema, config)
    kept, unsettled_items = _k_core(rows, config)
    user_ranking, sequences = _user_sequences(kept, schema, config)
    item_ranking, encoded = _encoded_users(sequences, config)
    _write_shards(encoded, staging, config)
    summary = _summarize(encoded, config)
    one = pipeline | "One" >> beam.Create([None])
    _write_vocabulary(one, side, user_ranking, item_ranking)
    _write_summary(one, side, summary, rows_read, unsettled_items, duplicates)


def _read_files(pipeline: beam.Pipeline, paths: list[str], file_format: str):
    """Reads every file on one worker each.

    Returns:
        The rows, the schema (a singleton side input, see ``_schema``) and
        a singleton PCollection: how many rows were read.
    """
    # A pipe can be read once: this process copies it to a local file
    # (``readable_file``) that the workers read in its place.
    copies = {path: readable_file(path) for path in paths if is_pipe(path)}
    read = (
        pipeline
        | "Files" >> beam.Create(list(enumerate(paths)))
        | "SpreadFiles" >> beam.Reshuffle()
        | "Read"
        >> beam.ParDo(_ReadFile(file_format, copies)).with_outputs(
            _ReadFile.COLUMNS, main="rows"
        )
    )
    schema = beam.pvalue.AsSingleton(
        read[_ReadFile.COLUMNS]
        | "AllColumns" >> beam.combiners.ToList()
        | "Schema" >> beam.Map(_schema)
    )
    rows_read = read.rows | "CountRead" >> beam.combiners.Count.Globally()
    return read.rows, schema, rows_read


def _drop_duplicate_rows(rows, schema, config: _Config):
    """Counts exact duplicates (with timestamps) and, if asked, drops them.

    Returns:
        The rows (with ``config.drop_duplicates``, only the first of each
        group of exact duplicates), and a singleton PCollection: the
        ``_merge_duplicates`` result.
    """
    same_rows = (
        rows
        | "DuplicateKeys" >> beam.Map(_duplicate_key, schema)
        | "GroupDuplicates" >> beam.GroupByKey()
    )
    unique = same_rows | "DropDuplicates" >> beam.FlatMap(
        _unique_rows, config.drop_duplicates
    )
    duplicates = (
        same_rows
        | "DuplicatePlaces" >> beam.FlatMap(_duplicate_places)
        | "FirstDuplicate" >> beam.CombineGlobally(_merge_duplicates)
    )
    return unique, duplicates


def _user_sequences(kept, schema, config: _Config):
    """Ranks the users by their first kept row in file order; sorts each
    user's rows.

    Returns:
        A singleton PCollection of the ranked user names, and one
        ``_sort_user`` result per user.
    """
    user_ranking = (
        kept
        | "UserFirstRow" >> beam.Map(lambda r: (r[_USER], (r[_FILE], r[_LINE])))
        | "UserFirst" >> beam.CombinePerKey(min)
        | "AllUserFirsts" >> beam.combiners.ToList()
        | "RankUsers" >> beam.Map(_ranked)
    )
    user_index = user_ranking | "UserIndex" >> beam.FlatMap(
        lambda names: ((name, index) for index, name in enumerate(names))
    )
    sequences = (
        {
            "rows": kept | "ByUser" >> beam.Map(lambda r: (r[_USER], r)),
            "index": user_index,
        }
        | "GroupUsers" >> beam.CoGroupByKey()
        | "SortUser" >> beam.Map(_sort_user, schema, config.numeric_features)
    )
    return user_ranking, sequences


def _encoded_users(sequences, config: _Config):
    """Ranks the items by their first ``(user index, position)``, numbers
    them from 1 and encodes each user with those numbers.

    Returns:
        A singleton PCollection of the ranked item names, and one
        ``_encode_user`` result per user.
    """
    item_ranking = (
        sequences
        | "ItemFirstPlaces" >> beam.FlatMap(_first_places)
        | "ItemFirst" >> beam.CombinePerKey(min)
        | "AllItemFirsts" >> beam.combiners.ToList()
        | "RankItems" >> beam.Map(_ranked)
    )
    item_ids = beam.pvalue.AsSingleton(
        item_ranking
        | "ItemIds"
        >> beam.Map(lambda names: {name: i + 1 for i, name in enumerate(names)})
    )
    encoded = sequences | "Encode" >> beam.Map(
        _encode_user, item_ids, config.split
    )
    return item_ranking, encoded


def _write_shards(encoded, staging: str, config: _Config) -> None:
    """Writes the users' examples to ``config.num_shards`` TFRecord shards."""
    _ = (
        encoded
        | "Examples" >> beam.Map(lambda user: user[0])
        | "WriteShards"
        >> beam.io.WriteToTFRecord(
            os.path.join(staging, "sequences"),
            file_name_suffix=".tfrecord",
            num_shards=config.num_shards,
            shard_name_template=_SHARD_TEMPLATE,
            compression_type=CompressionTypes.UNCOMPRESSED,
        )
    )


def _summarize(encoded, config: _Config):
    """A singleton PCollection: the ``_SummaryFn`` output of all users."""
    return (
        encoded
        | "SummaryInputs" >> beam.Map(lambda user: user[1])
        | "Summarize" >> beam.CombineGlobally(_SummaryFn(config.max_len))
    )


def _write_vocabulary(one, side: str, user_ranking, item_ranking) -> None:
    """Writes the two rankings as ``vocabulary.json`` into ``side``."""
    _write_single(
        one
        | "VocabularyJson"
        >> beam.Map(
            _vocabulary_json,
            beam.pvalue.AsSingleton(user_ranking),
            beam.pvalue.AsSingleton(item_ranking),
        ),
        os.path.join(side, _VOCABULARY),
        "Vocabulary",
    )


def _write_summary(
    one, side: str, summary, rows_read, unsettled_items, duplicates
) -> None:
    """Writes the summary and the pipeline's counts into ``side``."""
    _write_single(
        one
        | "SummaryJson"
        >> beam.Map(
            _summary_json,
            beam.pvalue.AsSingleton(summary),
            beam.pvalue.AsSingleton(rows_read),
            beam.pvalue.AsSingleton(unsettled_items),
            beam.pvalue.AsSingleton(duplicates),
        ),
        os.path.join(side, _SUMMARY),
        "Summary",
    )


def _write_single(texts, path: str, label: str) -> None:
    """Writes a PCollection of one string to the file ``path``."""
    _ = texts | f"Write{label}" >> beam.io.WriteToText(
        path, shard_name_template="", num_shards=1
    )


def _k_core(rows, config: _Config):
    """The k-core filter, unrolled; and a count of items still too rare.

    Returns:
        The kept rows, and a singleton PCollection: how many items have
        fewer than the item bound among them (0 when the filter settled;
        after a user pass every user is within its bound).
    """
    bounds = [
        (name, key, bound)
        for name, key, bound in (
            ("Items", _ITEM, config.min_item),
            ("Users", _USER, config.min_user),
        )
        if bound > 1
    ]
    rounds = config.filter_rounds if len(bounds) == 2 else 1
    for round_index in range(rounds if bounds else 0):
        for name, key, bound in bounds:
            rows = rows | f"Filter{name}{round_index}" >> _FilterRare(
                key, bound
            )
    if len(bounds) < 2:
        pipeline = rows.pipeline
        return rows, pipeline | "NothingUnsettled" >> beam.Create([0])
    min_item = config.min_item
    unsettled = (
        rows
        | "FinalItemRows" >> beam.Map(lambda r: (r[_ITEM], 1))
        | "FinalItemCounts" >> beam.CombinePerKey(sum)
        | "TooRare" >> beam.Filter(lambda kv: kv[1] < min_item)
        | "CountTooRare" >> beam.combiners.Count.Globally()
    )
    return rows, unsettled


class _FilterRare(beam.PTransform):
    """Drops the rows whose ``key`` column value has fewer than ``bound``."""

    def __init__(self, key: int, bound: int):
        super().__init__()
        self.key = key
        self.bound = bound

    def expand(self, rows):
        key, bound = self.key, self.bound
        return (
            rows
            | "Key" >> beam.Map(lambda r: (r[key], r))
            | "Group" >> beam.GroupByKey()
            | "Keep" >> beam.FlatMap(_keep_frequent, bound)
        )


def _keep_frequent(group: tuple, bound: int) -> Iterable[tuple]:
    """A group's rows if there are at least ``bound`` of them, else none."""
    _, rows = group
    # Counts up to ``bound`` only; a grouped iterable can be read again.
    for count, _ in enumerate(rows, start=1):
        if count >= bound:
            return rows
    return ()


class _ReadFile(beam.DoFn):
    """Reads one ``(file index, path)``: its rows, and its columns.

    ``copies`` maps a pipe's path to the local copy to read instead;
    messages name the path.
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
                        (file_index, columns.has_time, columns.numeric),
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
                        )
                except DataError as error:
                    message = str(error).replace(local, path)
                    raise DataError(message) from None
        except DataError as error:
            raise DataError(f"{_ERROR_OPEN}{error}{_ERROR_CLOSE}") from None


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


def _schema(columns: list[tuple[int, bool, tuple[str, ...]]]) -> dict:
    """The kept columns of all files, as ``read_encoded`` keeps them.

    Returns:
        ``has_time``: every file has timestamps; ``numeric``: the numeric
        columns every file has, sorted; ``slots``: for each file index,
        where those columns are in its records' ``numeric``.
    """
    if not columns:
        return {"has_time": False, "numeric": [], "slots": {}}
    names = sorted(set.intersection(*(set(c[2]) for c in columns)))
    return {
        "has_time": all(c[1] for c in columns),
        "numeric": names,
        "slots": {c[0]: [c[2].index(n) for n in names] for c in columns},
    }


def _duplicate_key(row: tuple, schema: dict) -> tuple[str, tuple]:
    """``(key, row)``: rows with equal keys are exact duplicates. Without
    timestamps no two rows are (identical lines are repeats in time
    order)."""
    if schema["has_time"]:
        # + 0.0: -0.0 and 0.0 are one value, as NumPy compares them.
        numeric = [value + 0.0 for value in row[_NUMERIC]]
        time = row[_TIME] + 0.0
        fields = row[_USER], row[_ITEM], time, numeric, row[_OTHER]
    else:
        fields = row[_FILE], row[_LINE]
    return json.dumps(fields), row


def _unique_rows(group: tuple, drop: bool) -> Iterable[tuple]:
    """The rows of a group of exact duplicates: all, or with ``drop`` the
    first in file order."""
    _, rows = group
    if not drop:
        return rows
    return [min(rows, key=lambda r: (r[_FILE], r[_LINE]))]


def _duplicate_places(group: tuple) -> Iterator[tuple]:
    """``(count, first duplicate's place, its original's place)`` of a
    group of exact duplicates, when it has more than one row."""
    _, rows = group
    places = sorted((r[_FILE], r[_LINE]) for r in rows)
    if len(places) > 1:
        yield len(places) - 1, places[1], places[0]


def _merge_duplicates(counts: Iterable[tuple]) -> tuple:
    """Sums the counts; keeps the places of the first duplicate."""
    counts = [c for c in counts if c[0]]
    if not counts:
        return 0, None, None
    first = min(counts, key=lambda c: tuple(c[1]))
    return sum(c[0] for c in counts), first[1], first[2]


def _duplicate_rows(
    found: list, paths: list[str], config: _Config
) -> DuplicateRows | None:
    """The pipeline's ``_merge_duplicates`` result, for the user."""
    count, first, original = found
    if not count:
        return None
    return DuplicateRows(
        count,
        f"{paths[first[0]]}:{first[1]}",
        f"{paths[original[0]]}:{original[1]}",
        config.drop_duplicates,
    )


def _ranked(firsts: list[tuple[str, tuple]]) -> list[str]:
    """Names in order of their first place."""
    return [name for name, _ in sorted(firsts, key=lambda kv: kv[1])]


def _sort_user(
    grouped: tuple[str, dict], schema: dict, numeric_features: bool
) -> tuple[int, list[str], dict[str, np.ndarray]]:
    """One user's rows in time order: index, raw items and features."""
    _, parts = grouped
    (index,) = parts["index"]
    rows = list(parts["rows"])
    has_time = schema["has_time"]
    if has_time:
        rows.sort(key=lambda r: (r[_TIME], r[_FILE], r[_LINE]))
    else:
        rows.sort(key=lambda r: (r[_FILE], r[_LINE]))
    features = {}
    if numeric_features:
        if has_time:
            times = np.array([r[_TIME] for r in rows], np.float64)
            gap = np.empty(len(rows), np.float32)
            gap[1:] = np.diff(times)
            gap[0] = np.nan
            features[TIME_GAP] = gap
        slots = schema["slots"]
        for k, name in enumerate(schema["numeric"]):
            features[name] = np.array(
                [r[_NUMERIC][slots[r[_FILE]][k]] for r in rows], np.float32
            )
    return index, [r[_ITEM] for r in rows], features


def _first_places(user: tuple) -> Iterator[tuple[str, tuple[int, int]]]:
    """``(item, (user index, position))`` of each item's first in ``user``."""
    index, items, _ = user
    seen = set()
    for position, item in enumerate(items):
        if item not in seen:
            seen.add(item)
            yield item, (index, position)


def _encode_user(user: tuple, item_ids: dict[str, int], split: str) -> tuple:
    """A user's serialized example, and what the summary needs of it."""
    index, names, features = user
    items = np.fromiter((item_ids[n] for n in names), np.int32, len(names))
    validation, test = (int(p) for p in split_positions(len(items), split))
    example = fmt.user_example(index, items, validation, test, features)
    return example, (items, features, validation, test)


class _SummaryFn(beam.CombineFn):
    """Statistics, split counts and sizes of all users, batch by batch.

    A user is ``(items, features, validation_position, test_position)``.
    Users are buffered and folded ``batch_size`` at a time into
    ``training_statistics`` and ``split_counts`` (both merge across
    disjoint sets of users).
    """

    def __init__(self, max_len: int, batch_size: int = STATISTICS_BATCH):
        super().__init__()
        self.max_len = max_len
        self.batch_size = batch_size

    def create_accumulator(self) -> dict:
        return {
            "pending": [],
            "statistics": None,
            "split_counts": [],
            "users": 0,
            "interactions": 0,
            "longest": 0,
            "validation_users": 0,
            "test_users": 0,
            "feature_names": [],
        }

    def add_input(self, accumulator: dict, user: tuple) -> dict:
        accumulator["pending"].append(user)
        if len(accumulator["pending"]) >= self.batch_size:
            self._fold(accumulator)
        return accumulator

    def merge_accumulators(self, accumulators: Iterable[dict]) -> dict:
        # Reads the accumulators without changing them.
        merged = self.create_accumulator()
        for accumulator in accumulators:
            merged["pending"].extend(accumulator["pending"])
            merged["statistics"] = _merge_statistics(
                merged["statistics"], accumulator["statistics"]
            )
            merged["split_counts"] = [
                merge_split_counts(
                    merged["split_counts"] + accumulator["split_counts"]
                )
            ]
            for name in (
                "users",
                "interactions",
                "validation_users",
                "test_users",
            ):
                merged[name] += accumulator[name]
            merged["longest"] = max(merged["longest"], accumulator["longest"])
            merged["feature_names"] = (
                merged["feature_names"] or accumulator["feature_names"]
            )
        if len(merged["pending"]) >= self.batch_size:
            self._fold(merged)
        return merged

    def compact(self, accumulator: dict) -> dict:
        self._fold(accumulator)
        return accumulator

    def extract_output(self, accumulator: dict) -> dict:
        self._fold(accumulator)
        statistics = accumulator["statistics"] or TrainingStatistics(
            np.zeros(0, np.int64), {}
        )
        return {
            "statistics": statistics.to_dict(),
            "split_counts": merge_split_counts(accumulator["split_counts"]),
            **{
                name: accumulator[name]
                for name in (
                    "users",
                    "interactions",
                    "longest",
                    "validation_users",
                    "test_users",
                    "feature_names",
                )
            },
        }

    def _fold(self, accumulator: dict) -> None:
        """Folds the pending users into the statistics and counts."""
        users = accumulator["pending"]
        if not users:
            return
        accumulator["pending"] = []
        lengths = np.array([len(u[0]) for u in users], np.int64)
        names = list(users[0][1])
        sequences = UserSequences(
            item_names=[],
            user_names=[],
            items=np.concatenate([u[0] for u in users]),
            starts=np.r_[0, np.cumsum(lengths)[:-1]].astype(np.int64),
            lengths=lengths,
            features={
                n: np.concatenate([u[1][n] for u in users]) for n in names
            },
            validation_positions=np.array([u[2] for u in users], np.int64),
            test_positions=np.array([u[3] for u in users], np.int64),
        )
        statistics = training_statistics(
            sequences, self.max_len, num_items=int(sequences.items.max()) + 1
        )
        accumulator["statistics"] = _merge_statistics(
            accumulator["statistics"], statistics
        )
        accumulator["split_counts"] = [
            merge_split_counts(
                accumulator["split_counts"]
                + [
                    split_counts(
                        sequences.train_ends,
                        sequences.validation_positions,
                        sequences.test_positions,
                    )
                ]
            )
        ]
        accumulator["users"] += len(users)
        accumulator["interactions"] += int(lengths.sum())
        accumulator["longest"] = max(accumulator["longest"], int(lengths.max()))
        accumulator["validation_users"] += int(
            (sequences.validation_positions >= 0).sum()
        )
        accumulator["test_users"] += int((sequences.test_positions >= 0).sum())
        accumulator["feature_names"] = names


def _merge_statistics(
    first: TrainingStatistics | None, second: TrainingStatistics | None
) -> TrainingStatistics | None:
    if first is None:
        return second
    if second is None:
        return first
    return first.merge(second)


def _vocabulary_json(_, users: list[str], items: list[str]) -> str:
    return json.dumps({"items": [PADDING] + items, "users": users})


def _summary_json(
    _, summary: dict, rows: int, unsettled_items: int, duplicates: tuple
) -> str:
    return json.dumps(
        {
            **summary,
            "rows": rows,
            "unsettled_items": unsettled_items,
            "duplicates": duplicates,
        }
    )
