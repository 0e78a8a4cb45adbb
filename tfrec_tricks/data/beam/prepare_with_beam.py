"""Preparing a dataset on disk with Apache Beam (``engine="beam"``).

``prepare_with_beam`` writes the same prepared folder (``prepared.format``)
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
5. the token columns' vocabularies are counted from each user's training
   positions, summed and built on one worker (``beam.tokens``), as
   ``interaction_token_features`` builds them;
6. each user becomes one ``tf.train.Example`` (``user_example``), its
   token columns encoded with those vocabularies, written to
   ``num_shards`` TFRecord shards; training statistics and split counts
   are computed per batch of users and merged;
7. with item features, the ids of the trained items are gathered; this
   process then reads the ``.item`` table and joins it as the local engine
   does (``beam.trained_items`` says why there).

The two rankings collect ``(id, first place)`` pairs on one worker, as
tf.Transform computes its vocabularies; every worker then holds the item
vocabulary (a dict of raw id to contiguous id) as a side input, and the
token columns' ids likewise. ``interaction_tokens.json`` is then
byte-equal to the local engine's.

Modules:
    This module orchestrates; each step lives in its own module:
    ``beam.config`` (the checked options), ``beam.inputs`` (step 1:
    matching and reading the files into ``beam.rows``),
    ``beam.duplicates`` (step 1's exact duplicates), ``beam.k_core``
    (step 2), ``beam.ranking`` (steps 3, 4 and 6's encoding),
    ``beam.tokens`` (step 5), ``beam.summary`` and ``beam.outputs``
    (step 6: the summary, the shards and the side files read back here),
    ``beam.trained_items`` (step 7) and ``beam.runner``
    (running the pipeline, a worker's DataError raised again here).

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
>>> from tfrec_tricks.data.prepared.on_disk_dataset import OnDiskDataset
>>> OnDiskDataset(output).vocabulary.users
['u0', 'u1', 'u2', 'u3']
"""

import json
import os
import shutil
from collections.abc import Callable

import apache_beam as beam
import numpy as np

