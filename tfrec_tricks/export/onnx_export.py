"""Export a trained model's scoring path as an ONNX model (onnxruntime).

``export_onnx`` writes ``<base_path>/<version>/model.onnx``: the scoring
path of ``serving_default`` (raw-id histories in, the top-K raw ids and
scores out; or the logits over the catalogue, see ``OnnxScoringModule``),
converted by tf2onnx and checked with onnxruntime against the model in
TensorFlow before it is published. The layout is the model repository of
Triton Inference Server (``<name>/<version>/model.onnx``); onnxruntime
reads the file alone.
"""

import contextlib
import json
import logging
import os
from collections.abc import Iterator
from typing import Any

import numpy as np
import tensorflow as tf

from tfrec_tricks import ownership
from tfrec_tricks.atomic_files import (
    make_folders,
    publish_directory,
    remove_empty_folders,
)
from tfrec_tricks.export.export_for_serving import (
    MODEL_VERSIONS,
    checked_base_path,
    example_instances,
    next_version,
)
from tfrec_tricks.export.model_identity import ModelIdentity, write_identity
from tfrec_tricks.export.models_config import check_version
from tfrec_tricks.export.onnx_scoring_module import OnnxScoringModule
from tfrec_tricks.export.onnx_support import require_onnx_packages
from tfrec_tricks.export.serving_module import (
    ServingModule,
    load_item_vocabulary,
)
from tfrec_tricks.output_folders import target_lock

#: The file of a version, as Triton's model repository names it.
ONNX_FILE = "model.onnx"
#: Beside a ``logits`` model: the raw id of each column, a JSON list.
ITEM_IDS_FILE = "item_ids.json"
#: ONNX opset of the converted model: onnxruntime >= 1.13 runs it.
ONNX_OPSET = 17
#: The largest difference of a score (or logit) between onnxruntime and
#: TensorFlow that the export accepts.
TOLERANCE = 1e-5


def export_onnx(
    model: Any,
    base_path: str,
    vocabulary: Any,
    version: int | None = None,
    k: int = 10,
    inputs: tuple[str, ...] = (),
    identity: ModelIdentity | None = None,
) -> str:
    """Writes ``<base_path>/<version>/model.onnx``, checked with onnxruntime.

    The ONNX model is ``OnnxScoringModule`` converted by tf2onnx
    (opset ``ONNX_OPSET``). Inputs: ``history`` (string ``[batch,
    length]``, raw item ids in time order, padded with ``""``), one float
    ``[batch, length]`` input per feature of the model (e.g. ``time_gap``,
    NaN where unknown), one string ``[batch, length]`` input per token
    feature. Outputs: ``item_ids`` (string ``[batch, k]``, best first) and
    ``scores`` (float32 ``[batch, k]``); for a model that ranks the history
    last (``softmax_no_dup``), ``logits`` (float32 ``[batch, num_items]``,
    column ``j`` the raw id ``j`` of ``<version>/item_ids.json``). The
    model's ``metadata_props`` name the output kind, ``k`` and the head.

    Before anything is published, onnxruntime answers example requests
    (the REST examples' histories, an unknown id, an empty history) and
    each answer must be TensorFlow's (``ServingModule``, as the SavedModel
    serves): the same ids, the scores within ``TOLERANCE``. The version is
    written into a hidden staging folder and renamed when whole, as
    ``export_for_serving`` does; ``models.config`` (TF Serving) is not
    touched. With ``identity``, ``<version>/assets.extra/
    tfrec_tricks_model.json`` records the model (``model_identity``).

    Args:
        model: a trained ``tfrec_tricks.models.SequentialRetrievalModel``.
        base_path: str. The model's folder of versions, e.g.
            ``saved_models/<name>``: its last component is the model's
            name. It may not hold SavedModel versions: TF Serving serves
            the latest version of a folder, which it could not load.
        vocabulary: the run's vocabulary (see ``load_item_vocabulary``).
        version: int or None. Version number; None takes the next free
            one. Defaults to None.
        k: int. Items per row, at most the catalogue's ``num_items - 1``.
            Defaults to 10.
        inputs: paths the export reads: ``base_path`` may not be, contain
            or lie inside one. Defaults to none.
        identity: ``ModelIdentity`` or None. Defaults to None.

    Returns:
        str, the path of the written version folder.

    Raises:
        ImportError: tf2onnx, onnx or onnxruntime is not installed (the
            message names ``pip install tfrec_tricks[onnx]``).
        ValueError: a bad name, ``k``, ``version`` or ``identity``; a
            folder holding SavedModel versions; an existing version; or
            onnxruntime's answers differ from TensorFlow's. Nothing is
            written then.
    """
    require_onnx_packages()
    base_path, root = checked_base_path(base_path, model, k, identity, inputs)
    with target_lock(base_path, MODEL_VERSIONS):
        _refuse_saved_models(base_path)
        if version is None:
            version = next_version(base_path)
        check_version(version)
        target = os.path.join(base_path, str(version))
        if os.path.exists(target):
            raise ValueError(
                f"Version {version} of {os.path.basename(base_path)!r} "
                f"exists already at {target}; versions are immutable once "
                f"served. Received: version={version}"
            )
        items = load_item_vocabulary(vocabulary)
        module = OnnxScoringModule(model, items, k=k)
        proto = convert_to_onnx(module)
        check_onnx_answers(proto, module, ServingModule(model, items, k=k))
        return _publish(base_path, target, proto, module, items, identity)


