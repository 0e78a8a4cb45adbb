"""A served list is never wrong: k real items, history last, never padding.

The exported SavedModel of every head, loaded in-process (one also in a
fresh process without tfrec_tricks), against a naive reference ranking;
and the CLI's refusals: ``--k`` above the catalogue, a run without a
complete record of its files.
"""

import json
import shutil
import subprocess
import sys

import numpy as np
import pytest
import tensorflow as tf

from tests.export.conftest import reference_inputs
from tests.export.test_export_for_serving import CLIENT
from tests.run_helpers import snapshot, tiny_config
from tfrec_tricks.export import export_for_serving
from tfrec_tricks.models import ModelConfig, SequentialRetrievalModel

# A tiny catalogue: 7 real items, so that histories cover all of it.
ITEMS = ["[PAD]"] + [f"i{i}" for i in range(1, 8)]
MAX_LEN = 8
# Raw histories of 0 to max_len items: unknown ids, repeats, the whole
# catalogue (in and beyond max_len).
HISTORIES = [
    [],
    ["i3"],
    ["i5", "nope", "i2"],
    ["i7", "i7", "i4", "i4"],
    ["i1", "i2", "i3", "i4", "i5", "i6"],
    ["i7", "i1", "i6", "i2", "i5", "i3", "i4"],
    ["i1", "i2", "i3", "i4", "i5", "i6", "i7", "i1"],
    ["i2", "i1", "i3", "i4", "i5", "i6", "i7", "i1", "i2", "i3"],
]
HEADS = {
    "softmax_no_dup": {"head": "softmax_no_dup"},
    "cpr:3": {"head": "cpr", "cpr_reranker_ks": (3,)},
    "mos": {"head": "mos", "mos_components": 2},
}
CASES = [
    ("softmax_no_dup", "index"),
    ("softmax_no_dup", "full"),
    ("cpr:3", "index"),
    ("mos", "full"),
]


def make_model(options):
    tf.keras.utils.set_random_seed(3)
    config = ModelConfig(
        num_items=len(ITEMS), max_len=MAX_LEN, embedding_dim=4, **options
    )
    model = SequentialRetrievalModel(config)
    bias = model.item_embedding.output_bias
    bias.assign(tf.random.normal(bias.shape))
    return model


def dense(histories):
    width = max(len(h) for h in histories)
    return np.asarray([h + [""] * (width - len(h)) for h in histories])


def reference(model, history, k):
    """Raw ids and scores: the items outside the history by logit, then
    the history's by their logit before the exclusion, never padding."""
    ids, _ = reference_inputs(ITEMS, MAX_LEN, history, {})
    excludes = model.head.excludes_history(False)
    history_ids, states = model.encode({"history": ids})
    served = model.logits(history_ids, states).numpy()
    order = served
    if excludes:  # the order of the history's items among themselves
        order = model.logits(history_ids, states, exclude_history=False)
        order = order.numpy()
    rows, scores = [], []
    for row in range(len(ids)):
        seen = set(ids[row][ids[row] != 0].tolist()) if excludes else set()
        by_score = sorted(
            range(1, len(ITEMS)), key=lambda i: (-order[row, i], i)
        )
        ranked = [i for i in by_score if i not in seen]
        ranked = (ranked + [i for i in by_score if i in seen])[:k]
        rows.append([ITEMS[i] for i in ranked])
        scores.append(served[row, ranked])
    return rows, np.asarray(scores)


@pytest.mark.slow
@pytest.mark.parametrize("head, scoring", CASES)
def test_exported_lists_rank_history_last_and_never_serve_padding(
    head, scoring, tmp_path
):
    model = make_model(HEADS[head])
    history = dense(HISTORIES)
    for k in (1, 4, len(ITEMS) - 1):
        path = export_for_serving(
            model,
            str(tmp_path / f"m{k}"),
            ITEMS,
            k=k,
            scoring=scoring,
            warmup=False,
        )
        loaded = tf.saved_model.load(path)
        out = loaded.signatures["serving_default"](history=tf.constant(history))
        served = out["item_ids"].numpy().astype(str).tolist()
        expected, scores = reference(model, history, k)
        assert served == expected, (k, served, expected)
        assert not any("[PAD]" in row for row in served)
        np.testing.assert_allclose(
            out["scores"].numpy(), scores, rtol=1e-5, atol=1e-5
        )


