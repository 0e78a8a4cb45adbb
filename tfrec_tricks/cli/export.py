"""``tfrec-tricks export``: a finished run as a SavedModel for TF Serving."""

import argparse
import os
from typing import Any

from tfrec_tricks.cli.options import positive_int

# tfrec_tricks.export.onnx_support.FORMATS, spelled here: importing the
# export package at parse time would refuse every command under Keras 3.
FORMATS = ("savedmodel", "onnx")

HELP = "export a trained run for TF Serving (or onnxruntime)"
USES_CONFIG = False
DESCRIPTION = """\
Export a trained run as a SavedModel for TF Serving: BASE_PATH/NAME/VERSION/
(written to a temporary folder and renamed, so a running server never sees
half a version), with signatures `serving_default` (raw item ids of the
history -> top-K raw item ids and scores), `recommend_filtered` (the same
with a request's own filters: items to rank last, its k, the history ranked
last or not) and `score_candidates`, TF Serving warmup requests, the model's
entry in BASE_PATH/models.config and REST request examples
BASE_PATH/NAME.request.json and BASE_PATH/NAME.filtered_request.json.

--format onnx writes the scoring path of `serving_default` (raw-id
histories -> top-K raw ids and scores; the logits over the catalogue for
softmax_no_dup) as BASE_PATH/NAME/VERSION/model.onnx for onnxruntime,
checked with onnxruntime against TensorFlow before it is published
(pip install tfrec_tricks[onnx]; models.config is not touched).

--add-items FILE exports the run's catalogue plus the items of FILE (a RecBole
.item file) that are not in it, ranked by their attributes, without
retraining (the run must have item features); the old items' scores are
unchanged.

examples:
  tfrec-tricks export runs/synthetic --name recommender
  tfrec-tricks export runs/ml-1m --name ml1m --version 3 --k 20
  tfrec-tricks export runs/shop --name shop --add-items new-products.item
  tfrec-tricks export runs/synthetic --name recommender-onnx --format onnx
"""


def _version(text: str) -> int:
    """A version number: a positive integer that fits in int64
    (``check_version``, as ``Recommender.export`` checks it).

    >>> _version("9223372036854775808")
    Traceback (most recent call last):
    ...
    argparse.ArgumentTypeError: `version` must be at most 9223372036854775807 (TF Serving reads versions as int64). Received: version=9223372036854775808
    """  # noqa: E501
    from tfrec_tricks.export.models_config import check_version

    value = positive_int(text)
    try:
        return check_version(value)
    except ValueError as error:
        raise argparse.ArgumentTypeError(str(error)) from None


def _model_name(text: str) -> str:
    from tfrec_tricks.export.models_config import check_model_name

    try:
        return check_model_name(text)
    except ValueError as error:
        raise argparse.ArgumentTypeError(str(error)) from None


