"""``tfrec-tricks export --format onnx`` (``tfrec_tricks.export.onnx_export``):
tiny trained runs exported to ONNX, onnxruntime's answers against the
SavedModel loaded with plain TensorFlow, and what the export refuses."""

import json
import os
from types import SimpleNamespace

import numpy as np
import pytest
import tensorflow as tf

from tests.export.conftest import random_requests
from tests.keras_env import KERAS3
from tests.run_helpers import run_cli_here, snapshot
from tfrec_tricks.export import onnx_export
from tfrec_tricks.export.onnx_scoring_module import OnnxScoringModule
from tfrec_tricks.export.serving_module import ServingModule
from tfrec_tricks.models import ModelConfig, SequentialRetrievalModel

# The tests run where CI runs them: the test extra installs these.
ort = pytest.importorskip("onnxruntime")
pytest.importorskip("tf2onnx")

K = 5
ITEMS = ["[PAD]", *(f"i{j}" for j in range(1, 13))]


@pytest.fixture(scope="module")
def exports(tmp_path_factory):
    """Per head (softmax; CPR:5 + Mi with a time gap), a tiny trained run
    exported twice into ``served/``: as the SavedModel ``<head>`` and, by
    the command line, as the ONNX model ``<head>-onnx``."""
    from tfrec_tricks.export import export_for_serving
    from tfrec_tricks.training.persistence import load_model
    from tfrec_tricks.training.run_training import train
    from tfrec_tricks.training.train_config import TrainConfig

    root = tmp_path_factory.mktemp("onnx")
    base = root / "served"
    common = dict(
        synthetic_users=60,
        synthetic_items=40,
        max_len=10,
        epochs=1,
        output_dir=str(root / "runs"),
    )
    heads = {
        "softmax": {"embedding_dim": 8},
        "cpr": {
            "embedding_dim": 8,
            "head": "cpr",
            "cpr_reranker_ks": (5,),
            "cpr_mi": True,
            "features": ("time_gap",),
        },
    }
    exports = {"base": base}
    for head, model in heads.items():
        run_dir = train(
            TrainConfig(name=head, model=model, **common), verbose=0
        ).run_dir
        # The run of this process' Keras (CI's Keras 3 job runs this file).
        with open(os.path.join(run_dir, "run.json")) as handle:
            keras = json.load(handle)["fingerprint"].get("keras")
        assert keras == ("keras-3" if KERAS3 else None)
        vocabulary = os.path.join(run_dir, "vocabulary.json")
        export_for_serving(
            load_model(run_dir), str(base / head), vocabulary, k=K,
            warmup=False,
        )  # fmt: skip
        result = run_cli_here(
            "export", run_dir, "--name", f"{head}-onnx", "--format", "onnx",
            "--base-path", base, "--k", K,
        )  # fmt: skip
        assert result.returncode == 0, result.stderr[-3000:]
        exports[head] = {
            "run_dir": run_dir,
            "items": _items(run_dir),
            "out": result.stdout,
        }
    return exports


def _items(run_dir):
    with open(os.path.join(run_dir, "vocabulary.json")) as handle:
        return json.load(handle)["items"]


@pytest.mark.slow
@pytest.mark.parametrize("head", ["softmax", "cpr"])
def test_onnxruntime_answers_as_the_saved_model(exports, head):
    base = exports["base"]
    onnx_file = base / f"{head}-onnx" / "1" / "model.onnx"
    assert f"Exported {onnx_file}" in exports[head]["out"]
    # TF Serving's models.config lists the SavedModels only.
    assert "-onnx" not in (base / "models.config").read_text()
    assert (onnx_file.parent / "assets.extra").is_dir()  # its identity
    session = ort.InferenceSession(str(onnx_file))
    served = tf.saved_model.load(str(base / head / "1"))
    serving_default = served.signatures["serving_default"]
    features = ("time_gap",) if head == "cpr" else ()
    worst = 0.0
    for seed in range(3):
        history, values = random_requests(
            exports[head]["items"], 32, 14, features, seed
        )
        ids, scores = session.run(
            ["item_ids", "scores"],
            {"history": history.astype(object), **values},
        )
        expected = serving_default(
            history=tf.constant(history),
            **{name: tf.constant(v) for name, v in values.items()},
        )
        assert ids.astype(str).tolist() == (
            expected["item_ids"].numpy().astype(str).tolist()
        )
        worst = max(worst, np.abs(scores - expected["scores"].numpy()).max())
    assert worst <= 1e-5


