"""``tfrec-tricks recommend --engine beam``: the lists by an Apache Beam
pipeline, from the SavedModel TF Serving serves.

``recommend_with_beam(job, output, file_format)`` writes the rows a
``RecommendationJob`` gives (the local engine's rows: the same users,
ranks, items, and scores within float32 rounding) with Apache Beam:

1. the model: the run exported (``export_for_serving``) into a temporary
   folder, or ``saved_model``, an exported version folder (checked
   against the run: made from its model, ``beam_model_handler.
   check_saved_model``);
2. the users' whole histories, one ``UserRequest`` each: the job's
   histories in memory (the run's data, or new users' histories) through
   ``beam.Create`` of batches, or, for a run trained on a prepared
   dataset, its TFRecord shards read by the workers (``PreparedUsers``);
   both after the job's ``users`` filter;
3. ``RunInference`` with ``RecommendationModelHandler``: each worker
   loads the SavedModel with ``tf.saved_model.load`` and ranks batches of
   ``job.batch_size`` users through its ``recommend_filtered`` (or, with
   an allow-list, ``score_candidates``) signature, with the local
   engine's requests and filters (``local_engine.ServedLists``);
4. the lists in frames of ``job.batch_size`` users (a write of a shard,
   and a Parquet row group: frames are spread over the shards), written as
   shards ``part-SSSSS-of-NNNNN.<csv|jsonl|parquet>`` of ``output``, a
   folder: CSV shards each with the header line, JSON Lines, or Parquet
   (the local writers' formats, ``writers``). A shard holds whole users,
   each user's rows by rank; users are in no particular order.

``output`` is written under its lock (``target_lock``) in a marked
staging folder beside it and renamed when complete
(``atomic_files.publish_directory``): an error or Ctrl-C leaves nothing;
an existing ``output`` is refused, never replaced.

Runners:
    The DirectRunner runs the pipeline here; ``pipeline_args`` choose
    another runner (``--runner DataflowRunner --project P ...``,
    ``--runner FlinkRunner``, ``--runner SparkRunner``), as for
    ``prepare --engine beam`` (``data.beam.prepare_with_beam``). The workers
    must import ``tfrec_tricks`` and read the SavedModel: with a remote
    runner give ``saved_model`` on storage they read (``gs://...``), as
    the temporary export is on this machine; and ``output`` must be on a
    file system both the workers and this process mount as the same path
    (this process renames it into place).

Needs Apache Beam: ``pip install "tfrec_tricks[beam]"``.
"""

import contextlib
import dataclasses
import json
import os
import re
import shutil
import tempfile
from collections.abc import Iterator, Sequence

import numpy as np
import pandas as pd
import tensorflow as tf

from tfrec_tricks.atomic_files import publish_directory
from tfrec_tricks.data.prepared import format as fmt
from tfrec_tricks.export.export_for_serving import export_for_serving
from tfrec_tricks.output_folders import TargetKind, target_lock
from tfrec_tricks.recommendation.beam_model_handler import (
    RecommendationModelHandler,
    UserRequest,
    check_saved_model,
    lists_frame,
    missing_beam,
)
from tfrec_tricks.recommendation.job import RecommendationJob
from tfrec_tricks.recommendation.local_engine import COLUMNS
from tfrec_tricks.recommendation.user_histories import (
    PreparedHistories,
    item_remap,
)
from tfrec_tricks.recommendation.writers import check_output

try:
    import apache_beam as beam
    from apache_beam.ml.inference.base import RunInference

    from tfrec_tricks.data.beam.outputs import SIDE_FOLDER, read_side_file
    from tfrec_tricks.data.beam.runner import pipeline_options, run_pipeline
except ImportError as error:  # pragma: no cover (the extra is installed)
    raise missing_beam(error) from error

RECOMMENDATION_SHARDS = TargetKind("folder of recommendations", "--output")
SHARD_PREFIX = "part"
SHARD_TEMPLATE = "-SSSSS-of-NNNNN"
ENDINGS = {"csv": ".csv", "jsonl": ".jsonl", "parquet": ".parquet"}
# The pipeline's row count, read back from the side folder, then removed.
ROWS_FILE = "rows.json"