def convert_to_onnx(module: OnnxScoringModule) -> Any:
    """``module``'s scoring path as an ONNX ``ModelProto`` (in memory).

    tf2onnx's ``from_keras`` is the entry of tf2onnx 1.17 that finds the
    lookup tables of a traced ``tf.Module`` (``tf_loader.from_trackable``);
    ``from_function`` does not ("Could not determine table shared name").
    Three ops get a handler of their own, each the ONNX ops of its
    definition, through tf2onnx's ``custom_op_handlers``:

    - ``SelectV2`` (``tf.where``) as ONNX ``Where``: tf2onnx turns a float
      ``tf.where(c, x, y)`` into ``c * x + (1 - c) * y``, which is NaN
      wherever the branch not taken is NaN or infinite (``0 * NaN``): a
      missing time gap (NaN) at a padded position, masked by the serving
      path and the soft one-hot encoding, poisoned the whole row.
    - ``Log1p`` (a time gap's ``log1p`` normalisation), which tf2onnx
      does not know, as ``Log(1 + x)``.
    - ``Erfc`` (SASRec's exact GELU), which tf2onnx does not know, as
      ``1 - Erf(x)``.

    The float32 differences of the last two stay far below ``TOLERANCE``
    in the scores (``check_onnx_answers`` checks every export).

    Args:
        module: an ``OnnxScoringModule``.

    Returns:
        ``onnx.ModelProto`` with named dimensions (``batch``, ``length``)
        and ``metadata_props`` (output kind, ``k``, head, ``max_len``).

    Raises:
        ValueError: the model's scoring path holds TensorFlow ops tf2onnx
            cannot convert (a head or encoder of one's own), named.
    """
    import tf2onnx

    specs = module.input_signature()
    with _quiet_converter():
        proto, _ = tf2onnx.convert.from_keras(
            module,
            input_signature=list(specs.values()),
            opset=ONNX_OPSET,
            custom_op_handlers={
                "SelectV2": (_where, []),
                "Log1p": (_log1p, []),
                "Erfc": (_erfc, []),
            },
        )
    _refuse_unconverted(proto, module.model.config)
    for value in proto.graph.input:
        _name_dimensions(value, ("batch", "length"))
    for value in proto.graph.output:
        _name_dimensions(value, ("batch",))
    config = module.model.config
    metadata = {
        "tfrec_tricks.outputs": module.output_kind,
        "tfrec_tricks.k": str(module.k),
        "tfrec_tricks.head": config.head,
        "tfrec_tricks.max_len": str(config.max_len),
        "tfrec_tricks.num_items": str(config.num_items),
    }
    for key, value in metadata.items():
        entry = proto.metadata_props.add()
        entry.key, entry.value = key, value
    return proto