@pytest.mark.slow
def test_whole_catalogue_histories_served_in_a_fresh_process(tmp_path):
    # The reported bug: softmax_no_dup served [PAD] once k exceeded the
    # items outside the history.
    model = make_model(HEADS["softmax_no_dup"])
    k = len(ITEMS) - 1
    path = export_for_serving(model, str(tmp_path / "nodup"), ITEMS, k=k)
    request = {
        "signature_name": "serving_default",
        "instances": [{"history": list(row)} for row in dense(HISTORIES)],
    }
    request_path = tmp_path / "request.json"
    request_path.write_text(json.dumps(request))
    output_path = tmp_path / "served.json"
    result = subprocess.run(
        [sys.executable, "-c", CLIENT, path, request_path, output_path],
        cwd=tmp_path,  # the working tree's package is not on sys.path
        capture_output=True,
        text=True,
    )
    assert result.returncode == 0, result.stderr[-4000:]
    served = json.loads(output_path.read_text())
    expected, scores = reference(model, dense(HISTORIES), k)
    assert served["item_ids"] == expected
    np.testing.assert_allclose(served["scores"], scores, rtol=1e-5, atol=1e-5)


# ------------------------------------------------------------- CLI refusals


@pytest.fixture(scope="module")
def finished_run(tmp_path_factory):
    """A tiny finished run, trained once (copied by each test)."""
    from tfrec_tricks.training.run_training import train

    root = tmp_path_factory.mktemp("served_lists_run")
    train(tiny_config(root, epochs=1), verbose=0)
    return root / "run"


def export_refused(argv, workspace, capsys):
    """Runs ``tfrec-tricks export`` in-process: exit 1, the error, no
    traceback, the workspace unchanged."""
    from tfrec_tricks import cli

    before = snapshot(workspace)
    code = cli.main(argv)
    captured = capsys.readouterr()
    assert code == 1, captured.err[-2000:]
    assert "Traceback" not in captured.out + captured.err
    assert snapshot(workspace) == before
    return captured.err


@pytest.mark.slow
def test_cli_export_refuses_k_above_the_catalogue(
    finished_run, tmp_path, capsys
):
    run_dir = tmp_path / "run"
    shutil.copytree(finished_run, run_dir)
    catalogue = len(
        json.loads((run_dir / "vocabulary.json").read_text())["items"]
    )
    catalogue -= 1  # the padding id
    argv = ["export", str(run_dir), "--name", "m", "--k", str(catalogue + 1)]
    argv += ["--base-path", str(tmp_path / "served")]
    error = export_refused(argv, tmp_path, capsys)
    assert f"at most the catalogue's {catalogue} items" in error
    assert f"k={catalogue + 1}" in error
    assert not (tmp_path / "served").exists()


@pytest.mark.slow
def test_cli_export_refuses_a_run_without_its_file_list(
    finished_run, tmp_path, capsys
):
    # An altered vocabulary (two items swapped) would serve their scores
    # swapped: without run.json's file list it cannot be detected.
    run_dir = tmp_path / "run"
    shutil.copytree(finished_run, run_dir)
    run = json.loads((run_dir / "run.json").read_text())
    del run["files"]
    (run_dir / "run.json").write_text(json.dumps(run))
    vocabulary = json.loads((run_dir / "vocabulary.json").read_text())
    vocabulary["items"][1:3] = vocabulary["items"][2:0:-1]
    (run_dir / "vocabulary.json").write_text(json.dumps(vocabulary))
    argv = ["export", str(run_dir), "--name", "m"]
    argv += ["--base-path", str(tmp_path / "served")]
    error = export_refused(argv, tmp_path, capsys)
    assert "has no complete record of its files" in error
    assert "tfrec-tricks train ... --overwrite" in error
    assert not (tmp_path / "served").exists()
