"""export_for_serving: versions, atomic writes, TF Serving files, contract."""

import json
import os
import subprocess
import sys

import numpy as np
import pytest
import tensorflow as tf

from tests.export.conftest import reference_top_k
from tfrec_tricks.export import export_for_serving
from tfrec_tricks.export.export_for_serving import next_version
from tfrec_tricks.export.models_config import update_models_config
from tfrec_tricks.export.serving_module import ServingModule
from tfrec_tricks.models import ModelConfig, SequentialRetrievalModel
from tfrec_tricks.ownership import RECORD_FILE
from tfrec_tricks.testing.test_case import BLOCK_PACKAGE_PREAMBLE

ITEMS = ["[PAD]"] + [f"item-{i}" for i in range(1, 30)]

# Runs in a process where `import tfrec_tricks` fails, as in TF Serving:
# the REST example and every warmup record through the loaded signatures.
# Arguments: MODEL_DIR, then REQUEST OUTPUT pairs, one JSON answer per
# request (the SavedModel loaded once, TensorFlow imported once).
CLIENT = (
    BLOCK_PACKAGE_PREAMBLE
    + r"""
import json

import numpy as np
import tensorflow as tf
from tensorflow_serving.apis import prediction_log_pb2

model_dir, pairs = sys.argv[1], sys.argv[2:]
assert pairs and len(pairs) % 2 == 0, pairs
loaded = tf.saved_model.load(model_dir)


def warmup_replies():
    warmup = []
    path = f"{model_dir}/assets.extra/tf_serving_warmup_requests"
    for record in tf.data.TFRecordDataset(path):
        log = prediction_log_pb2.PredictionLog.FromString(record.numpy())
        predict = log.predict_log.request
        inputs = {
            key: tf.constant(tf.make_ndarray(proto))
            for key, proto in predict.inputs.items()
        }
        signature = loaded.signatures[predict.model_spec.signature_name]
        outputs = signature(**inputs)
        warmup.append(
            {
                "model": predict.model_spec.name,
                "signature": predict.model_spec.signature_name,
                "batch": int(inputs["history"].shape[0]),
                "outputs": {k: list(v.shape) for k, v in outputs.items()},
            }
        )
    return warmup


for request_path, output_path in zip(pairs[::2], pairs[1::2]):
    with open(request_path) as handle:
        request = json.load(handle)
    instances = request["instances"]
    feed = {
        key: tf.constant([instance[key] for instance in instances])
        for key in instances[0]
    }
    serve = loaded.signatures[request["signature_name"]]
    first = {key: value.numpy() for key, value in serve(**feed).items()}
    again = serve(**feed)
    assert all(np.array_equal(first[k], again[k].numpy()) for k in first)
    json.dump(
        {
            "item_ids": first["item_ids"].astype(str).tolist(),
            "scores": first["scores"].tolist(),
            "warmup": warmup_replies(),
        },
        open(output_path, "w"),
    )
"""
)


def tiny_model():
    config = ModelConfig(num_items=len(ITEMS), max_len=5, embedding_dim=4)
    return SequentialRetrievalModel(config)