@dataclasses.dataclass(frozen=True)
class BeamOutput:
    """What ``recommend_with_beam`` wrote.

    Attributes:
        path: str. The output folder.
        rows: int. Rows written (a row per user and rank).
        files: list of str. The shards' names, in order.
    """

    path: str
    rows: int
    files: list


def shard_pattern(file_format: str) -> re.Pattern:
    """The names of a format's shards.

    >>> bool(shard_pattern("csv").fullmatch("part-00001-of-00004.csv"))
    True
    """
    ending = re.escape(ENDINGS[file_format])
    return re.compile(rf"{SHARD_PREFIX}-\d{{5}}-of-\d{{5}}{ending}")


def recommend_with_beam(
    job: RecommendationJob,
    output: str,
    file_format: str,
    *,
    saved_model: str | None = None,
    num_shards: int | None = None,
    pipeline_args: Sequence[str] | None = None,
) -> BeamOutput:
    """Writes a ``RecommendationJob``'s lists with an Apache Beam pipeline.

    Args:
        job: a ``RecommendationJob`` (checked and loaded: its histories,
            filters, ``k``, ``batch_size`` and model).
        output: str. The folder of shards to write; must not exist.
        file_format: str. "csv", "jsonl" or "parquet".
        saved_model: str or None. An exported version folder of the run
            (``tfrec-tricks export``), read by the workers; None exports
            the run into a temporary folder. Defaults to None.
        num_shards: int or None. Output files; None lets the runner
            choose. Defaults to None.
        pipeline_args: Beam pipeline options (``--runner``, ...); the
            runner defaults to DirectRunner. Defaults to None.

    Returns:
        ``BeamOutput``: the folder, the rows and the shards' names.

    Raises:
        ValueError: a bad ``file_format`` or ``num_shards``, or a
            ``saved_model`` that cannot give the run's lists
            (``check_saved_model``: exported from another model than the
            run's, or of another catalogue), before anything is written.
        OutputError: ``output`` exists, lies inside ``saved_model`` or
            a folder another command owns (``writers.check_output``), or
            is being written (``TargetBusyError``).
        DataError: a worker could not read the histories.

    Example:

    >>> import tempfile
    >>> from tfrec_tricks.recommendation import (
    ...     RecommendationJob, RecommendationOptions)
    >>> from tfrec_tricks.training.train_config import TrainConfig
    >>> from tfrec_tricks.training.run_training import train
    >>> root = tempfile.mkdtemp()
    >>> run = train(TrainConfig(
    ...     synthetic_users=30, synthetic_items=40, max_len=5, epochs=1,
    ...     output_dir=root, model={"embedding_dim": 4},
    ... ), verbose=0).run_dir
    >>> job = RecommendationJob(run, RecommendationOptions(k=3))
    >>> written = recommend_with_beam(
    ...     job, os.path.join(root, "recs"), "csv", num_shards=2)
    >>> written.rows, written.files
    (90, ['part-00000-of-00002.csv', 'part-00001-of-00002.csv'])
    """
    if file_format not in ENDINGS:
        raise ValueError(
            f"The output format must be one of {sorted(ENDINGS)}. "
            f"Received: {file_format!r}"
        )
    if num_shards is not None and (
        isinstance(num_shards, bool)
        or not isinstance(num_shards, (int, np.integer))
        or num_shards < 1
    ):
        raise ValueError(
            "`num_shards` must be a positive int or None. Received: "
            f"num_shards={num_shards!r}"
        )
    check_output(output, [saved_model] if saved_model else [])
    if saved_model is not None:
        engine = job.engine
        check_saved_model(
            saved_model,
            engine.items,
            engine.feature_names,
            job.k,
            job.model_identity,
        )
    with (
        target_lock(output, RECOMMENDATION_SHARDS),
        _served_model(job, saved_model) as path,
    ):
        result = {}

        def write(staging: str) -> None:
            result.update(
                _write_shards(
                    job, path, staging, file_format, num_shards, pipeline_args
                )
            )

        publish_directory(output, write, kind=RECOMMENDATION_SHARDS.name)
    return BeamOutput(output, result["rows"], result["files"])


