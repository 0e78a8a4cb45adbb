"""What a head or an encoder of one's own must do, checked the same way
for both (tests/heads/test_a_head_of_ones_own.py,
tests/models/test_an_encoder_of_ones_own.py): train and resume, recommend
what an export serves to plain TensorFlow, and be tuned."""

import contextlib
import io
import json
import os
import subprocess
import sys

import pandas as pd
import pytest

from tests.run_helpers import Interrupt, tiny_config

# Plain TensorFlow in a fresh process: no tfrec_tricks, no custom class.
CLIENT = (
    "import json, sys, tensorflow as tf\n"
    "served = tf.saved_model.load(sys.argv[1])\n"
    "out = served.signatures['serving_default'](history=tf.constant("
    "[sys.argv[2].split(',')]))\n"
    "print(json.dumps([x.decode() for x in "
    "out['item_ids'].numpy()[0].tolist()]))\n"
)


def interrupted_and_resumed(root, model: dict) -> tuple:
    """A 2-epoch run of ``model`` interrupted after its first epoch, then
    resumed by the same call: ``(what the second call printed, its
    RunResult)``."""
    from tfrec_tricks.training.run_training import train

    config = tiny_config(root, epochs=2, model={"embedding_dim": 8, **model})
    with pytest.raises(KeyboardInterrupt):
        train(config, verbose=0, callbacks=[Interrupt(after_epoch=0)])
    said = io.StringIO()
    with contextlib.redirect_stdout(said):
        result = train(config, verbose=2)
    return said.getvalue(), result


def assert_resumed(said: str, result) -> None:
    assert "Resuming the interrupted run" in said and "after 1 epoch" in said
    assert result.metrics["epochs_run"] == 2  # one before, one resumed


def assert_serves_what_it_recommends(run_dir: str, tmp_path) -> None:
    """``recommend_frame``'s list of a new history is what the run's
    export serves, loaded by plain TensorFlow in a fresh process."""
    from tfrec_tricks.export.export_for_serving import export_for_serving
    from tfrec_tricks.recommendation import recommend_frame
    from tfrec_tricks.training.persistence import load_model

    history = ["i4", "i5", "i6"]
    frame = pd.DataFrame(
        {"user_id": ["new"] * 3, "item_id": history, "timestamp": [1, 2, 3]}
    )
    listed = recommend_frame(run_dir, k=5, histories=frame)
    assert len(listed) == 5 and not listed["item_id"].isin(history).any()
    with open(os.path.join(run_dir, "vocabulary.json")) as handle:
        items = json.load(handle)["items"]
    path = export_for_serving(
        load_model(run_dir), str(tmp_path / "served"), items, k=8
    )
    answer = subprocess.run(
        [sys.executable, "-c", CLIENT, path, ",".join(history)],
        cwd=tmp_path,
        capture_output=True,
        text=True,
    )
    assert answer.returncode == 0, answer.stderr[-3000:]
    served = json.loads(answer.stdout.splitlines()[-1])
    unseen = [item for item in served if item not in history]
    assert unseen[:5] == listed["item_id"].tolist()


def tuned(model: dict, tmp_path, monkeypatch):
    """A two-trial random search of ``model`` (fixed settings); returns
    its ``SearchResult`` after checking that both trials completed."""
    from tfrec_tricks.tuning.search import SearchOptions, run_search

    monkeypatch.chdir(tmp_path)
    config = tiny_config(
        ".", epochs=1, name=None, model={"embedding_dim": 8, **model}
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
    return result
