"""The ``tfrec-tricks`` command line.

Run ``tfrec-tricks --help`` or ``tfrec-tricks train --help``.
"""

# tf-keras must be chosen before anything imports TensorFlow.
from tfrec_tricks.keras_version import use_legacy_keras

use_legacy_keras()

import argparse  # noqa: E402
import os  # noqa: E402
import sys  # noqa: E402

from tfrec_tricks.data.datasets import DATA_ENV, SOURCES  # noqa: E402
from tfrec_tricks.data.loaders import FORMATS  # noqa: E402

os.environ.setdefault("TF_CPP_MIN_LOG_LEVEL", "2")

DESCRIPTION = """\
tfrec-tricks: sequential recommenders with TensorFlow Recommenders, and four
techniques that make them better (soft one-hot features, tied embeddings,
stochastic shared embeddings, Softmax-CPR).

Start with `tfrec-tricks train`: it trains GRU4Rec on the built-in synthetic
data (no download) and prints NDCG@10, HR@10 and MRR@10.
"""

TRAIN_DESCRIPTION = f"""\
Train a sequential retrieval model (GRU4Rec, full softmax over the catalogue)
and evaluate it with full ranking: leave-one-out by time (last item test,
second-to-last validation), NDCG@10 / HR@10 / MRR@10 over all items.

Everything lands in OUTPUT_DIR/NAME: config.json, vocabulary.json,
history.csv, metrics.json and checkpoints/. An interrupted run (Ctrl-C,
crash, lost machine) resumes from its backup/ when you run the same command
again.

data sources:
  synthetic          built-in generator (default; sizes: --synthetic-*)
  ml-1m              MovieLens-1M sequences (no timestamps)
  ml-1m-timed        MovieLens-1M ratings of users 1..2999 (time, rating)
  ml-100k            MovieLens-100k u.data (time, rating)
  yoochoose-100k     YOOCHOOSE clicks sample (sessions; 49% repeat items)
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


def _positive_int(text: str) -> int:
    try:
        value = int(text)
    except ValueError:
        raise argparse.ArgumentTypeError(f"expected an integer, got {text!r}")
    if value <= 0:
        raise argparse.ArgumentTypeError(f"must be positive, got {value}")
    return value


def _non_negative_int(text: str) -> int:
    try:
        value = int(text)
    except ValueError:
        raise argparse.ArgumentTypeError(f"expected an integer, got {text!r}")
    if value < 0:
        raise argparse.ArgumentTypeError(f"must be >= 0, got {value}")
    return value


def _positive_float(text: str) -> float:
    try:
        value = float(text)
    except ValueError:
        raise argparse.ArgumentTypeError(f"expected a number, got {text!r}")
    if not value > 0:
        raise argparse.ArgumentTypeError(f"must be positive, got {value}")
    return value


def _dropout(text: str) -> float:
    try:
        value = float(text)
    except ValueError:
        raise argparse.ArgumentTypeError(f"expected a number, got {text!r}")
    if not 0 <= value < 1:
        raise argparse.ArgumentTypeError(f"must be in [0, 1), got {value}")
    return value


def _add_train_arguments(parser: argparse.ArgumentParser) -> None:
    data = parser.add_argument_group("data")
    data.add_argument(
        "--data",
        default="synthetic",
        choices=SOURCES,
        metavar="SOURCE",
        help="data source (see above). Default: synthetic",
    )
    data.add_argument(
        "--data-path",
        metavar="PATH",
        help="folder of the real datasets, or the file for --data file",
    )
    data.add_argument(
        "--format",
        dest="file_format",
        default="auto",
        choices=("auto", *FORMATS),
        help="format of --data file. Default: auto (guessed)",
    )
    data.add_argument(
        "--tfds-data-dir",
        metavar="DIR",
        help="TFDS data_dir holding the prepared dataset",
    )
    data.add_argument(
        "--tfds-manual-dir",
        metavar="DIR",
        help="folder with GroupLens' ml-1m.zip / ml-100k.zip",
    )
    data.add_argument(
        "--synthetic-users",
        type=_positive_int,
        default=2000,
        metavar="N",
        help="synthetic users. Default: 2000",
    )
    data.add_argument(
        "--synthetic-items",
        type=_positive_int,
        default=1000,
        metavar="N",
        help="synthetic items. Default: 1000",
    )
    data.add_argument(
        "--min-user-interactions",
        type=_positive_int,
        default=3,
        metavar="N",
        help="drop users/sessions with fewer interactions "
        "(at least 3). Default: 3",
    )
    data.add_argument(
        "--min-item-interactions",
        type=_non_negative_int,
        default=0,
        metavar="N",
        help="drop items with fewer interactions. Default: 0",
    )
    data.add_argument(
        "--max-len",
        type=_positive_int,
        default=50,
        metavar="L",
        help="history length. Default: 50",
    )

    fit = parser.add_argument_group("training")
    fit.add_argument(
        "--epochs",
        type=_positive_int,
        default=20,
        help="maximum epochs (early stopping on validation "
        "NDCG@10 may stop sooner). Default: 20",
    )
    fit.add_argument(
        "--batch-size", type=_positive_int, default=128, help="Default: 128"
    )
    fit.add_argument(
        "--learning-rate",
        type=_positive_float,
        default=1e-3,
        help="Adam's learning rate. Default: 0.001",
    )
    fit.add_argument(
        "--patience",
        type=_positive_int,
        default=3,
        help="epochs without a better validation NDCG@10 "
        "before stopping. Default: 3",
    )
    fit.add_argument("--seed", type=int, default=0, help="Default: 0")

    model = parser.add_argument_group("model")
    model.add_argument(
        "--embedding-dim",
        type=_positive_int,
        default=64,
        help="item embedding size d. Default: 64",
    )
    model.add_argument(
        "--num-layers",
        type=_positive_int,
        default=1,
        help="stacked encoder layers. Default: 1",
    )
    model.add_argument(
        "--dropout",
        type=_dropout,
        default=0.2,
        help="dropout on embeddings and encoder output. Default: 0.2",
    )

    out = parser.add_argument_group("output")
    out.add_argument(
        "--output-dir",
        default="runs",
        help="parent folder of run directories. Default: runs",
    )
    out.add_argument(
        "--name", help="run directory name. Default: the data source name"
    )
    out.add_argument(
        "--quiet",
        action="store_true",
        help="no progress bar, only the final table",
    )


def build_parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(
        prog="tfrec-tricks",
        description=DESCRIPTION,
        formatter_class=argparse.RawDescriptionHelpFormatter,
    )
    commands = parser.add_subparsers(dest="command", metavar="COMMAND")
    train = commands.add_parser(
        "train",
        help="train and evaluate a model (start here)",
        description=TRAIN_DESCRIPTION,
        formatter_class=argparse.RawDescriptionHelpFormatter,
    )
    _add_train_arguments(train)
    return parser


def _run_train(args: argparse.Namespace) -> int:
    from tfrec_tricks.training import TrainConfig, train

    config = TrainConfig(
        data=args.data,
        data_path=args.data_path,
        file_format=args.file_format,
        tfds_data_dir=args.tfds_data_dir,
        tfds_manual_dir=args.tfds_manual_dir,
        synthetic_users=args.synthetic_users,
        synthetic_items=args.synthetic_items,
        min_user_interactions=args.min_user_interactions,
        min_item_interactions=args.min_item_interactions,
        max_len=args.max_len,
        epochs=args.epochs,
        batch_size=args.batch_size,
        learning_rate=args.learning_rate,
        patience=args.patience,
        seed=args.seed,
        output_dir=args.output_dir,
        name=args.name,
        model={
            "embedding_dim": args.embedding_dim,
            "num_layers": args.num_layers,
            "dropout": args.dropout,
        },
    )
    result = train(config, verbose=0 if args.quiet else None)
    if args.quiet:
        from tfrec_tricks.training import format_results

        print(format_results(result.metrics, result.run_dir))
    return 0


def main(argv: list[str] | None = None) -> int:
    parser = build_parser()
    args = parser.parse_args(argv)
    if args.command is None:
        parser.print_help()
        return 2
    try:
        if args.command == "train":
            return _run_train(args)
    except KeyboardInterrupt:
        print(
            "\ninterrupted: run the same command again to resume from the "
            "last completed epoch.",
            file=sys.stderr,
        )
        return 130
    except (ValueError, OSError, ImportError) as error:
        print(f"tfrec-tricks {args.command}: error: {error}", file=sys.stderr)
        return 1
    parser.error(f"unknown command {args.command!r}")
    return 2


if __name__ == "__main__":
    sys.exit(main())
