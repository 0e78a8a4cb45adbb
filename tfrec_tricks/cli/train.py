"""``tfrec-tricks train``: one training run into a run directory."""

import argparse

from tfrec_tricks.cli.options import add_overwrite_argument, train_config
from tfrec_tricks.data.sources.named_sources import (
    DATA_ENV,
    check_source_headers,
)

HELP = "train and evaluate a model (start here)"
USES_CONFIG = True
DESCRIPTION = f"""\
Train a sequential retrieval model (GRU4Rec, full softmax over the catalogue)
and evaluate it with full ranking: leave-one-out by time (last item test,
second-to-last validation), NDCG@10 / HR@10 / MRR@10 over all items.

Everything lands in OUTPUT_DIR/NAME: run.json (the run's fingerprint),
config.json, vocabulary.json, history.csv, metrics.json, checkpoints/,
model/ and tensorboard/. The same command again resumes an interrupted run
(Ctrl-C, SIGTERM, SIGHUP, a full disk, crash, lost machine) from its
backup/, or reuses a finished one; other settings or data on the same NAME
are refused, naming the differences (--overwrite replaces the old run, and
only what the run recorded writing: a file of yours inside it is refused,
never deleted).

Runs under tf-keras by default, under Keras 3 with TF_USE_LEGACY_KERAS=0
(docs/keras-versions.md); a run is resumed or reused only under the Keras
that trained it.

Watch a run (loss and ranking metrics per epoch, and its settings under
HPARAMS): tensorboard --logdir OUTPUT_DIR/NAME/tensorboard

data sources:
  synthetic          built-in generator (default; sizes: --synthetic-*)
  ml-1m              MovieLens-1M sequences (no timestamps)
  ml-1m-timed        MovieLens-1M ratings of users 1..2999 (time, rating)
  ml-100k            MovieLens-100k u.data (time, rating)
  yoochoose-100k     YOOCHOOSE clicks sample (sessions, many repeat items)
  tfds:movielens/1m-ratings, tfds:movielens/100k-ratings
                     through TensorFlow Datasets (offline: --tfds-data-dir
                     or --tfds-manual-dir)
  file               one interaction file: --data-path FILE [--format F]
Real datasets are read from --data-path DIR (default: ${DATA_ENV}, else
../shared/data), laid out as <dir>/ml-1m/, <dir>/ml-100k/, ...

examples:
  tfrec-tricks train
  tfrec-tricks train --data yoochoose-100k --epochs 30
  tfrec-tricks train --data file --data-path u.data --min-item-interactions 5
"""


def add_arguments(parser: argparse.ArgumentParser) -> None:
    add_overwrite_argument(parser)


def check(args: argparse.Namespace) -> None:
    """What ``run`` would refuse first, checked before TensorFlow loads
    (``cli.main``): the options, and the data's files and headers. A typo
    is answered in a fraction of a second, not after TensorFlow's start-up.
    A prepared dataset is checked by ``run`` (it reads the dataset's files).
    """
    config = train_config(args)
    if not config.prepared:
        check_source_headers(config.data, config.data_path, config.file_format)


def run(args: argparse.Namespace) -> int:
    # Imported here, not at the top: they import TensorFlow, which main
    # loads only once the arguments and ``check`` have passed.
    from tfrec_tricks.training.evaluate import format_results
    from tfrec_tricks.training.run_training import train

    result = train(
        train_config(args),
        verbose=0 if args.quiet else None,
        overwrite=args.overwrite,
    )
    if args.quiet:
        print(format_results(result.metrics, result.run_dir))
    return 0