def add_arguments(parser: argparse.ArgumentParser) -> None:
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
        type=_version,
        metavar="N",
        help="version number, 1 to 2**63 - 1 (int64). Default: the next "
        "free one",
    )
    parser.add_argument(
        "--k",
        type=positive_int,
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
    parser.add_argument(
        "--format",
        choices=FORMATS,
        default="savedmodel",
        help="savedmodel: a SavedModel for TF Serving; onnx: the scoring "
        "path as BASE_PATH/NAME/VERSION/model.onnx for onnxruntime (pip "
        "install tfrec_tricks[onnx]). Default: savedmodel",
    )
    parser.add_argument(
        "--add-items",
        metavar="FILE",
        help="a RecBole .item file: its items that are not in the run's "
        "catalogue join it (ranked by their attributes, not retrained; "
        "the old items keep their scores and attributes). Needs a run "
        "trained with item features",
    )


def check(args: argparse.Namespace) -> None:
    """What ``run`` refuses first, checked before TensorFlow loads
    (``cli.main``): with ``--format onnx``, ``--scoring index`` and
    missing ONNX packages (``onnx_support``); a run directory that is
    missing, not a finished run or not whole (``check_finished_run``). The
    rest (the model, ``--add-items``, ``--base-path``) is checked by
    ``run``, with the model loaded."""
    from tfrec_tricks.training.run_directory import check_finished_run

    if args.format == "onnx":
        from tfrec_tricks.export.onnx_support import (
            check_onnx_scoring,
            require_onnx_packages,
        )

        check_onnx_scoring(args.scoring)
        require_onnx_packages()
    check_finished_run(args.run_dir)


def run(args: argparse.Namespace) -> int:
    from tfrec_tricks.training.run_directory import check_finished_run

    # Again, though ``check`` passed it: the run may have changed while
    # TensorFlow loaded, and the record read here is the one exported.
    run_record = check_finished_run(args.run_dir)

    from tfrec_tricks.errors import writes_named
    from tfrec_tricks.export import export_for_serving
    from tfrec_tricks.export.model_identity import ModelIdentity
    from tfrec_tricks.training.persistence import load_model

    # The version records the model it holds: recommend --saved-model
    # refuses it once the run holds another.
    identity = ModelIdentity.of_run(args.run_dir, run_record)
    vocabulary = os.path.join(args.run_dir, "vocabulary.json")
    model = load_model(args.run_dir)
    inputs = (args.run_dir,)
    added = ""
    if args.add_items is not None:
        # Every refusal comes before anything is written.
        extended = _with_added_items(args.run_dir, model, args.add_items)
        model, vocabulary = extended.model, extended.items
        inputs += (args.add_items,)
        added = _added_summary(extended, args.add_items)
        identity = identity.with_added_items(
            args.add_items, len(extended.added)
        )
    if args.format == "onnx":
        return _run_onnx(args, model, vocabulary, inputs, identity, added)
    # --base-path holds all it writes: the version, models.config and the
    # request example.
    with writes_named(args.base_path):
        path = export_for_serving(
            model,
            os.path.join(args.base_path, args.name),
            vocabulary,
            version=args.version,
            k=args.k,
            scoring=args.scoring,
            inputs=inputs,
            identity=identity,
        )
    root = os.path.abspath(args.base_path)
    print(
        f"Exported {path}{added}\nServe it:\n  docker run -p 8501:8501 "
        f"-v {root}:/models tensorflow/serving "
        "--model_config_file=/models/models.config\n"
        f"  curl -d @{args.base_path}/{args.name}.request.json "
        f"http://localhost:8501/v1/models/{args.name}:predict"
    )
    return 0


def _run_onnx(
    args: argparse.Namespace,
    model: Any,
    vocabulary: Any,
    inputs: tuple,
    identity: Any,
    added: str,
) -> int:
    """``run`` for ``--format onnx``: ``export_onnx``, then how to run it."""
    from tfrec_tricks.errors import writes_named
    from tfrec_tricks.export.onnx_export import ONNX_FILE, export_onnx

    # --base-path holds all it writes: the model's folder of versions.
    with writes_named(args.base_path):
        path = export_onnx(
            model,
            os.path.join(args.base_path, args.name),
            vocabulary,
            version=args.version,
            k=args.k,
            inputs=inputs,
            identity=identity,
        )
    model_file = os.path.join(path, ONNX_FILE)
    print(
        f"Exported {model_file}{added}\nRun it with onnxruntime:\n"
        f"  onnxruntime.InferenceSession({model_file!r}).run(None, "
        '{"history": numpy.array([[...raw ids...]], dtype=object)})'
    )
    return 0


def _with_added_items(run_dir: str, model: Any, item_file: str) -> Any:
    """``extend_catalogue`` of the run's model with ``item_file``'s items,
    encoded with the run's vocabularies (``item_features.json``)."""
    from tfrec_tricks.export.catalogue_extension import (
        check_extensible,
        extend_catalogue,
        load_feature_specs,
    )
    from tfrec_tricks.training.run_directory import ITEM_FEATURES_FILE

    try:
        check_extensible(model.config)
    except ValueError as error:
        raise ValueError(f"{run_dir}: {error}") from None
    specs = load_feature_specs(os.path.join(run_dir, ITEM_FEATURES_FILE))
    return extend_catalogue(
        model, os.path.join(run_dir, "vocabulary.json"), specs, item_file
    )


def _added_summary(extended: Any, item_file: str) -> str:
    """The lines ``run`` prints about the added items."""
    total = len(extended.items) - 1
    text = (
        f"\nAdded {len(extended.added)} items of {item_file} "
        f"({total - len(extended.added)} -> {total} items), ranked by "
        "their attributes"
    )
    if extended.kept:
        text += (
            "; already in the catalogue, so left as trained: "
            f"{len(extended.kept)} of its items"
        )
    return text