@pytest.mark.slow
def test_versions_models_config_and_request_example(tmp_path):
    model = tiny_model()
    base = tmp_path / "saved_models" / "demo"
    first = export_for_serving(model, str(base), ITEMS, k=3, warmup=False)
    second = export_for_serving(model, str(base), ITEMS, k=3)
    assert [os.path.basename(first), os.path.basename(second)] == ["1", "2"]
    # No temporary folder; the record of what export wrote.
    assert sorted(os.listdir(base)) == [RECORD_FILE, "1", "2"]
    assert os.path.isfile(
        os.path.join(second, "assets.extra", "tf_serving_warmup_requests")
    )
    assert not os.path.exists(os.path.join(first, "assets.extra"))
    with pytest.raises(ValueError, match="version=2"):
        export_for_serving(model, str(base), ITEMS, version=2)
    with pytest.raises(ValueError, match="version=0"):
        export_for_serving(model, str(base), ITEMS, version=0)
    # TF Serving reads versions as int64: a larger one would never load.
    with pytest.raises(ValueError, match="at most 9223372036854775807"):
        export_for_serving(model, str(base), ITEMS, version=2**63)

    # Another model joins models.config; re-exporting keeps one entry.
    root = tmp_path / "saved_models"
    export_for_serving(
        model, str(root / "other"), ITEMS, version=7, warmup=False
    )
    assert next_version(str(root / "other")) == 8
    config = (root / "models.config").read_text()
    assert config.count('name: "demo"') == 1
    assert 'base_path: "/models/demo"' in config
    assert 'base_path: "/models/other"' in config
    assert sorted(os.listdir(root)) == [
        "demo",
        "demo.filtered_request.json",
        "demo.request.json",
        "models.config",
        "other",
        "other.filtered_request.json",
        "other.request.json",
    ]
    request = json.loads((root / "demo.request.json").read_text())
    assert request["signature_name"] == "serving_default"
    histories = [instance["history"] for instance in request["instances"]]
    assert len({len(h) for h in histories}) == 1  # dense: padded with ""
    assert all(item in ITEMS[1:] for item in histories[-1])


def sparse_float_reads(path: str) -> dict:
    """``ResourceGather`` ops of float variables, by served signature."""
    loaded = tf.saved_model.load(path)
    found = {}
    for name, function in loaded.signatures.items():
        graph = function.graph.as_graph_def()
        nodes = list(graph.node)
        for called in graph.library.function:
            nodes += called.node_def
        found[name] = [
            node.name
            for node in nodes
            if node.op.startswith("ResourceGather")
            and node.attr["dtype"].type != tf.string.as_datatype_enum
        ]
    return found


CPR_MI = {"head": "cpr", "cpr_reranker_ks": (5,), "cpr_mi": True}


@pytest.mark.slow
@pytest.mark.parametrize(
    "options, scoring",
    [
        ({}, "index"),
        ({}, "full"),
        ({"head": "softmax_no_dup"}, "index"),
        ({"tie_embeddings": False}, "index"),
        (CPR_MI, "index"),
        (CPR_MI, "full"),
        (
            {"head": "cpr", "cpr_reranker_ks": (5,), "cpr_pointer": True},
            "index",
        ),
    ],
    ids=[
        "softmax-index",
        "softmax-full",
        "softmax_no_dup-index",
        "untied-index",
        "cpr_mi-index",
        "cpr_mi-full",
        "cpr_pointer-index",
    ],
)
def test_served_tables_are_never_read_sparsely(tmp_path, options, scoring):
    # A sparse read of a variable (ResourceGather) switches it to
    # copy-on-read for the life of the server: every later dense read of
    # the item table (the product over the catalogue) would then copy all
    # of it, 256 MB per request at a million items of 64 floats.
    config = ModelConfig(
        num_items=len(ITEMS), max_len=5, embedding_dim=4, **options
    )
    model = SequentialRetrievalModel(config)
    path = export_for_serving(
        model, str(tmp_path / "m"), ITEMS, k=3, scoring=scoring, warmup=False
    )
    reads = sparse_float_reads(path)
    assert set(reads) == {
        "serving_default",
        "recommend_filtered",
        "score_candidates",
    }
    assert reads == {name: [] for name in reads}


@pytest.mark.slow
def test_failed_export_leaves_no_version(tmp_path, monkeypatch):
    def fail(*args, **kwargs):
        raise OSError("disk full")

    monkeypatch.setattr(tf.saved_model, "save", fail)
    base = tmp_path / "demo"
    with pytest.raises(OSError, match="disk full"):
        export_for_serving(tiny_model(), str(base), ITEMS)
    # The folder of versions this export created goes too: no empty one.
    assert not base.exists()
    assert not (tmp_path / "models.config").exists()


