"""The ``tfrec-tricks`` command line.

Run ``tfrec-tricks --help`` or ``tfrec-tricks train --help``.
"""

import os

# TensorFlow's C++ start-up chatter buries the output; errors still show.
os.environ.setdefault("TF_CPP_MIN_LOG_LEVEL", "2")

# tf-keras must be chosen before anything imports TensorFlow.
from tfrec_tricks.keras_version import use_legacy_keras  # noqa: E402

use_legacy_keras()

import argparse  # noqa: E402
import dataclasses  # noqa: E402
import json  # noqa: E402
import shlex  # noqa: E402
import sys  # noqa: E402

from tfrec_tricks.data.datasets import DATA_ENV, SOURCES  # noqa: E402
from tfrec_tricks.data.loaders import FORMATS  # noqa: E402
from tfrec_tricks.data.preparation import SPLITS  # noqa: E402
from tfrec_tricks.models.config import (  # noqa: E402
    CPR_MERGES,
    ENCODERS,
    HEADS,
    OBJECTIVES,
)

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

Everything lands in OUTPUT_DIR/NAME: run.json (the run's fingerprint),
config.json, vocabulary.json, history.csv, metrics.json, checkpoints/ and
model/. The same command again resumes an interrupted run (Ctrl-C, crash,
lost machine) from its backup/, or reuses a finished one; other settings or
data on the same NAME are refused, naming the differences (--overwrite
replaces the old run).

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


def _int_list(text: str) -> tuple[int, ...]:
    if text.strip().lower() in ("none", ""):
        return ()
    try:
        values = tuple(int(part) for part in text.split(","))
    except ValueError:
        raise argparse.ArgumentTypeError(
            f"expected comma-separated integers, got {text!r}"
        )
    if any(v <= 0 for v in values):
        raise argparse.ArgumentTypeError(f"must be positive, got {text!r}")
    return values


def _run_name(text: str) -> str:
    from tfrec_tricks.run_directory import check_run_name

    try:
        return check_run_name(text)
    except ValueError as error:
        raise argparse.ArgumentTypeError(str(error)) from None


def _model_name(text: str) -> str:
    from tfrec_tricks.export.models_config import check_model_name

    try:
        return check_model_name(text)
    except ValueError as error:
        raise argparse.ArgumentTypeError(str(error)) from None


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
        default=1000,
        metavar="N",
        help="synthetic users. Default: 1000",
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
        default=1,
        metavar="N",
        help="drop users/sessions with fewer interactions (--split "
        "every-user raises it to 3). Default: 1 (keep all, as RecBole)",
    )
    data.add_argument(
        "--min-item-interactions",
        type=_non_negative_int,
        default=0,
        metavar="N",
        help="drop items with fewer interactions. Default: 0",
    )
    data.add_argument(
        "--split",
        choices=tuple(SPLITS),
        default="recbole",
        help="leave-one-out split. recbole: each user's last example is "
        "the test example (users with 3+ interactions), the one before it "
        "the validation example (4+), the rest train, as RecBole 1.2.1. "
        "every-user: users with 3+ interactions only, each giving a "
        "validation and a test example. Default: recbole",
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
    fit.add_argument(
        "--bucket-by-length",
        action=argparse.BooleanOptionalAction,
        default=True,
        help="batch histories of similar length together, so that short "
        "sessions skip the padding columns (same examples per epoch, "
        "faster). Default: on",
    )
    fit.add_argument(
        "--every-position",
        action=argparse.BooleanOptionalAction,
        default=False,
        help="train each session's prefixes in one row with a target per "
        "position: the encoder runs once per session instead of once per "
        "prefix (the same examples, losses and gradients; only the random "
        "draws of dropout and SSE differ; --batch-size then counts target "
        "positions). SASRec epochs on YOOCHOOSE: 1.0-1.5x faster (RecBole's "
        "split, many two-click sessions); no gain for GRU4Rec, whose loop "
        "costs per time step. Default: off",
    )
    fit.add_argument(
        "--steps-per-execution",
        type=_positive_int,
        default=16,
        metavar="S",
        help="training steps per compiled call (Keras' compile option; "
        "the progress bar moves S steps at a time). Default: 16",
    )
    fit.add_argument("--seed", type=int, default=0, help="Default: 0")

    model = parser.add_argument_group(
        "model (unset options keep the defaults shown, or --config's values)"
    )
    model.add_argument(
        "--encoder", choices=ENCODERS, help="sequence encoder. Default: gru4rec"
    )
    model.add_argument(
        "--embedding-dim",
        type=_positive_int,
        help="item embedding size d. Default: 64",
    )
    model.add_argument(
        "--num-layers",
        type=_positive_int,
        help="stacked encoder layers. Default: 1",
    )
    model.add_argument(
        "--num-heads",
        type=_positive_int,
        help="SASRec attention heads. Default: 2",
    )
    model.add_argument(
        "--dropout",
        type=_dropout,
        help="dropout on embeddings and encoder states. Default: 0.2",
    )
    model.add_argument(
        "--attention-dropout",
        type=_dropout,
        help="SASRec attention dropout. Default: 0.2",
    )
    model.add_argument(
        "--ffn-dim",
        type=_positive_int,
        metavar="N",
        help="SASRec feed-forward inner size. Default: the "
        "hidden size (RecBole's SASRec uses 256)",
    )
    model.add_argument(
        "--head-dropout",
        type=_dropout,
        help="dropout on the query projections of the cpr and mos "
        "heads. Default: 0",
    )
    model.add_argument(
        "--untied",
        dest="tie_embeddings",
        action="store_const",
        const=False,
        help="separate output item table (default: tied)",
    )
    model.add_argument(
        "--no-output-bias",
        dest="output_bias",
        action="store_const",
        const=False,
        help="no per-item output bias (default: with bias)",
    )
    model.add_argument(
        "--sse-item-probability",
        type=_dropout,
        metavar="P",
        help="SSE on input item ids (SSE-Graph when the data "
        "has an item graph). Default: 0",
    )
    model.add_argument(
        "--sse-label-probability",
        type=_dropout,
        metavar="P",
        help="SSE on target ids, like label smoothing. Default: 0",
    )
    model.add_argument(
        "--sse-graph-rho",
        type=_positive_float,
        metavar="RHO",
        help="SSE-Graph neighbour : other ratio. Default: 10",
    )
    model.add_argument(
        "--features",
        nargs="*",
        metavar="NAME",
        help="per-position features through soft one-hot "
        "encoding, e.g. time_gap rating. Default: none",
    )
    model.add_argument(
        "--soft-one-hot-buckets",
        type=_positive_int,
        metavar="P",
        help="soft one-hot buckets. Default: 10",
    )
    model.add_argument(
        "--head", choices=HEADS, help="output head. Default: softmax"
    )
    model.add_argument(
        "--cpr-no-context",
        dest="cpr_context",
        action="store_const",
        const=False,
        help="CPR without the context partition",
    )
    model.add_argument(
        "--cpr-no-pointer",
        dest="cpr_pointer",
        action="store_const",
        const=False,
        help="CPR without the pointer partition",
    )
    model.add_argument(
        "--cpr-rerankers",
        dest="cpr_reranker_ks",
        type=_int_list,
        metavar="K,K,...",
        help="CPR reranker sizes, e.g. 20,100,500; 'none' "
        "for no reranker. Default: 100",
    )
    model.add_argument(
        "--cpr-mi",
        action="store_const",
        const=True,
        help="CPR with multiple input hidden states (Mi)",
    )
    model.add_argument(
        "--cpr-merge",
        choices=CPR_MERGES,
        help="CPR partition logits replace or add to the "
        "base logit. Default: replace",
    )
    model.add_argument(
        "--cpr-random-init",
        dest="cpr_start_as_softmax",
        action="store_const",
        const=False,
        help="initialise the CPR projections at random, as the "
        "reference does. Default: the CPR head starts as the tied "
        "softmax it extends (identity base projection, pointer at zero)",
    )
    model.add_argument(
        "--mos-components",
        type=_positive_int,
        metavar="K",
        help="mixture of softmax components. Default: 4",
    )
    model.add_argument(
        "--objective",
        choices=OBJECTIVES,
        help="full softmax over the catalogue, or in-batch "
        "sampled softmax (TFRS Retrieval semantics). "
        "Default: full",
    )
    model.add_argument(
        "--num-hard-negatives",
        type=_positive_int,
        metavar="N",
        help="sampled objective: keep the N hardest negatives. Default: all",
    )

    parser.add_argument(
        "--config",
        metavar="FILE",
        help="JSON options, e.g. a run's config.json or the best "
        "configuration `tfrec-tricks tune` writes; flags given on the "
        "command line override it",
    )

    out = parser.add_argument_group("output")
    out.add_argument(
        "--output-dir",
        default="runs",
        help="parent folder of run directories. Default: runs",
    )
    out.add_argument(
        "--name",
        type=_run_name,
        help="run directory name, one folder name inside OUTPUT_DIR (no "
        "'/' or '..'). Default: the data source name",
    )
    out.add_argument(
        "--quiet",
        action="store_true",
        help="no progress bar, only the final table",
    )


def _add_overwrite_argument(parser: argparse.ArgumentParser) -> None:
    parser.add_argument(
        "--overwrite",
        action="store_true",
        help="discard what OUTPUT_DIR/NAME holds (a finished run, or a run "
        "with other settings) and train afresh. Without it, the same "
        "settings resume an interrupted run or reuse a finished one, and "
        "other settings are refused",
    )


EXPORT_DESCRIPTION = """\
Export a trained run as a SavedModel for TF Serving: BASE_PATH/NAME/VERSION/
(written to a temporary folder and renamed, so a running server never sees
half a version), with signatures `serving_default` (raw item ids of the
history -> top-K raw item ids and scores) and `score_candidates`, TF Serving
warmup requests, the model's entry in BASE_PATH/models.config and a REST
request example BASE_PATH/NAME.request.json.

examples:
  tfrec-tricks export runs/synthetic --name recommender
  tfrec-tricks export runs/ml-1m --name ml1m --version 3 --k 20
"""


def _add_export_arguments(parser: argparse.ArgumentParser) -> None:
    parser.add_argument(
        "run_dir", metavar="RUN_DIR", help="a finished training run"
    )
    parser.add_argument(
        "--name",
        required=True,
        type=_model_name,
        help="model name: TF Serving's URL name and the folder of its "
        "versions in BASE_PATH (a letter or digit, then letters, digits, "
        "'_', '.' or '-')",
    )
    parser.add_argument(
        "--version",
        type=_positive_int,
        metavar="N",
        help="version number. Default: the next free one",
    )
    parser.add_argument(
        "--k",
        type=_positive_int,
        default=10,
        help="items returned per request. Default: 10",
    )
    parser.add_argument(
        "--base-path",
        default="saved_models",
        metavar="DIR",
        help="folder of the served models. Default: saved_models",
    )
    parser.add_argument(
        "--scoring",
        choices=("auto", "index", "full"),
        default="auto",
        help="top-k index (+ CPR re-scoring) or full-catalogue logits. "
        "Default: auto (index, except for MoS)",
    )


def _add_tune_arguments(parser: argparse.ArgumentParser) -> None:
    """The options of ``tune`` beyond ``train``'s (data, model, output)."""
    parser.description = """\
Search with KerasTuner over the techniques (output head, CPR partitions,
reranker sizes, Mi, tied embeddings, SSE probabilities, soft one-hot
features and buckets) and the usual settings (encoder, embedding size,
layers, dropout, learning rate, batch size), maximising validation NDCG@10.
Each trial trains for at most --epochs epochs (early stopping after
--patience epochs without progress).

Model options and --batch-size / --learning-rate given on the command line
(or by --config) are fixed; the others are searched. --choices narrows one
setting to a list.

Writes OUTPUT_DIR/NAME/: best_config.json (`tfrec-tricks train --config`
accepts it), trials.md (table), trials.png (score per trial), tensorboard/
(hparams) and search/ (KerasTuner's project). An interrupted search resumes
when the same command runs again (completed trials are kept); --overwrite
starts afresh.

Distributed: run the same command on every machine with
KERASTUNER_ORACLE_IP, KERASTUNER_ORACLE_PORT and KERASTUNER_TUNER_ID set
(one process with KERASTUNER_TUNER_ID=chief serves the oracle and writes the
reports; the workers, e.g. tuner0, tuner1, ... run the trials) and
OUTPUT_DIR on a shared file system.

examples:
  tfrec-tricks tune --max-trials 20
  tfrec-tricks tune --data ml-100k --tuner bayesian --max-trials 30
  tfrec-tricks tune --tuner hyperband --epochs 27 --head cpr \\
      --choices embedding_dim=32,64 --choices "cpr_reranker_ks=none;20;100"
"""
    parser.set_defaults(
        output_dir="tuning", batch_size=None, learning_rate=None
    )
    group = parser.add_argument_group("search")
    group.add_argument(
        "--tuner",
        choices=("random", "bayesian", "hyperband"),
        default="random",
        help="KerasTuner's RandomSearch, BayesianOptimization or Hyperband "
        "(its largest budget is --epochs). Default: random",
    )
    group.add_argument(
        "--max-trials",
        type=_positive_int,
        default=10,
        metavar="N",
        help="trials to run (Hyperband: at most). Default: 10",
    )
    group.add_argument(
        "--choices",
        action="append",
        metavar="NAME=V1,V2",
        help="search NAME over these values only (repeatable); tuple "
        "settings separate values with ';', e.g. "
        "'cpr_reranker_ks=none;20;20,100'",
    )
    group.add_argument(
        "--overwrite",
        action="store_true",
        help="discard an earlier search in the same folder instead of "
        "resuming it",
    )


def _run_tune(args: argparse.Namespace) -> int:
    from tfrec_tricks.tuning.search import parse_choices, run_search

    fixed = {
        name: getattr(args, name)
        for name in ("batch_size", "learning_rate")
        if getattr(args, name) is not None
    }
    # The search folder is --output-dir; the best configuration's runs go
    # to train's default folder.
    values = dict(vars(args), batch_size=128, learning_rate=1e-3)
    values["output_dir"] = "runs"
    config = _train_config(argparse.Namespace(**values))
    result = run_search(
        config,
        tuner=args.tuner,
        max_trials=args.max_trials,
        output_dir=args.output_dir,
        fixed=fixed,
        hyperparameters=parse_choices(args.choices),
        overwrite=args.overwrite,
        verbose=0 if args.quiet else None,
    )
    if result.role == "worker":
        print(
            f"Worker finished; the chief writes the reports to "
            f"{result.output_dir}."
        )
    elif args.quiet:
        from tfrec_tricks.tuning.search import format_summary

        print(
            format_summary(
                result.trials,
                result.best_config,
                result.output_dir,
                result.hypermodel.objective.name,
                result.seconds,
            )
        )
    return 0


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
    _add_overwrite_argument(train)
    ablation = commands.add_parser(
        "ablation",
        help="train the paper's variants with one budget; table and chart",
        description=ABLATION_DESCRIPTION,
        formatter_class=argparse.RawDescriptionHelpFormatter,
    )
    _add_train_arguments(ablation)
    _add_overwrite_argument(ablation)
    _add_ablation_arguments(ablation)
    export = commands.add_parser(
        "export",
        help="export a trained run for TF Serving",
        description=EXPORT_DESCRIPTION,
        formatter_class=argparse.RawDescriptionHelpFormatter,
    )
    _add_export_arguments(export)
    tune = commands.add_parser(
        "tune",
        help="search the techniques and settings with KerasTuner",
        formatter_class=argparse.RawDescriptionHelpFormatter,
    )
    _add_train_arguments(tune)
    _add_tune_arguments(tune)
    # Commands whose options a --config file can supply.
    parser.command_parsers = {
        "train": train,
        "ablation": ablation,
        "tune": tune,
    }
    return parser


TRAIN_OPTIONS = (
    "data",
    "data_path",
    "file_format",
    "tfds_data_dir",
    "tfds_manual_dir",
    "synthetic_users",
    "synthetic_items",
    "min_user_interactions",
    "min_item_interactions",
    "split",
    "max_len",
    "epochs",
    "batch_size",
    "learning_rate",
    "patience",
    "bucket_by_length",
    "every_position",
    "steps_per_execution",
    "seed",
    "output_dir",
    "name",
)
MODEL_OPTIONS = (
    "encoder",
    "embedding_dim",
    "num_layers",
    "num_heads",
    "dropout",
    "attention_dropout",
    "ffn_dim",
    "head_dropout",
    "tie_embeddings",
    "output_bias",
    "sse_item_probability",
    "sse_label_probability",
    "sse_graph_rho",
    "features",
    "soft_one_hot_buckets",
    "head",
    "cpr_context",
    "cpr_pointer",
    "cpr_reranker_ks",
    "cpr_mi",
    "cpr_merge",
    "cpr_start_as_softmax",
    "mos_components",
    "objective",
    "num_hard_negatives",
)
# Model-config fields that come from the data or the training options.
DERIVED_MODEL_FIELDS = ("num_items", "max_len", "learning_rate")


def load_config_file(path: str) -> dict:
    """Reads a run's config.json (or tune's best config) as option values.

    Accepts ``{"train": {...}, "model": {...}}`` (what ``train`` writes into
    its run directory and ``tune`` writes as its best configuration). Keys
    and value types are checked here, value ranges by ``TrainConfig`` and
    ``ModelConfig``; every error names the file.

    Raises:
        DataError: naming the file and what is wrong with it.
    """
    from tfrec_tricks.errors import DataError
    from tfrec_tricks.models.config import ModelConfig
    from tfrec_tricks.training import TrainConfig
    from tfrec_tricks.typed_fields import describe_type, value_has_type

    try:
        with open(path, "rb") as handle:
            raw = handle.read()
    except FileNotFoundError:
        raise DataError(f"Config file not found. Received: --config {path}")
    except OSError as error:
        raise DataError(
            f"Cannot read the config file ({error.strerror}). Received: "
            f"--config {path}"
        ) from None
    try:
        text = raw.decode("utf-8")
    except UnicodeDecodeError as error:
        raise DataError(
            f"{path}: not a JSON text file (byte {error.start} is "
            f"{raw[error.start]:#04x}, not UTF-8). Received: --config {path}"
        ) from None
    try:
        document = json.loads(text)
    except json.JSONDecodeError as error:
        raise DataError(
            f"{path}:{error.lineno}: not valid JSON ({error.msg})"
        ) from None
    if not isinstance(document, dict) or not (
        set(document) <= {"train", "model"}
    ):
        raise DataError(
            f"{path}: expected an object with 'train' and/or 'model'. "
            f"Received: {str(document)[:80]}"
        )
    train = document.get("train", {})
    if not isinstance(train, dict):
        raise DataError(
            f"{path}: 'train' must be an object of training options. "
            f"Received: train={str(train)[:80]}"
        )
    values = dict(train)
    parts = {
        "train.model": values.pop("model", None),
        "model": document.get("model"),
    }
    for where, part in parts.items():
        if part is not None and not isinstance(part, dict):
            raise DataError(
                f"{path}: '{where}' must be an object of model options. "
                f"Received: {where}={str(part)[:80]}"
            )
    model = {**(parts["train.model"] or {}), **(parts["model"] or {})}
    for name in DERIVED_MODEL_FIELDS:
        model.pop(name, None)
    fields = {
        "train": {f.name: f.type for f in dataclasses.fields(TrainConfig)},
        "model": {
            f.name: f.type
            for f in dataclasses.fields(ModelConfig)
            if f.name not in DERIVED_MODEL_FIELDS
        },
    }
    for part, options in (("train", values), ("model", model)):
        known = {n: t for n, t in fields[part].items() if n != "model"}
        unknown = sorted(set(options) - set(known))
        if unknown:
            label = "training" if part == "train" else "model"
            raise DataError(
                f"{path}: unknown {label} options {unknown}. Known: "
                f"{sorted(known)}"
            )
        for name, value in options.items():
            if not value_has_type(value, known[name]):
                raise DataError(
                    f"{path}: {part}.{name} must be "
                    f"{describe_type(known[name])}. Received: "
                    f"{name}={value!r}"
                )
    # Value ranges, with the file named; the catalogue size is not known
    # yet, so reranker sizes are checked against the data later.
    try:
        TrainConfig(**values)
        ModelConfig(num_items=2**31 - 1, **model)
    except ValueError as error:
        raise DataError(f"{path}: {error}") from None
    return {"train": values, "model": model}


def _train_config(args: argparse.Namespace):
    from tfrec_tricks.training import TrainConfig

    train_values = {name: getattr(args, name) for name in TRAIN_OPTIONS}
    model_values = dict(args.config_model)
    model_values.update(
        {
            name: getattr(args, name)
            for name in MODEL_OPTIONS
            if getattr(args, name) is not None
        }
    )
    return TrainConfig(**train_values, model=model_values)


def _run_train(args: argparse.Namespace) -> int:
    from tfrec_tricks.training import format_results, train

    config = _train_config(args)
    result = train(
        config, verbose=0 if args.quiet else None, overwrite=args.overwrite
    )
    if args.quiet:
        print(format_results(result.metrics, result.run_dir))
    return 0


def _parse(parser: argparse.ArgumentParser, argv) -> argparse.Namespace:
    """Parses ``argv``; a --config file supplies defaults that flags beat."""
    args = parser.parse_args(argv)
    args.config_model = {}
    if getattr(args, "config", None):
        values = load_config_file(args.config)
        parser.command_parsers[args.command].set_defaults(**values["train"])
        args = parser.parse_args(argv)
        args.config_model = values["model"]
    return args


ABLATION_DESCRIPTION = """\
Train the variants of Chang et al. (2024)'s ablation on one data set with one
encoder, the same seed and the same budget: Softmax, Softmax + Mi, + C, + CP,
+ CPR:100, + CPR:100 + Mi, + CPR:20,100,500 + Mi, MoS, Softmax w/o
duplication (and, with --rows, untied embeddings, SSE, soft one-hot time
gap, CPR:100 + Mi with partition logits added to the base logit). Each
variant gets the same dropout sweep (--dropouts), is selected on
validation NDCG@10 and reported on test. Writes ablation.md (table),
ablation.json and ablation.png (chart) to --report-dir. All training options
apply to every variant.

examples:
  tfrec-tricks ablation --data yoochoose-100k --encoder sasrec
  tfrec-tricks ablation --rows Softmax "Softmax + CPR:100 + Mi" --epochs 5
"""


def _add_ablation_arguments(parser: argparse.ArgumentParser) -> None:
    from tfrec_tricks.ablation import PAPER_ROWS, ROWS

    group = parser.add_argument_group("ablation")
    group.add_argument(
        "--rows",
        nargs="+",
        choices=list(ROWS),
        metavar="ROW",
        default=list(PAPER_ROWS),
        help="variants to train, from: "
        + "; ".join(ROWS)
        + ". Default: the paper's nine",
    )
    group.add_argument(
        "--dropouts",
        nargs="+",
        type=_dropout,
        default=[0.2, 0.5],
        metavar="P",
        help="dropout sweep for every variant. Default: 0.2 0.5",
    )
    group.add_argument(
        "--report-dir",
        metavar="DIR",
        help="where the table and chart go. Default: OUTPUT_DIR/NAME-ablation",
    )


def _run_ablation(args: argparse.Namespace) -> int:
    from tfrec_tricks.ablation import format_table, run_ablation, write_report

    base = _train_config(args)
    rows = run_ablation(
        base,
        args.rows,
        tuple(args.dropouts),
        verbose=0 if args.quiet else 2,
        overwrite=args.overwrite,
    )
    report_dir = args.report_dir or os.path.join(
        base.output_dir, f"{base.run_name}-ablation"
    )
    encoder = base.model.get("encoder", "gru4rec")
    paths = write_report(
        rows,
        report_dir,
        f"{base.data}, {encoder}: ablation",
        shlex.join(["tfrec-tricks", *sys.argv[1:]]),
    )
    print(format_table(rows))
    print(f"\nTable: {paths['md']}\nChart: {paths['png']}")
    return 0


def _run_export(args: argparse.Namespace) -> int:
    from tfrec_tricks.run_directory import check_finished_run

    # The run must be finished and whole before anything is loaded.
    check_finished_run(args.run_dir)

    from tfrec_tricks.export import export_for_serving
    from tfrec_tricks.training import load_model

    vocabulary = os.path.join(args.run_dir, "vocabulary.json")
    model = load_model(args.run_dir)
    path = export_for_serving(
        model,
        os.path.join(args.base_path, args.name),
        vocabulary,
        version=args.version,
        k=args.k,
        scoring=args.scoring,
    )
    root = os.path.abspath(args.base_path)
    print(
        f"Exported {path}\nServe it:\n  docker run -p 8501:8501 "
        f"-v {root}:/models tensorflow/serving "
        "--model_config_file=/models/models.config\n"
        f"  curl -d @{args.base_path}/{args.name}.request.json "
        f"http://localhost:8501/v1/models/{args.name}:predict"
    )
    return 0


def main(argv: list[str] | None = None) -> int:
    parser = build_parser()
    args = parser.parse_args(argv)
    if args.command is None:
        parser.print_help()
        return 2
    try:
        args = _parse(parser, argv)
        if args.command == "train":
            return _run_train(args)
        if args.command == "ablation":
            return _run_ablation(args)
        if args.command == "export":
            return _run_export(args)
        if args.command == "tune":
            return _run_tune(args)
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
