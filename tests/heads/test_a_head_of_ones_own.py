"""A head defined in this file alone (its layer and its spec) trains,
resumes, tunes, exports, serves and recommends: nothing outside this file
knows its name (docs/adding-a-head.md follows this example)."""

import contextlib
import io
import json
import os
import subprocess
import sys

import numpy as np
import pandas as pd
import pytest
import tensorflow as tf

from tests.run_helpers import Interrupt, tiny_config
from tfrec_tricks.heads import (
    HeadParts,
    HeadSpec,
    register_head,
    unregister_head,
)
from tfrec_tricks.heads.tied_softmax import TiedSoftmax

NAME = "projected_softmax"


@tf.keras.utils.register_keras_serializable(package="my_shop")
class ProjectedSoftmax(TiedSoftmax):
    """The tied softmax with a learned ``d x d`` projection of the query,
    even where the encoder's width is ``d`` already."""

    def __init__(self, output_dim: int, **kwargs) -> None:
        super().__init__(output_dim=output_dim, **kwargs)


class ProjectedSoftmaxSpec(HeadSpec):
    name = NAME
    summary = "h W E^T + b: the tied softmax of a projected query"
    tied_softmax = True

    def build(self, config, hidden):
        head = ProjectedSoftmax(config.embedding_dim, name="projected_head")
        return HeadParts(head, head.projection)

    def parameters(self, config, width):
        return width * config.embedding_dim

    def extension_refusal(self, config):
        return None  # a new item's logit reads its own row and bias only


@pytest.fixture(scope="module")
def head():
    register_head(ProjectedSoftmaxSpec)
    yield NAME
    unregister_head(NAME)


@pytest.fixture(scope="module")
def run(head, tmp_path_factory):
    """A run of the head, interrupted after its first epoch, then resumed
    by the same call."""
    from tfrec_tricks.training.training import train

    root = tmp_path_factory.mktemp("own-head")
    config = tiny_config(
        root, epochs=2, model={"embedding_dim": 8, "head": head}
    )
    with pytest.raises(KeyboardInterrupt):
        train(config, verbose=0, callbacks=[Interrupt(after_epoch=0)])
    said = io.StringIO()
    with contextlib.redirect_stdout(said):
        result = train(config, verbose=2)
    return said.getvalue(), result


@pytest.mark.slow
def test_it_trains_and_resumes(run):
    said, result = run
    assert isinstance(result.model.head, ProjectedSoftmax)
    assert "Resuming the interrupted run" in said and "after 1 epoch" in said
    assert result.metrics["epochs_run"] == 2  # one before, one resumed
    with open(os.path.join(result.run_dir, "run.json")) as handle:
        assert json.load(handle)["status"] == "finished"
    with open(os.path.join(result.run_dir, "config.json")) as handle:
        assert json.load(handle)["model"]["head"] == NAME


@pytest.mark.slow
def test_it_recommends_and_serves_what_it_recommends(run, tmp_path):
    from tfrec_tricks.export.export_for_serving import export_for_serving
    from tfrec_tricks.recommendation import recommend_frame
    from tfrec_tricks.training.persistence import load_model

    _, result = run
    history = ["i1", "i2", "i3"]
    frame = pd.DataFrame(
        {"user_id": ["new"] * 3, "item_id": history, "timestamp": [1, 2, 3]}
    )
    listed = recommend_frame(result.run_dir, k=5, histories=frame)
    assert len(listed) == 5 and not listed["item_id"].isin(history).any()

    with open(os.path.join(result.run_dir, "vocabulary.json")) as handle:
        items = json.load(handle)["items"]
    path = export_for_serving(
        load_model(result.run_dir), str(tmp_path / "served"), items, k=8
    )
    # Plain TensorFlow in a fresh process: no tfrec_tricks, no head class.
    client = (
        "import json, sys, tensorflow as tf\n"
        "served = tf.saved_model.load(sys.argv[1])\n"
        "out = served.signatures['serving_default'](history=tf.constant("
        "[sys.argv[2].split(',')]))\n"
        "print(json.dumps([x.decode() for x in "
        "out['item_ids'].numpy()[0].tolist()]))\n"
    )
    answer = subprocess.run(
        [sys.executable, "-c", client, path, ",".join(history)],
        cwd=tmp_path,
        capture_output=True,
        text=True,
    )
    assert answer.returncode == 0, answer.stderr[-3000:]
    served = [item for item in json.loads(answer.stdout.splitlines()[-1])]
    unseen = [item for item in served if item not in history]
    assert unseen[:5] == listed["item_id"].tolist()


@pytest.mark.slow
def test_a_search_tunes_it(head, tmp_path, monkeypatch):
    from tfrec_tricks.tuning.search import SearchOptions, run_search

    monkeypatch.chdir(tmp_path)
    config = tiny_config(
        ".",
        epochs=1,
        name=None,
        model={"embedding_dim": 8, "encoder": "gru4rec", "head": head},
    )
    result = run_search(
        config,
        SearchOptions(
            tuner="random",
            max_trials=2,
            output_dir="tuning",
            verbose=0,
            compile_options={"run_eagerly": True},
            retrain_top=1,
        ),
    )
    assert [row["status"] for row in result.trials] == ["COMPLETED"] * 2
    assert result.best_config["model"]["head"] == head
    assert np.isfinite(result.selection[0]["validation_mean"])