@pytest.mark.parametrize(
    "base_path", ["demo/..", "demo/.", "x/.hidden", "a b", "x\\y", "/"]
)
def test_export_refuses_a_bad_model_name_before_writing(tmp_path, base_path):
    root = tmp_path / "saved_models"
    root.mkdir()
    (root / "demo").mkdir()
    with pytest.raises(ValueError, match="model's name") as error:
        export_for_serving(
            tiny_model(),
            # (os.path.join: pathlib would drop a trailing ".")
            base_path if base_path == "/" else os.path.join(root, base_path),
            ITEMS,
            warmup=False,
        )
    assert "Received: name=" in str(error.value)
    assert sorted(os.listdir(root)) == ["demo"]
    assert os.listdir(root / "demo") == []
    assert not (tmp_path / "models.config").exists()


@pytest.mark.slow
def test_export_takes_the_name_as_given(tmp_path):
    # ".." before the name is the caller's business; a trailing "/" is
    # not part of the name.
    (tmp_path / "saved_models").mkdir()
    base = str(tmp_path / "saved_models" / ".." / "served" / "demo") + "/"
    path = export_for_serving(tiny_model(), base, ITEMS, k=2, warmup=False)
    assert os.path.basename(path) == "1"
    assert sorted(os.listdir(tmp_path / "served")) == [
        "demo",
        "demo.filtered_request.json",
        "demo.request.json",
        "models.config",
    ]
    assert 'name: "demo"' in (tmp_path / "served" / "models.config").read_text()


@pytest.mark.parametrize(
    "garbage",
    [
        "model_config_list { config { name: 'a' base_path: ",
        "this is not a proto",
        b"\xff\xfe\x00binary",
    ],
)
def test_unreadable_models_config_is_refused_before_writing(tmp_path, garbage):
    root = tmp_path / "saved_models"
    root.mkdir()
    config = root / "models.config"
    if isinstance(garbage, bytes):
        config.write_bytes(garbage)
    else:
        config.write_text(garbage)
    before = config.read_bytes()
    with pytest.raises(ValueError) as error:
        export_for_serving(tiny_model(), str(root / "demo"), ITEMS)
    message = str(error.value)
    assert message.startswith(f"{config}: not a valid model_config_list")
    assert message.endswith("; fix or remove it")
    # Nothing written: no version, no temporary folder, no request file.
    assert sorted(os.listdir(root)) == ["models.config"]
    assert config.read_bytes() == before
    with pytest.raises(ValueError, match="fix or remove it"):
        update_models_config(str(config), "demo", "/models/demo")
    assert config.read_bytes() == before


