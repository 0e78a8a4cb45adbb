"""Faults outside a command's control, through the real CLI: a full disk
(ENOSPC), a folder that is not writable (EACCES), SIGTERM and SIGHUP.

A full disk is simulated, not made: a write primitive is patched to raise
the error the OS (or TensorFlow, or Beam) raises. The tests run as root,
which ignores permission bits, so a folder made read-only is simulated the
same way. Each case asserts the exit code, the message, no traceback,
nothing half-published or left behind, nothing recorded as failed, and
that the same command then succeeds (a run resumes, not afresh). Signals
need a real process: ``tfrec-tricks train`` in a subprocess.
docs/run-directories.md ("Bad input") lists the same cases.
"""

import errno
import importlib
import json
import os
import signal
import subprocess
import sys

import pytest
import tensorflow as tf

from tests.run_helpers import TINY_FLAGS, snapshot, start_cli
from tfrec_tricks import cli
from tfrec_tricks.errors import NO_SPACE, NOT_WRITABLE, write_failure

TINY = [*TINY_FLAGS, "--epochs", "2"]
TRAIN = ["train", *TINY, "--output-dir", "runs", "--name", "run"]
ENOSPC = os.strerror(errno.ENOSPC)
EACCES = os.strerror(errno.EACCES)
RESUMED = "Resuming the interrupted run"


def _no_space(path):
    return OSError(errno.ENOSPC, ENOSPC, path)


def _run(capsys, *args):
    """``tfrec-tricks ARGS`` in this process: its exit code, stdout, stderr."""
    code = cli.main(list(args))
    out, err = capsys.readouterr()
    return code, out, err


def _leftovers(folder):
    """Staging folders, temporary files and locks below ``folder``."""
    return [
        os.path.join(root, name)
        for root, dirs, files in os.walk(folder)
        for name in dirs + files
        if name.endswith((".staging", ".old", ".tmp", ".lock"))
    ]


@pytest.mark.parametrize(
    "error, kind",
    [
        (_no_space("runs/run/history.csv"), NO_SPACE),
        (
            tf.errors.ResourceExhaustedError(
                None, None, f"runs/run/backup/ckpt-2_temp/part-0; {ENOSPC}"
            ),
            NO_SPACE,
        ),
        (OSError(errno.EDQUOT, os.strerror(errno.EDQUOT)), NO_SPACE),
        (PermissionError(errno.EACCES, EACCES, "runs/run"), NOT_WRITABLE),
        (
            tf.errors.PermissionDeniedError(None, None, f"runs/x; {EACCES}"),
            NOT_WRITABLE,
        ),
        (OSError(errno.EROFS, os.strerror(errno.EROFS), "x"), NOT_WRITABLE),
        # A real out-of-memory stays one (training.failures_recorded).
        (
            tf.errors.ResourceExhaustedError(
                None, None, "OOM when allocating tensor with shape[9,9]"
            ),
            None,
        ),
        (MemoryError(), None),
        (FileNotFoundError(errno.ENOENT, "No such file", "u.data"), None),
    ],
    ids=lambda value: (
        type(value).__name__ if isinstance(value, Exception) else value
    ),
)
def test_write_failures_are_told_from_other_errors(error, kind):
    failure = write_failure(error)
    assert (failure and failure.kind) == kind


def _failing_backup(monkeypatch, epoch, error):
    """``BackupAndRestore`` raises ``error`` at the end of ``epoch`` (from
    0), before it saves it: the backup holds the epochs before."""
    backup = tf.keras.callbacks.BackupAndRestore
    original = backup.on_epoch_end

    def on_epoch_end(self, index, logs=None):
        if index == epoch:
            raise error
        return original(self, index, logs)

    monkeypatch.setattr(backup, "on_epoch_end", on_epoch_end)


