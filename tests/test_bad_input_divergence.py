"""Bad numbers through the real CLI: refused, or recorded as a failed run.

Non-finite options (flags and ``--config`` files), a loss that diverges,
``--eval-negatives`` at or above the catalogue and a model that cannot fit
in memory. Each refusal runs ``tfrec-tricks`` in this process
(``run_cli_here``: the process boundary is not what is tested), each run
that starts in a subprocess, and asserts the exit code, the message, no
traceback, and that the workspace is as it was;
a run that starts and then fails leaves its run directory marked
``failed`` with the reason, which ``train`` and ``export`` then refuse.
docs/run-directories.md ("Bad input") lists the same cases.
"""

import json
import re

import pytest

from tests.run_helpers import (
    TINY_FLAGS,
    Case,
    assert_refused,
    run_cli,
    run_cli_here,
    snapshot,
)

pytestmark = pytest.mark.slow

TINY = [*TINY_FLAGS, "--epochs", "2"]
FINITE = "must be a finite number"


def _config(text):
    def setup(workspace):
        (workspace / "c.json").write_text(text)

    return setup


CASES = [
    Case("lr-inf", ["train", *TINY, "--learning-rate", "inf"], 2, [FINITE]),
    Case("lr-minus-inf", ["train", *TINY, "--learning-rate=-inf"], 2, [FINITE]),
    Case(
        "lr-float32-overflow",
        ["train", *TINY, "--learning-rate", "1e39"],
        2,
        [FINITE, "float32", "'1e39'"],
    ),
    Case("dropout-nan", ["train", *TINY, "--dropout", "nan"], 2, [FINITE]),
    Case(
        "config-infinity",
        ["train", "--config", "c.json"],
        1,
        ["c.json: train.learning_rate must be a finite number", "=inf"],
        _config('{"train": {"learning_rate": Infinity}}'),
    ),
    Case(
        "config-nan",
        ["train", "--config", "c.json"],
        1,
        ["c.json: model.dropout must be a finite number", "=nan"],
        _config('{"model": {"dropout": NaN}}'),
    ),
    Case(
        "config-float32-overflow",
        ["train", "--config", "c.json"],
        1,
        ["c.json: train.learning_rate must be a finite number", "1e+39"],
        _config('{"train": {"learning_rate": 1e39}}'),
    ),
    Case(
        "config-minus-infinity-in-run-config",
        ["train", "--config", "c.json"],
        1,
        ["c.json: model.sse_graph_rho must be a finite number", "=-inf"],
        _config('{"train": {"model": {"sse_graph_rho": -Infinity}}}'),
    ),
    # 40 items: N = 40 and N = 100 cannot be distinct items besides the
    # target.
    Case(
        "eval-negatives-at-catalogue",
        ["train", *TINY, "--eval-negatives", "40"],
        1,
        ["--eval-negatives 40 is at or above the catalogue's 40 items"],
    ),
    Case(
        "eval-negatives-above-catalogue",
        ["train", *TINY, "--eval-negatives", "100"],
        1,
        ["--eval-negatives 100", "catalogue's 40 items"],
    ),
    Case(
        "embedding-dim-too-large",
        ["train", *TINY, "--embedding-dim", "100000"],
        1,
        ["This run needs at least", "GiB", "Lower --embedding-dim"],
    ),
]


@pytest.mark.parametrize("case", CASES, ids=[c.id for c in CASES])
def test_bad_number_is_refused_and_writes_nothing(case, tmp_path):
    result = assert_refused(case, tmp_path, run=run_cli_here)
    if case.code == 2:
        assert "usage: tfrec-tricks train" in result.stderr


# A learning rate this large overflows the tiny model's float32 weights in
# epoch 1. 1e30 did so on earlier machines but kept the loss finite for 2
# epochs on an AVX-512 one, so the rate sits near float32's largest value
# (3.4e38; 1e39 is refused as input).
DIVERGING = ["train", *TINY, "--learning-rate", "1e38", "--name", "div"]


def test_diverged_run_fails_is_recorded_and_refused(tmp_path):
    result = run_cli(*DIVERGING, cwd=tmp_path)
    assert result.returncode == 1, result.stderr[-2000:]
    assert "Traceback" not in result.stderr, result.stderr[-2000:]
    assert re.search(
        r"Training diverged: the training loss became (nan|inf) at step \d+ of",
        result.stderr,
    ), result.stderr[-2000:]
    for message in (
        "of epoch 1",
        "lower --learning-rate (this run: 1e+38)",
        "recorded as failed",
        "--overwrite",
    ):
        assert message in result.stderr, result.stderr[-2000:]
    run_dir = tmp_path / "runs" / "div"
    run = json.loads((run_dir / "run.json").read_text())
    assert run["status"] == "failed"
    assert run["reason"].startswith("Training diverged")
    # Nothing claims a result.
    assert not (run_dir / "metrics.json").exists()
    assert not (run_dir / "model").exists()
    assert "files" not in run

    before = snapshot(tmp_path)
    # export refuses it, naming the reason.
    exported = run_cli(
        "export", "runs/div", "--name", "m", "--base-path", "sm", cwd=tmp_path
    )
    assert exported.returncode == 1, exported.stderr[-2000:]
    assert "Traceback" not in exported.stderr
    assert "failed" in exported.stderr and "diverged" in exported.stderr
    assert snapshot(tmp_path) == before

    # The same command, and another learning rate, refuse without
    # resuming the diverged backup; --overwrite is the way out.
    for args in (DIVERGING, [*DIVERGING, "--learning-rate", "0.01"]):
        again = run_cli(*args, cwd=tmp_path)
        assert again.returncode == 1, again.stderr[-2000:]
        assert "Traceback" not in again.stderr
        assert "holds a run that failed: Training diverged" in again.stderr
        assert "--overwrite" in again.stderr
        assert snapshot(tmp_path) == before

    fresh = run_cli(
        *DIVERGING, "--learning-rate", "0.01", "--overwrite", cwd=tmp_path
    )
    assert fresh.returncode == 0, fresh.stderr[-2000:]
    run = json.loads((run_dir / "run.json").read_text())
    assert run["status"] == "finished" and "reason" not in run


def test_out_of_memory_while_training_is_recorded_as_failed(tmp_path):
    import tensorflow as tf

    from tests.run_helpers import tiny_config
    from tfrec_tricks.errors import TrainingFailedError
    from tfrec_tricks.training.run_directory import (
        check_finished_run,
        run_state,
    )
    from tfrec_tricks.training.run_training import train

    class OutOfMemory(tf.keras.callbacks.Callback):
        def on_train_batch_end(self, batch, logs=None):
            raise tf.errors.ResourceExhaustedError(
                None, None, "OOM when allocating tensor with shape[8,41]"
            )

    config = tiny_config(tmp_path, epochs=1)
    with pytest.raises(TrainingFailedError, match="Out of memory") as error:
        train(config, verbose=0, callbacks=[OutOfMemory()])
    assert "--batch-size" in str(error.value)
    assert "recorded as failed" in str(error.value)
    run_dir = str(tmp_path / "run")
    assert run_state(run_dir) == "failed"
    with pytest.raises(ValueError, match="failed.*Out of memory"):
        check_finished_run(run_dir)