@pytest.mark.slow
def test_inputs_outputs_and_metadata_are_named(exports):
    onnx_file = exports["base"] / "cpr-onnx" / "1" / "model.onnx"
    session = ort.InferenceSession(str(onnx_file))
    inputs = {i.name: (i.type, i.shape) for i in session.get_inputs()}
    assert inputs == {
        "history": ("tensor(string)", ["batch", "length"]),
        "time_gap": ("tensor(float)", ["batch", "length"]),
    }
    outputs = {o.name: (o.type, o.shape) for o in session.get_outputs()}
    assert outputs == {
        "item_ids": ("tensor(string)", ["batch", K]),
        "scores": ("tensor(float)", ["batch", K]),
    }
    metadata = session.get_modelmeta().custom_metadata_map
    assert metadata["tfrec_tricks.outputs"] == "top_k"
    assert metadata["tfrec_tricks.head"] == "cpr"
    assert metadata["tfrec_tricks.k"] == str(K)


@pytest.mark.slow
def test_a_folder_of_saved_model_versions_is_refused(exports):
    base = exports["base"]
    before = snapshot(base)
    result = run_cli_here(
        "export", exports["softmax"]["run_dir"], "--name", "softmax",
        "--format", "onnx", "--base-path", base,
    )  # fmt: skip
    assert result.returncode == 1
    assert "holds SavedModel versions for TF Serving" in result.stderr
    assert "another --name (e.g. softmax-onnx)" in result.stderr
    assert snapshot(base) == before


def test_history_last_models_answer_logits(tmp_path):
    # softmax_no_dup ranks the history with bit-cast sort keys, which ONNX
    # has no op for: its ONNX model answers the logits over the catalogue.
    model = SequentialRetrievalModel(
        ModelConfig(num_items=len(ITEMS), max_len=4, head="softmax_no_dup")
    )
    path = onnx_export.export_onnx(model, str(tmp_path / "m"), ITEMS, k=3)
    with open(os.path.join(path, "item_ids.json")) as handle:
        assert json.load(handle) == ITEMS
    session = ort.InferenceSession(os.path.join(path, "model.onnx"))
    assert [o.name for o in session.get_outputs()] == ["logits"]
    history = np.array([["i3", "i5", ""], ["", "", ""]], dtype=object)
    (logits,) = session.run(None, {"history": history})
    expected = OnnxScoringModule(model, ITEMS, k=3).score(
        tf.constant(history.astype(str))
    )["logits"]
    np.testing.assert_allclose(logits, expected.numpy(), atol=1e-5, rtol=0)
    assert logits.shape == (2, len(ITEMS))
    assert logits[0, 3] == logits[0, 5] == logits[0, 0] == -1e9


def test_the_export_s_own_op_handlers_convert_as_tensorflow_computes():
    # SASRec's GELU (Erfc), a time gap's log1p and, in the check requests,
    # NaN gaps masked by tf.where: export_onnx checks onnxruntime's answers
    # against TensorFlow's before it publishes.
    config = ModelConfig(
        num_items=len(ITEMS), max_len=4, encoder="sasrec",
        features=("time_gap",),
    )  # fmt: skip
    model = SequentialRetrievalModel(config)
    module = OnnxScoringModule(model, ITEMS, k=3)
    proto = onnx_export.convert_to_onnx(module)
    ops = {node.op_type for node in proto.graph.node}
    assert {"Erf", "Log", "Where"} <= ops and "Mul" in ops
    served = ServingModule(model, ITEMS, k=3)
    assert onnx_export.check_onnx_answers(proto, module, served) <= 1e-5


def test_ops_tf2onnx_leaves_unconverted_are_named():
    import onnx
    from onnx import TensorProto, helper

    graph = helper.make_graph(
        [helper.make_node("Bitcast", ["x"], ["y"])],
        "g",
        [helper.make_tensor_value_info("x", TensorProto.FLOAT, [1])],
        [helper.make_tensor_value_info("y", TensorProto.INT32, [1])],
    )
    config = SimpleNamespace(head="cpr", encoder="gru4rec")
    with pytest.raises(ValueError) as error:
        onnx_export._refuse_unconverted(helper.make_model(graph), config)
    assert "the TensorFlow ops Bitcast of this model (head 'cpr'" in str(
        error.value
    )
    assert onnx.defs.has("CategoryMapper", "ai.onnx.ml")


def test_a_wrong_answer_is_refused_before_anything_is_written(
    monkeypatch, tmp_path
):
    model = SequentialRetrievalModel(
        ModelConfig(num_items=len(ITEMS), max_len=4)
    )

    class Shifted(ServingModule):
        """TensorFlow's answers, the scores moved by 1e-3."""

        def recommend(self, history, **features):
            out = super().recommend(history, **features)
            return {**out, "scores": out["scores"] + 1e-3}

    monkeypatch.setattr(onnx_export, "ServingModule", Shifted)
    with pytest.raises(ValueError, match="differ from TensorFlow's by more"):
        onnx_export.export_onnx(model, str(tmp_path / "m"), ITEMS, k=3)
    assert list(tmp_path.iterdir()) == []


def test_near_ties_may_swap():
    scores = np.array([[3.0, 2.0, 2.0 + 1e-7, 1.0], [4.0, 3.0, 2.0, 1.0]])
    assert onnx_export._near_ties(scores).tolist() == [
        [False, True, True, True],
        [False, False, False, True],
    ]