@pytest.mark.slow
@pytest.mark.parametrize("run", ["softmax", "cpr", "hstu"])
def test_contract_in_a_process_without_tfrec_tricks(
    run, trained_runs, tmp_path
):
    from tfrec_tricks.training.persistence import load_model

    run_dir = trained_runs[run]
    with open(os.path.join(run_dir, "vocabulary.json")) as handle:
        items = json.load(handle)["items"]
    model = load_model(run_dir)
    base = tmp_path / "saved_models" / run
    path = export_for_serving(model, str(base), items, k=5)
    request_path = tmp_path / "saved_models" / f"{run}.request.json"
    output_path = tmp_path / "served.json"
    # The filtered request example too, in the same process: one
    # TensorFlow import.
    filtered_path = tmp_path / "saved_models" / f"{run}.filtered_request.json"
    filtered_output = tmp_path / "served_filtered.json"
    result = subprocess.run(
        [sys.executable, "-c", CLIENT, path, request_path, output_path]
        + [filtered_path, filtered_output],
        cwd=tmp_path,  # the working tree's package is not on sys.path
        capture_output=True,
        text=True,
    )
    assert result.returncode == 0, result.stderr[-4000:]
    served = json.loads(output_path.read_text())

    instances = json.loads(request_path.read_text())["instances"]
    history = np.asarray([instance["history"] for instance in instances])
    features = {
        name: np.asarray([instance[name] for instance in instances])
        for name in model.config.features
    }
    expected_ids, expected_scores, _, _ = reference_top_k(
        model, items, history, features, k=5
    )
    np.testing.assert_array_equal(served["item_ids"], expected_ids)
    np.testing.assert_allclose(served["scores"], expected_scores, atol=1e-5)

    assert {w["model"] for w in served["warmup"]} == {run}
    assert [(w["signature"], w["batch"]) for w in served["warmup"]] == [
        ("serving_default", 1),
        ("recommend_filtered", 1),
        ("score_candidates", 1),
        ("serving_default", 3),
        ("recommend_filtered", 3),
        ("score_candidates", 3),
    ]
    assert served["warmup"][3]["outputs"] == {
        "item_ids": [3, 5],
        "scores": [3, 5],
    }

    # The filtered request example: what the in-process module answers.
    served = json.loads(filtered_output.read_text())
    instances = json.loads(filtered_path.read_text())["instances"]
    assert [instance["k"] for instance in instances] == [5, 2]
    feed = {
        key: tf.constant([instance[key] for instance in instances])
        for key in instances[0]
    }
    expected = ServingModule(model, items, k=5).recommend_filtered(**feed)
    ids = expected["item_ids"].numpy().astype(str).tolist()
    assert served["item_ids"] == ids
    assert ids[1][2:] == ["", "", ""]  # row 1 asked for 2 items
    assert not set(ids[0]) & set(instances[0]["exclude_item_ids"])

    shown = subprocess.run(
        [
            os.path.join(os.path.dirname(sys.executable), "saved_model_cli"),
            "show",
            "--all",
            "--dir",
            path,
        ],
        capture_output=True,
        text=True,
    )
    assert shown.returncode == 0, shown.stderr[-2000:]
    text = shown.stdout
    for name in (
        "signature_def['serving_default']",
        "signature_def['score_candidates']",
        "signature_def['recommend_filtered']",
        "inputs['exclude_item_ids']",
        "inputs['k']",
        "inputs['history_last']",
        "inputs['history']",
        "inputs['candidate_ids']",
        "outputs['item_ids']",
        "outputs['scores']",
        *(f"inputs['{f}']" for f in model.config.features),
    ):
        assert name in text, name


@pytest.mark.slow
def test_cli_export(trained_runs, tmp_path, capsys):
    from tfrec_tricks.cli import main

    base = tmp_path / "served"
    argv = ["export", trained_runs["cpr"], "--name", "cpr", "--k", "4"]
    argv += ["--base-path", str(base), "--version", "3"]
    assert main(argv) == 0
    assert "docker run" in capsys.readouterr().out
    loaded = tf.saved_model.load(str(base / "cpr" / "3"))
    outputs = loaded.signatures["serving_default"](
        history=tf.constant([["no-such-item"]]),
        time_gap=tf.constant([[np.nan]]),
    )
    assert outputs["item_ids"].shape == (1, 4)
    assert main(argv) == 1  # version 3 exists
    assert "version=3" in capsys.readouterr().err


@pytest.mark.slow
def test_non_ascii_item_ids_are_served_as_they_were_given(tmp_path):
    # UTF-8 ids in, the same ids out: the vocabulary holds str, the
    # graph's table UTF-8 bytes.
    items = ["[PAD]", "café_14", "naïve", "東京", "plain"]
    model = SequentialRetrievalModel(ModelConfig(num_items=5, max_len=4))
    path = export_for_serving(model, str(tmp_path / "demo"), items, k=4)
    loaded = tf.saved_model.load(path)
    history = tf.constant([["café_14", "東京"]])
    top = loaded.signatures["serving_default"](history=history)
    served = [raw.decode("utf-8") for raw in top["item_ids"].numpy()[0]]
    assert sorted(served) == sorted(items[1:])
    scores = loaded.signatures["score_candidates"](
        history=history, candidate_ids=tf.constant([["café_14", "cafÃ©_14"]])
    )["scores"].numpy()[0]
    assert scores[0] > -1e8  # known
    assert scores[1] == pytest.approx(-1e9)  # the latin-1 garbling: unknown


