"""``tfrec-tricks prepare``: data prepared once, on disk, for ``train``."""

import argparse

from tfrec_tricks.cli.options import add_field_arguments, positive_int
from tfrec_tricks.data.sources.named_sources import check_source_headers

HELP = "prepare a dataset on disk (sharded TFRecords) for train --prepared"
USES_CONFIG = False
DESCRIPTION = """\
Prepare a data source once and write it to DIR: each user's sequence once
(TFRecord shards of tf.train.Example), the vocabulary, the leave-one-out
split, the training statistics and metadata.json. `tfrec-tricks train
--prepared DIR` then streams it with tf.data, forming the same examples as
the in-memory path on the fly, without loading the dataset into memory.
DIR is written under a temporary name and renamed when complete.

Item attributes (--item-features FILE.item, or --features genres year for
ml-1m, ml-1m-timed and ml-100k's metadata) are encoded into DIR as train
encodes them in memory, the items with attributes and no interaction
joining the catalogue as cold-start items; train --prepared DIR reads them.

engines:
  local   streams the files into compact columns (int32 codes, each raw id
          kept once: about 40 bytes per interaction plus the raw ids) and
          prepares them in this process. Up to a few hundred million
          interactions on one machine.
  beam    the same preparation as an Apache Beam pipeline, for logs that no
          single machine holds (pip install "tfrec_tricks[beam]"). Reads
          --data file (one file or a glob of shards) or a named dataset.
          The DirectRunner runs it here; Beam pipeline options after the
          flags choose another runner, e.g.
            --runner DataflowRunner --project P --region R \\
            --temp_location gs://B/tmp  (DIR then on gs://)
            --runner FlinkRunner --flink_master host:8081
            --runner SparkRunner

examples:
  tfrec-tricks prepare --output prepared/synthetic
  tfrec-tricks prepare --data yoochoose-100k --output prepared/yoochoose
  tfrec-tricks prepare --engine beam --data file \\
      --data-path 'clicks-*.tsv' --format sessions --output prepared/clicks
  tfrec-tricks prepare --data file --data-path shop.inter \\
      --item-features shop.item --output prepared/shop
  tfrec-tricks prepare --data ml-100k --features genres year \\
      --output prepared/ml-100k
  tfrec-tricks train --prepared prepared/yoochoose --epochs 30
"""
# Flags that belong to training, not preparation.
NOT_PREPARATION = ("prepared",)


def add_arguments(parser: argparse.ArgumentParser) -> None:
    from tfrec_tricks.training.option_choices import ENGINES
    from tfrec_tricks.training.train_config import TrainConfig

    groups = {}
    add_field_arguments(
        parser,
        TrainConfig,
        groups,
        only_groups=("data",),
        skip=NOT_PREPARATION,
    )
    groups["data"].add_argument(
        "--features",
        nargs="*",
        metavar="NAME",
        help="the item features to encode into DIR: columns of "
        "--item-features, or genres and year of ml-1m, ml-1m-timed and "
        "ml-100k's metadata, or all (as train --features; per-interaction "
        "names are checked and every per-interaction feature is prepared "
        "anyway: train --features picks them). Default: every column of "
        "--item-features, none without it",
    )
    groups["data"].add_argument(
        "--seed",
        type=int,
        default=0,
        help="seed of the synthetic generator. Default: 0",
    )
    output = parser.add_argument_group("output")
    output.add_argument(
        "--output",
        required=True,
        metavar="DIR",
        help="the prepared dataset's folder (must not exist, unless "
        "--overwrite)",
    )
    output.add_argument(
        "--engine",
        choices=ENGINES,
        default="local",
        help="local (this process) or beam (an Apache Beam pipeline; see "
        "above). Default: local",
    )
    output.add_argument(
        "--beam-runner",
        metavar="RUNNER",
        help="Beam runner for --engine beam, e.g. DataflowRunner, "
        "FlinkRunner, SparkRunner (same as Beam's --runner). Default: "
        "DirectRunner",
    )
    output.add_argument(
        "--shards",
        type=positive_int,
        metavar="N",
        help="TFRecord files. Default: one per million interactions, at "
        "least 4 (workers of a multi-worker run read separate shards)",
    )
    output.add_argument(
        "--overwrite",
        action="store_true",
        help="replace DIR if it exists",
    )


def beam_arguments(args: argparse.Namespace) -> list[str]:
    """Beam's pipeline options: ``--beam-runner`` and the unknown flags."""
    extra = list(args.pipeline_args)
    if args.beam_runner:
        if args.engine != "beam":
            raise ValueError(
                "--beam-runner applies to --engine beam only. Received: "
                f"--engine {args.engine}"
            )
        extra = [f"--runner={args.beam_runner}", *extra]
    return extra


def _config(args: argparse.Namespace):
    """The ``TrainConfig`` of the data options (refused as ``train``
    refuses them)."""
    import dataclasses

    from tfrec_tricks.training.train_config import TrainConfig

    names = {f.name for f in dataclasses.fields(TrainConfig)}
    return TrainConfig(
        **{name: value for name, value in vars(args).items() if name in names},
        model={} if args.features is None else {"features": args.features},
    )


def check(args: argparse.Namespace) -> None:
    """What ``run`` refuses first, in its order, checked before TensorFlow
    loads (``cli.main``): the data options, ``--beam-runner`` without
    ``--engine beam``, an ``--output`` that may not be written
    (``check_prepared_output``), and the data's files and headers. An
    ``.item`` file and the data's rows are checked by ``run``."""
    from tfrec_tricks.training.prepared_output import check_prepared_output

    config = _config(args)
    beam_arguments(args)
    check_prepared_output(args.output, config, args.overwrite)
    if args.engine == "local" or config.data != "file":
        check_source_headers(config.data, config.data_path, config.file_format)


def run(args: argparse.Namespace) -> int:
    import logging

    from tfrec_tricks.errors import writes_named
    from tfrec_tricks.training.prepare_dataset import prepare_dataset

    if args.engine == "beam" and not args.verbose:
        # Beam logs notices of optional packages (GCP clients, faster
        # CRCs) at WARNING; --verbose shows them.
        logging.getLogger().setLevel(logging.ERROR)
    config = _config(args)
    # A full disk or a folder that is not writable names --output (the
    # staging folder is removed, nothing is published).
    with writes_named(args.output):
        prepare_dataset(
            config,
            args.output,
            engine=args.engine,
            num_shards=args.shards,
            overwrite=args.overwrite,
            pipeline_args=beam_arguments(args),
        )
    return 0