def check_onnx_answers(
    proto: Any, module: OnnxScoringModule, served: ServingModule
) -> float:
    """Raises ValueError unless onnxruntime answers as TensorFlow does.

    The requests: the REST examples' histories (with their features and
    token values), a history of an unknown id and an empty one. For
    ``"top_k"`` the reference is ``served.recommend`` (the SavedModel's
    ``serving_default``): the same ids (but where two scores of a row are
    within ``TOLERANCE`` of each other, a tie either runtime may break)
    and every score within ``TOLERANCE``; for ``"logits"`` ``module``'s
    own logits in TensorFlow, within ``TOLERANCE``.

    Args:
        proto: the converted ``onnx.ModelProto``.
        module: the ``OnnxScoringModule`` it was converted from.
        served: a ``ServingModule`` of the same model, vocabulary and k.

    Returns:
        float, the largest difference of a score (or logit).

    Raises:
        ValueError: naming the largest difference, or the rows whose ids
            differ.
    """
    import onnxruntime

    session = onnxruntime.InferenceSession(
        proto.SerializeToString(), providers=["CPUExecutionProvider"]
    )
    requests = _check_requests(module)
    answers = dict(
        zip(
            [output.name for output in session.get_outputs()],
            session.run(None, {n: _onnx_value(v) for n, v in requests.items()}),
        )
    )
    tensors = {name: tf.constant(value) for name, value in requests.items()}
    if module.output_kind == "logits":
        expected = module.score(**tensors)["logits"].numpy()
        difference = float(np.max(np.abs(answers["logits"] - expected)))
    else:
        reference = served.recommend(**tensors)
        expected = reference["scores"].numpy()
        difference = float(np.max(np.abs(answers["scores"] - expected)))
        ids = reference["item_ids"].numpy().astype(str)
        differ = answers["item_ids"].astype(str) != ids
        rows = sorted(
            set(np.flatnonzero((differ & ~_near_ties(expected)).any(1)))
        )
        if rows:
            raise ValueError(
                "The ONNX model ranks other items than TensorFlow: rows "
                f"{rows} of the check requests differ. Received: ONNX "
                f"{answers['item_ids'][rows[0]].tolist()}, TensorFlow "
                f"{ids[rows[0]].tolist()}"
            )
    if not difference <= TOLERANCE:
        raise ValueError(
            "The ONNX model's scores differ from TensorFlow's by more than "
            f"{TOLERANCE}. Received: a largest difference of {difference}"
        )
    return difference


def _refuse_unconverted(proto: Any, config: Any) -> None:
    """Raises ValueError naming the nodes tf2onnx left as TensorFlow ops
    (it converts what it can and keeps the rest, which onnxruntime then
    refuses to load)."""
    import onnx

    unknown = sorted(
        {
            node.op_type
            for node in proto.graph.node
            if not onnx.defs.has(node.op_type, node.domain)
        }
    )
    if unknown:
        raise ValueError(
            "tf2onnx cannot convert the TensorFlow ops "
            f"{', '.join(unknown)} of this model (head {config.head!r}, "
            f"encoder {config.encoder!r}): tf2onnx has no handler for them. "
            "Export it with --format savedmodel. Received: a scoring path "
            "that holds them"
        )


def _near_ties(scores: np.ndarray) -> np.ndarray:
    """Which places of rows of descending ``scores`` a near-tie may swap:
    a neighbour within ``TOLERANCE``, or the last place (tied, maybe,
    with the first item left out)."""
    close = np.abs(np.diff(scores, axis=1)) <= TOLERANCE
    tied = np.zeros(scores.shape, bool)
    tied[:, 1:] |= close
    tied[:, :-1] |= close
    tied[:, -1] = True
    return tied


def _check_requests(module: OnnxScoringModule) -> dict:
    """``check_onnx_answers``' inputs: name -> numpy ``[B, L]``."""
    items = module.raw_item_ids.numpy().astype(str).tolist()
    tokens = {
        feature["name"]: list(feature["vocabulary"])
        for feature in module.model.config.token_features
    }
    rows = example_instances(
        items, module.feature_names, module.max_len, 4, tokens
    )
    width = len(rows[0]["history"])
    unknown = ["<unknown item>", items[1]] + [""] * (width - 2)
    for history in (unknown, [""] * width):
        rows.append(
            {
                "history": history,
                **{
                    n: [np.nan] + [0.0] * (width - 1)
                    for n in module.feature_names
                },
                **{n: ["<unknown>"] + [""] * (width - 1) for n in tokens},
            }
        )
    return {
        name: np.asarray(
            [row[name] for row in rows],
            np.float32 if name in module.feature_names else str,
        )
        for name in module.input_signature()
    }