@pytest.mark.slow
def test_token_features_in_a_process_without_tfrec_tricks(tmp_path):
    from tests.run_helpers import tiny_config, write_token_interactions
    from tfrec_tricks.data.interaction_tokens import encode_tokens
    from tfrec_tricks.training.persistence import load_model
    from tfrec_tricks.training.run_training import train

    path = write_token_interactions(tmp_path / "shop.inter", empty=True)
    config = tiny_config(
        tmp_path,
        data="file",
        data_path=path,
        max_len=4,
        epochs=1,
        model={"embedding_dim": 8, "features": ["all"], "head": "softmax"},
    )
    run_dir = train(config, verbose=0).run_dir
    with open(os.path.join(run_dir, "vocabulary.json")) as handle:
        items = json.load(handle)["items"]
    model = load_model(run_dir)
    tokens = {f["name"]: f for f in model.config.token_features}
    assert sorted(tokens) == ["channel", "device"]
    base = tmp_path / "saved_models" / "shop"
    saved = export_for_serving(model, str(base), items, k=5)
    # A request with an unknown value (OOV) and an empty one (no value).
    request = {
        "signature_name": "serving_default",
        "instances": [
            {
                "history": [items[1], items[2], items[3], ""],
                "time_gap": [float("nan"), 60.0, 120.0, 0.0],
                "device": ["web", "kiosk", "", ""],
                "channel": ["ads", "organic", "ads", ""],
            },
            {
                "history": [items[4], "not-an-item", items[5], items[6]],
                "time_gap": [5.0, 6.0, 7.0, 8.0],
                "device": ["app", "web", "tv", "web"],
                "channel": ["organic", "ads", "organic", "ads"],
            },
        ],
    }
    request_path = tmp_path / "request.json"
    request_path.write_text(json.dumps(request))
    output_path = tmp_path / "served.json"
    result = subprocess.run(
        [sys.executable, "-c", CLIENT, saved, request_path, output_path],
        cwd=tmp_path,
        capture_output=True,
        text=True,
    )
    assert result.returncode == 0, result.stderr[-4000:]
    served = json.loads(output_path.read_text())
    assert len(served["warmup"]) == 6

    # The in-process model on inputs encoded here: unknown items dropped
    # with their values, the tokens through the run's vocabularies.
    instances = request["instances"]
    history = np.asarray([row["history"] for row in instances])
    kept = [
        [j for j, item in enumerate(row) if item in items[1:]]
        for row in history
    ]
    inputs = {"history": np.zeros((2, 4), np.int32)}
    names = ["time_gap", *tokens]
    for name in names:
        inputs[name] = np.zeros((2, 4), np.float32)
    for row, positions in enumerate(kept):
        inputs["history"][row, : len(positions)] = [
            items.index(history[row][j]) for j in positions
        ]
        for name in names:
            values = np.asarray(instances[row][name])[positions]
            if name in tokens:
                values = encode_tokens(
                    values, tuple(tokens[name]["vocabulary"])
                )
            inputs[name][row, : len(positions)] = values
    assert inputs["device"][0, 1] == 1 and inputs["device"][0, 2] == 0
    logits = model(inputs).numpy()
    top = np.argsort(-logits, axis=1, kind="stable")[:, :5]
    np.testing.assert_array_equal(
        served["item_ids"], np.asarray(items, dtype=object)[top].astype(str)
    )
    np.testing.assert_allclose(
        served["scores"], np.take_along_axis(logits, top, axis=1), atol=1e-5
    )