@pytest.mark.slow
@pytest.mark.parametrize(
    "error, message",
    [
        # TensorFlow's own error for a checkpoint it could not write: the
        # type it also raises out of memory.
        (
            tf.errors.ResourceExhaustedError(
                None,
                None,
                "runs/run/backup/chief/ckpt-2_temp/part-00000-of-00001; "
                + ENOSPC,
            ),
            "no space left on 'runs/run'",
        ),
        (
            PermissionError(errno.EACCES, EACCES, "runs/run/history.csv"),
            "'runs/run' is not writable (writing 'runs/run/history.csv'",
        ),
    ],
    ids=["no-space", "not-writable"],
)
def test_train_write_failure_resumes(
    error, message, tmp_path, monkeypatch, capsys
):
    monkeypatch.chdir(tmp_path)
    _failing_backup(monkeypatch, 1, error)
    code, _, err = _run(capsys, *TRAIN)
    assert code == 1, err[-2000:]
    assert message in err, err[-2000:]
    assert "resume from the last completed epoch" in err
    assert "Traceback" not in err and "Out of memory" not in err
    run = json.loads((tmp_path / "runs" / "run" / "run.json").read_text())
    assert run.get("status") != "failed"
    assert _leftovers(tmp_path) == []
    assert not (tmp_path / "runs" / "run" / "model").exists()

    monkeypatch.undo()
    monkeypatch.chdir(tmp_path)
    code, out, err = _run(capsys, *TRAIN)
    assert code == 0, err[-2000:]
    assert f"{RESUMED} from runs/run/backup after 1 epochs" in out
    history = (tmp_path / "runs" / "run" / "history.csv").read_text()
    assert len(history.splitlines()) == 3  # the header and two epochs


@pytest.mark.slow
@pytest.mark.parametrize("engine", ["local", "beam"])
def test_prepare_on_a_full_disk_publishes_nothing(
    engine, tmp_path, monkeypatch, capsys
):
    monkeypatch.chdir(tmp_path)
    (tmp_path / "clicks.tsv").write_text(
        "SessionId\tItemId\tTime\n"
        + "".join(
            f"s{s}\ti{(s + k) % 12}\t{1000 * s + k}\n"
            for s in range(30)
            for k in range(5)
        )
    )
    args = ["prepare", "--engine", engine, "--data", "file"]
    args += ["--data-path", "clicks.tsv", "--output", "prepared"]
    if engine == "local":
        # TensorFlow's shard writer, as it fails on a full disk.
        def writer(path, *args, **kwargs):
            raise tf.errors.ResourceExhaustedError(
                None, None, f"{path}; {ENOSPC}"
            )

        monkeypatch.setattr(tf.io, "TFRecordWriter", writer)
    else:
        # Beam raises a worker's OSError again, without its errno.
        from apache_beam.io import tfrecordio

        def write_record(self, handle, value):
            raise _no_space(getattr(handle, "name", "shard"))

        monkeypatch.setattr(
            tfrecordio._TFRecordSink, "write_record", write_record
        )
    before = snapshot(tmp_path)
    code, _, err = _run(capsys, *args)
    assert code == 1, err[-2000:]
    assert "no space left on 'prepared'" in err, err[-2000:]
    assert "Traceback" not in err
    assert snapshot(tmp_path) == before

    monkeypatch.undo()
    monkeypatch.chdir(tmp_path)
    code, _, err = _run(capsys, *args)
    assert code == 0, err[-2000:]
    assert (tmp_path / "prepared" / "metadata.json").is_file()


@pytest.mark.slow
def test_export_write_failures_leave_no_folder(tmp_path, monkeypatch, capsys):
    # The module: the package's export_for_serving is its function.
    exporting = importlib.import_module(
        "tfrec_tricks.export.export_for_serving"
    )

    monkeypatch.chdir(tmp_path)
    code, _, err = _run(capsys, *TRAIN)
    assert code == 0, err[-2000:]
    args = ["export", "runs/run", "--name", "rec", "--base-path", "served"]
    before = snapshot(tmp_path)

    # A full disk while the version is written (in its staging folder).
    def warmup(folder, *args, **kwargs):
        raise _no_space(os.path.join(folder, "assets.extra"))

    monkeypatch.setattr(exporting, "write_warmup_requests", warmup)
    code, _, err = _run(capsys, *args)
    assert code == 1, err[-2000:]
    assert "no space left on 'served'" in err, err[-2000:]
    assert "Traceback" not in err
    assert snapshot(tmp_path) == before  # no empty served/rec/

    # models.config not writable once the version is published: the
    # version is withdrawn.
    monkeypatch.undo()
    monkeypatch.chdir(tmp_path)

    def update(path, *args, **kwargs):
        raise PermissionError(errno.EACCES, EACCES, path)

    monkeypatch.setattr(exporting, "update_models_config", update)
    code, _, err = _run(capsys, *args)
    assert code == 1, err[-2000:]
    assert "'served' is not writable (writing 'served/models.config'" in err
    assert "Traceback" not in err
    assert snapshot(tmp_path) == before

    monkeypatch.undo()
    monkeypatch.chdir(tmp_path)
    code, out, err = _run(capsys, *args)
    assert code == 0, err[-2000:]
    assert "Exported served/rec/1" in out
    assert (tmp_path / "served" / "models.config").is_file()