@contextlib.contextmanager
def _served_model(
    job: RecommendationJob, saved_model: str | None
) -> Iterator[str]:
    """``saved_model``, or the run exported into a temporary folder for
    the ``with`` block."""
    if saved_model is not None:
        yield saved_model
        return
    with tempfile.TemporaryDirectory(prefix="tfrec-tricks-recommend-") as tmp:
        yield export_for_serving(
            job.engine.module.model,
            os.path.join(tmp, "recommend"),
            list(job.engine.items),
            k=job.k,
            warmup=False,
        )


def _write_shards(
    job: RecommendationJob,
    saved_model: str,
    staging: str,
    file_format: str,
    num_shards: int | None,
    pipeline_args: Sequence[str] | None,
) -> dict:
    """Runs the pipeline into ``staging``; returns ``rows`` and ``files``."""
    staging = os.path.abspath(staging)
    side = os.path.join(staging, SIDE_FOLDER)
    pipeline = beam.Pipeline(
        options=pipeline_options(list(pipeline_args or []))
    )
    if "://" not in saved_model:
        # A local folder, whatever the workers' working directory.
        saved_model = os.path.abspath(saved_model)
    handler = RecommendationModelHandler(
        saved_model,
        k=job.k,
        max_len=job.engine.max_len,
        filters=job.filters,
        batch_size=job.batch_size,
        history_last=job.engine.history_last,
    )
    lists = user_requests(pipeline, job) | "Rank" >> RunInference(handler)
    frames = (
        lists
        | "Frames"
        >> beam.BatchElements(
            min_batch_size=job.batch_size, max_batch_size=job.batch_size
        )
        | "Rows" >> beam.Map(lists_frame)
        | "NotEmpty" >> beam.Filter(len)
    )
    write_frames(frames, staging, file_format, num_shards or 0)
    _ = (
        frames
        | "Count" >> beam.Map(len)
        | "Sum" >> beam.CombineGlobally(sum)
        | "CountJson" >> beam.Map(json.dumps)
        | "WriteCount"
        >> beam.io.WriteToText(
            os.path.join(side, ROWS_FILE), shard_name_template="", num_shards=1
        )
    )
    run_pipeline(pipeline)
    rows = json.loads(read_side_file(side, ROWS_FILE))
    shutil.rmtree(side, ignore_errors=True)
    pattern = shard_pattern(file_format)
    files = sorted(f for f in os.listdir(staging) if pattern.fullmatch(f))
    if num_shards is not None and len(files) != num_shards:
        raise RuntimeError(
            f"Beam wrote {len(files)} shards, not the {num_shards} asked "
            f"for. Received: {files}"
        )
    return {"rows": int(rows), "files": files}


def user_requests(
    pipeline: beam.Pipeline, job: RecommendationJob
) -> beam.PCollection:
    """The job's users, a ``UserRequest`` each, as a PCollection.

    A run trained on a prepared dataset: its shards, read by the workers
    (``prepared_users``). Otherwise the job's histories in memory, a
    ``beam.Create`` of ``HistoryBatch`` es split into users.
    """
    features = list(job.engine.feature_names)
    histories = job.histories
    if isinstance(histories, PreparedHistories):
        dataset = histories.dataset
        remap = item_remap(dataset.vocabulary.items, list(job.engine.items))
        parse = PreparedUsers(
            histories.user_names,
            remap,
            features,
            None if job.users is None else set(job.users),
            {
                name: values
                for name, values in histories.token_values.items()
                if name in features
            },
        )
        return (
            pipeline
            | "Shards" >> beam.Create(list(dataset.files))
            | "Read" >> beam.io.ReadAllFromTFRecord()
            | "Users" >> beam.ParDo(parse)
        )
    batches = list(histories.batches(job.batch_size, job.users, features))
    return (
        pipeline
        | "Histories" >> beam.Create(batches)
        | "Users" >> beam.FlatMap(_batch_requests)
    )


def _batch_requests(batch) -> Iterator[UserRequest]:
    """The ``UserRequest`` s of a ``HistoryBatch``."""
    for row, user in enumerate(batch.users):
        yield UserRequest(
            user,
            batch.item_ids[row],
            {name: values[row] for name, values in batch.features.items()},
        )