def _onnx_value(value: np.ndarray) -> np.ndarray:
    # onnxruntime takes strings as numpy objects.
    return value.astype(object) if value.dtype.kind == "U" else value


def _publish(
    base_path: str,
    target: str,
    proto: Any,
    module: OnnxScoringModule,
    items: list,
    identity: ModelIdentity | None,
) -> str:
    """Publishes the version folder whole, as ``export_for_serving``."""

    def write(staging: str) -> None:
        with open(os.path.join(staging, ONNX_FILE), "wb") as handle:
            handle.write(proto.SerializeToString())
        if module.output_kind == "logits":
            with open(os.path.join(staging, ITEM_IDS_FILE), "w") as handle:
                json.dump(items, handle)
                handle.write("\n")
        if identity is not None:
            write_identity(staging, identity.record())

    created = make_folders(base_path)
    try:
        ownership.start_record(base_path, MODEL_VERSIONS.name)
        publish_directory(target, write, kind="model version")
    except BaseException:
        if created:
            with contextlib.suppress(OSError, ValueError):
                ownership.remove_owned(base_path)
        remove_empty_folders(created)
        raise
    return target


def _refuse_saved_models(base_path: str) -> None:
    """Refuses a folder of versions that holds a SavedModel version."""
    if not os.path.isdir(base_path):
        return
    saved = sorted(
        (int(entry) for entry in os.listdir(base_path)
         if entry.isdigit() and os.path.isfile(
             os.path.join(base_path, entry, "saved_model.pb"))),
    )  # fmt: skip
    if saved:
        raise ValueError(
            f"{base_path!r} holds SavedModel versions for TF Serving, "
            "which serves a folder's latest version: an ONNX version "
            "there would be one it cannot load. Export the ONNX model "
            "under another --name (e.g. "
            f"{os.path.basename(base_path)}-onnx). Received: SavedModel "
            f"versions {saved}"
        )


def _name_dimensions(value: Any, names: tuple) -> None:
    """Names the leading unnamed dimensions of an ONNX input or output."""
    dims = value.type.tensor_type.shape.dim
    for dim, name in zip(dims, names):
        if not dim.HasField("dim_value"):
            dim.dim_param = name


@contextlib.contextmanager
def _quiet_converter() -> Iterator[None]:
    """tf2onnx's log below errors off (its shape warnings are its own)."""
    logger = logging.getLogger("tf2onnx")
    level = logger.level
    logger.setLevel(logging.ERROR)
    try:
        yield
    finally:
        logger.setLevel(level)


def _where(ctx: Any, node: Any, name: str, args: list) -> Any:
    """tf2onnx handler of ``SelectV2``: ONNX ``Where``, which broadcasts
    as ``SelectV2`` does and takes NaN in the branch not taken."""
    node.type = "Where"
    return node


def _log1p(ctx: Any, node: Any, name: str, args: list) -> Any:
    """tf2onnx handler of ``Log1p``: ``Log(x + 1)``."""
    from tf2onnx import utils

    dtype = utils.map_onnx_to_numpy_type(ctx.get_dtype(node.input[0]))
    one = ctx.make_const(utils.make_name("one"), np.array(1, dtype))
    ctx.insert_new_node_on_input(node, "Add", [node.input[0], one.output[0]])
    node.type = "Log"
    return node


def _erfc(ctx: Any, node: Any, name: str, args: list) -> Any:
    """tf2onnx handler of ``Erfc``: ``1 - Erf(x)``."""
    from tf2onnx import utils

    dtype = utils.map_onnx_to_numpy_type(ctx.get_dtype(node.input[0]))
    one = ctx.make_const(utils.make_name("one"), np.array(1, dtype))
    erf = ctx.insert_new_node_on_input(node, "Erf", node.input[0])
    ctx.replace_inputs(node, [one.output[0], erf.output[0]])
    node.type = "Sub"
    return node