@pytest.mark.slow
def test_tune_trial_on_a_full_disk_resumes(tmp_path, monkeypatch, capsys):
    from tfrec_tricks.tuning import sequential_retrieval_hypermodel as hm

    monkeypatch.chdir(tmp_path)
    args = ["tune", *TINY, "--tuner", "random", "--max-trials", "1"]
    args += ["--retrain-top", "0", "--output-dir", "tuning", "--name", "s"]
    hypermodel = hm.SequentialRetrievalHyperModel

    def fit(self, *args, **kwargs):
        raise tf.errors.ResourceExhaustedError(
            None, None, f"tuning/s/search/trial_0/checkpoint; {ENOSPC}"
        )

    monkeypatch.setattr(hypermodel, "fit", fit)
    code, _, err = _run(capsys, *args)
    assert code == 1, err[-2000:]
    assert "no space left on 'tuning/s'" in err, err[-2000:]
    assert "resume the search" in err
    assert "Traceback" not in err

    monkeypatch.undo()
    monkeypatch.chdir(tmp_path)
    code, _, err = _run(capsys, *args)
    assert code == 0, err[-2000:]
    # The trial the full disk stopped ran again, and completed.
    trials = (tmp_path / "tuning" / "s" / "trials.md").read_text()
    assert "| 1 | COMPLETED |" in trials, trials


def _signal_after(process, signum, epochs=2):
    """Sends ``signum`` once ``process`` starts its ``epochs``-th epoch
    (the one before is saved); returns its exit code and output."""
    lines = []
    for line in process.stdout:
        lines.append(line)
        epochs -= line.startswith("Epoch ")
        if not epochs:
            process.send_signal(signum)
            break
    rest, _ = process.communicate(timeout=120)
    return process.wait(), "".join(lines) + rest


@pytest.mark.slow
def test_sigterm_and_sighup_end_a_run_that_resumes(tmp_path):
    # Enough epochs that the run is still training when the signal comes.
    args = ["train", *TINY_FLAGS, "--epochs", "30", "--patience", "30"]
    args += ["--output-dir", "runs", "--name", "run"]
    code, output = _signal_after(start_cli(*args, cwd=tmp_path), signal.SIGTERM)
    assert code == 143, output[-2000:]
    assert "terminated. Run the same command again to resume" in output
    assert "Traceback" not in output
    assert _leftovers(tmp_path) == []

    code, output = _signal_after(start_cli(*args, cwd=tmp_path), signal.SIGHUP)
    assert code == 129, output[-2000:]
    assert RESUMED in output
    assert "hung up. Run the same command again to resume" in output
    assert "Traceback" not in output
    assert _leftovers(tmp_path) == []
    run = json.loads((tmp_path / "runs" / "run" / "run.json").read_text())
    assert run.get("status") != "failed"

    done = subprocess.run(
        [sys.executable, "-m", "tfrec_tricks.cli", *args],
        capture_output=True,
        text=True,
        cwd=tmp_path,
    )
    assert done.returncode == 0, done.stderr[-2000:]
    assert RESUMED in done.stdout
    history = (tmp_path / "runs" / "run" / "history.csv").read_text()
    assert len(history.splitlines()) == 31


def test_ablation_write_failures_name_the_folder(tmp_path, monkeypatch, capsys):
    from tfrec_tricks.errors import writes_named
    from tfrec_tricks.training import ablation

    monkeypatch.chdir(tmp_path)
    args = ["ablation", *TINY, "--rows", "Softmax", "--report-dir", "report"]

    # A row's run on a full disk (what training.train raises), without
    # training one.
    def full_disk(*args, **kwargs):
        with writes_named("runs/row"):
            raise _no_space("runs/row/backup")

    monkeypatch.setattr(ablation, "run_ablation", full_disk)
    code, _, err = _run(capsys, *args)
    assert code == 1, err[-2000:]
    assert "no space left on 'runs/row' (writing 'runs/row/backup'" in err
    assert "finished rows are reused" in err
    assert "Traceback" not in err

    # The report's folder not writable.
    def not_writable(rows, folder, *args, **kwargs):
        raise PermissionError(errno.EACCES, EACCES, f"{folder}/ablation.md")

    monkeypatch.setattr(ablation, "run_ablation", lambda *a, **k: [])
    monkeypatch.setattr(ablation, "write_report", not_writable)
    code, _, err = _run(capsys, *args)
    assert code == 1, err[-2000:]
    assert "'report' is not writable (writing 'report/ablation.md'" in err
    assert "Traceback" not in err