class PreparedUsers(beam.DoFn):
    """A prepared dataset's user records as ``UserRequest`` s.

    Reads what ``user_histories.PreparedHistories`` reads: the user's
    whole sequence, its items mapped to the run's ids, its features.

    Args:
        user_names: list of str. The dataset's users by index.
        remap: int32 array. The run's id of each dataset item id
            (``item_remap``).
        features: the features to give.
        wanted: set of raw user ids, or None for every user.
        token_values: dict of the token features among ``features``: the
            raw value of each id (``user_histories.token_values``).
    """

    def __init__(
        self,
        user_names: Sequence[str],
        remap: np.ndarray,
        features: Sequence[str],
        wanted: set | None = None,
        token_values: dict[str, np.ndarray] | None = None,
    ) -> None:
        self.user_names = list(user_names)
        self.remap = np.asarray(remap, np.int32)
        self.features = list(features)
        self.wanted = wanted
        self.token_values = dict(token_values or {})

    def process(self, record: bytes) -> Iterator[UserRequest]:
        values = tf.train.Example.FromString(record).features.feature
        user = self.user_names[int(values["user"].int64_list.value[0])]
        if self.wanted is not None and user not in self.wanted:
            return
        items = np.asarray(values["items"].int64_list.value, np.int64)
        features = {}
        for name in self.features:
            if name in self.token_values:
                ids = values[fmt.TOKEN_PREFIX + name].int64_list.value
                features[name] = self.token_values[name][
                    np.asarray(ids, np.int64)
                ]
            else:
                features[name] = np.asarray(
                    values[fmt.FEATURE_PREFIX + name].float_list.value,
                    np.float32,
                )
        yield UserRequest(user, self.remap[items], features)


def write_frames(
    frames: beam.PCollection, folder: str, file_format: str, num_shards: int
) -> None:
    """Writes frames of rows (``COLUMNS``) as shards into ``folder``.

    Args:
        frames: PCollection of ``pandas.DataFrame`` s.
        folder: str. The shards' folder.
        file_format: str. "csv" (each shard with the header line),
            "jsonl" or "parquet".
        num_shards: int. Files; 0 lets the runner choose.
    """
    prefix = os.path.join(folder, SHARD_PREFIX)
    shards = dict(
        file_name_suffix=ENDINGS[file_format],
        num_shards=num_shards,
        shard_name_template=SHARD_TEMPLATE,
    )
    if file_format == "parquet":
        _ = (
            frames
            | "Tables" >> beam.Map(arrow_table)
            | "WriteShards"
            >> beam.io.WriteToParquetBatched(
                prefix, schema=parquet_schema(), codec="snappy", **shards
            )
        )
        return
    header = ",".join(COLUMNS) if file_format == "csv" else None
    _ = (
        frames
        | "Text" >> beam.Map(frame_text, file_format)
        | "WriteShards" >> beam.io.WriteToText(prefix, header=header, **shards)
    )


def frame_text(frame: pd.DataFrame, file_format: str) -> str:
    """A frame's rows as ``writers.CsvWriter`` or ``JsonLinesWriter``
    write them, without the last line's end (``WriteToText`` adds it).

    >>> frame = pd.DataFrame({"user_id": ["a,b"], "rank": [1],
    ...     "item_id": ["7"], "score": np.float32([0.1])})
    >>> frame_text(frame, "csv")
    '"a,b",1,7,0.1'
    >>> frame_text(frame, "jsonl")
    '{"user_id":"a,b","rank":1,"item_id":"7","score":0.1}'
    """
    frame = frame.loc[:, list(COLUMNS)]
    if file_format == "csv":
        text = frame.to_csv(header=False, index=False)
    else:
        # The shortest text that reads back as the float32 score.
        scores = frame["score"].to_numpy(np.float32).astype(str)
        text = frame.assign(score=scores.astype(np.float64)).to_json(
            orient="records",
            lines=True,
            force_ascii=False,
            double_precision=15,
        )
    return text.removesuffix("\n")


def parquet_schema():
    """The Parquet schema of ``writers.ParquetWriter``."""
    import pyarrow as pa

    return pa.schema(
        [
            ("user_id", pa.string()),
            ("rank", pa.int32()),
            ("item_id", pa.string()),
            ("score", pa.float32()),
        ]
    )


def arrow_table(frame: pd.DataFrame):
    """A frame of rows as a ``pyarrow.Table`` of ``parquet_schema``."""
    import pyarrow as pa

    return pa.Table.from_pandas(
        frame.loc[:, list(COLUMNS)], parquet_schema(), preserve_index=False
    )