from tfrec_tricks.atomic_files import publish_directory
from tfrec_tricks.data.beam.config import FILTER_ROUNDS, BeamConfig
from tfrec_tricks.data.beam.duplicates import (
    drop_duplicate_rows,
    duplicate_rows,
)
from tfrec_tricks.data.beam.inputs import match_inputs, read_files
from tfrec_tricks.data.beam.k_core import k_core
from tfrec_tricks.data.beam.outputs import (
    SIDE_FOLDER,
    SUMMARY,
    TOKEN_FEATURES,
    TRAINED_ITEMS,
    VOCABULARY,
    check_shards,
    count_records,
    read_side_file,
    write_shards,
    write_summary,
    write_token_features,
    write_trained_items,
    write_vocabulary,
)
from tfrec_tricks.data.beam.ranking import encoded_users, ranked_users
from tfrec_tricks.data.beam.runner import pipeline_options, run_pipeline
from tfrec_tricks.data.beam.summary import check_summary, summarize
from tfrec_tricks.data.beam.tokens import token_features
from tfrec_tricks.data.beam.trained_items import trained_items
from tfrec_tricks.data.in_memory_dataset import Vocabulary
from tfrec_tricks.data.interaction_tokens import specs_from_json
from tfrec_tricks.data.prepared import format as fmt
from tfrec_tricks.data.prepared.item_features import (
    ItemFeatureRequest,
    item_mask,
    join_item_features,
)
from tfrec_tricks.data.prepared.writer import write_dataset_files
from tfrec_tricks.data.training_statistics import TrainingStatistics


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
    item_features: ItemFeatureRequest | None = None,
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
            ``read_encoded``; ``min_feature_count`` (default 1), as for
            ``interaction_token_features``. Stored in ``metadata.json``
            as given, with any other keys (e.g. ``source``, named in
            errors).
        file_format: str. One of ``loaders.FORMATS``, or "auto" (guessed
            per file). Defaults to "auto".
        num_shards: int. TFRecord shards. Defaults to
            ``beam.config.DEFAULT_NUM_SHARDS``.
        overwrite: bool. Replace an existing ``output``. Defaults to
            False.
        pipeline_args: list of str. Beam pipeline options (``--runner``,
            ``--project``, ...); the runner defaults to DirectRunner.
        filter_rounds: int. Rounds of the k-core filter when both
            bounds are active. Defaults to ``FILTER_ROUNDS``.
        report: called with each line the user should read (the exact
            duplicate rows found, ``DuplicateRows.message``). Defaults to
            None (nothing reported).
        item_features: ``ItemFeatureRequest`` or None. The item
            attributes to join, in this process, once the pipeline has
            gathered the trained items (``join_item_features``, as the
            local engine). Defaults to None.

    Returns:
        ``output``.

    Raises:
        FileExistsError: ``output`` exists and ``overwrite`` is False
            (checked before the pipeline runs).
        DataError: a pattern matches no file, a line is malformed (the
            message names the file and the line), nothing is left after
            filtering, there are no validation or test examples, or the
            filter did not settle in ``filter_rounds`` rounds.
        ValueError: an option is out of range, or
            ``item_features.select`` refuses the features asked for.
    """
    if isinstance(inputs, str):
        raise ValueError(
            "inputs must be a list of files or glob patterns. Received: "
            f"inputs={inputs!r}"
        )
    config = BeamConfig.from_options(options, num_shards, filter_rounds)
    if os.path.exists(output) and not overwrite:
        raise FileExistsError(
            f"{output!r} already exists; pass --overwrite to replace it."
        )
    paths = match_inputs(inputs)
    source = str(options.get("source") or ", ".join(inputs))

    def write(staging: str) -> None:
        staging = os.path.abspath(staging)
        side = os.path.join(staging, SIDE_FOLDER)
        pipeline = beam.Pipeline(options=pipeline_options(pipeline_args))
        with_trained = item_features is not None and (
            item_features.table is not None
        )
        _build(
            pipeline, paths, file_format, config, staging, side, with_trained
        )
        run_pipeline(pipeline)
        vocabulary = Vocabulary(**json.loads(read_side_file(side, VOCABULARY)))
        summary = json.loads(read_side_file(side, SUMMARY))
        specs = specs_from_json(read_side_file(side, TOKEN_FEATURES))
        trained = None
        if with_trained:
            trained = item_mask(
                json.loads(read_side_file(side, TRAINED_ITEMS)),
                vocabulary.num_items,
            )
        shutil.rmtree(side, ignore_errors=True)
        check_summary(summary, config, source, filter_rounds)
        duplicates = duplicate_rows(summary["duplicates"], paths, config)
        if duplicates is not None and report is not None:
            report(duplicates.message())
        shard_users = {
            name: count_records(os.path.join(staging, name))
            for name in check_shards(staging, config.num_shards)
        }
        statistics = TrainingStatistics.from_dict(summary["statistics"])
        counts = np.zeros(vocabulary.num_items, np.int64)
        counts[: len(statistics.item_counts)] = statistics.item_counts
        statistics.item_counts = counts
        joined = join_item_features(
            item_features,
            # As the local engine: --features may name token columns too.
            summary["feature_names"],
            vocabulary,
            statistics,
            trained,
            token_names=[spec.name for spec in specs],
        )
        write_dataset_files(
            staging,
            joined.vocabulary,
            joined.statistics,
            summary["split_counts"],
            options,
            summary["feature_names"],
            summary["interactions"],
            "beam",
            shard_users=shard_users,
            item_features=joined,
            token_features=specs,
        )

    return publish_directory(
        output, write, replace=overwrite, kind=fmt.PREPARED_KIND
    )


def _build(
    pipeline: beam.Pipeline,
    paths: list[str],
    file_format: str,
    config: BeamConfig,
    staging: str,
    side: str,
    with_trained: bool = False,
) -> None:
    """Adds the preparation's transforms to ``pipeline``.

    The steps of the module docstring, in order: read the files, count
    (and drop) exact duplicates, apply the k-core filter, rank the users
    and sort each user's rows, build the token columns' vocabularies, rank
    the items and encode each user, write the shards, summarize the
    users, then write the vocabulary, the summary and the token specs to
    ``side``; with ``with_trained``, the trained items too.
    """
    rows, schema, rows_read = read_files(pipeline, paths, file_format)
    rows, duplicates = drop_duplicate_rows(rows, schema, config)
    kept, unsettled_items = k_core(rows, config)
    user_ranking, sequences = ranked_users(kept, schema, config)
    specs = token_features(sequences, config)
    item_ranking, encoded = encoded_users(sequences, config, specs)
    write_shards(encoded, staging, config.num_shards)
    summary = summarize(encoded, config)
    one = pipeline | "One" >> beam.Create([None])
    write_vocabulary(one, side, user_ranking, item_ranking)
    write_summary(one, side, summary, rows_read, unsettled_items, duplicates)
    write_token_features(one, side, specs)
    if with_trained:
        write_trained_items(one, side, trained_items(encoded))
