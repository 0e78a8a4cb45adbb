"""Bad options through the CLI, in-process: named, refused, no harm.

``--config`` of every ``config.json`` that ``train`` writes (it repeats
the run: the same name reuses it), every
``tune --choices`` value, ``TF_CONFIG``'s task, ``export --version``'s
bound and a run resumed with its data path written another way. Each case
runs ``cli.main`` in this process (the process boundary is not what is
tested) and asserts the exit code, the message, no traceback and the
workspace unchanged. docs/run-directories.md ("Bad input") lists them.
"""

import json

import pytest

from tests.run_helpers import TINY_FLAGS, Interrupt, run_cli, snapshot
from tfrec_tricks import cli


def _refused(args, capsys, workspace, code=1):
    """Runs ``tfrec-tricks ARGS``; asserts ``code``, no traceback and the
    workspace as it was. Returns the error output."""
    before = snapshot(workspace)
    try:
        status = cli.main(args)
    except SystemExit as error:  # argparse: usage and exit 2
        status = error.code
    captured = capsys.readouterr()
    assert status == code, captured.err[-2000:]
    assert "Traceback" not in captured.err + captured.out
    assert snapshot(workspace) == before
    return captured.err


# --- train --config repeats every run train writes -------------------------

REUSED = "finished before with the same settings and data: reusing it"


def _fingerprint(run_dir):
    """``run_dir``'s fingerprint as compared (``as_trained_fingerprint``)."""
    from tfrec_tricks.training.resumption import as_trained_fingerprint

    run = json.loads((run_dir / "run.json").read_text())
    return as_trained_fingerprint(run["fingerprint"])


def _reused(args, capsys, workspace):
    """Runs ``tfrec-tricks ARGS``; asserts that it reused a finished run:
    exit 0, the reuse named, no traceback, the workspace as it was."""
    before = snapshot(workspace)
    status = cli.main(args)
    captured = capsys.readouterr()
    assert status == 0, captured.err[-2000:]
    assert REUSED in captured.out, captured.out[-2000:]
    assert "Traceback" not in captured.err + captured.out
    assert snapshot(workspace) == before


@pytest.mark.slow
@pytest.mark.parametrize(
    "flags",
    [
        [],
        ["--head", "auto"],
        ["--head", "cpr", "--cpr-rerankers", "20"],
        ["--train-windows", "--encoder", "sasrec"],
        ["--encoder", "hstu"],
        ["--recipe", "long-histories", "--window-stride", "5"],
    ],
    ids=["defaults", "head-auto", "cpr", "train-windows", "hstu", "recipe"],
)
def test_train_config_repeats_the_run_train_wrote(flags, tmp_path, capsys):
    runs = str(tmp_path / "runs")
    common = ["--epochs", "1", "--output-dir", runs]
    status = cli.main(
        ["train", *TINY_FLAGS, *flags, *common, "--quiet", "--name", "a"]
    )
    assert status == 0, capsys.readouterr().err[-2000:]
    written = tmp_path / "runs" / "a" / "config.json"
    if "auto" in flags:
        assert "head_choice" in json.loads(written.read_text())
    # The run's own name: the finished run is reused, nothing written.
    _reused(["train", "--config", str(written), *common, "--name", "a"],
            capsys, tmp_path)  # fmt: skip
    # Another name: the same run, trained again.
    status = cli.main(
        ["train", "--config", str(written), *common, "--quiet", "--name", "b"]
    )
    captured = capsys.readouterr()
    assert status == 0, captured.err[-2000:]
    again = json.loads((tmp_path / "runs" / "b" / "config.json").read_text())
    assert again["model"] == json.loads(written.read_text())["model"]
    assert _fingerprint(tmp_path / "runs" / "b") == _fingerprint(
        tmp_path / "runs" / "a"
    )


@pytest.mark.slow
def test_train_config_of_a_run_started_with_flags_reuses_it(tmp_path):
    # The headline sequence, as a user types it: two processes.
    runs = str(tmp_path / "runs")
    flags = [*TINY_FLAGS, "--epochs", "1", "--output-dir", runs, "--name", "r"]
    result = run_cli("train", *flags, "--quiet")
    assert result.returncode == 0, result.stderr[-2000:]
    before = snapshot(tmp_path)
    config = str(tmp_path / "runs" / "r" / "config.json")
    result = run_cli("train", "--config", config, "--output-dir", runs,
                     "--name", "r")  # fmt: skip
    assert result.returncode == 0, result.stderr[-2000:]
    assert REUSED in result.stdout
    assert "Traceback" not in result.stderr
    assert snapshot(tmp_path) == before


@pytest.mark.slow
@pytest.mark.parametrize(
    "features",
    [[], ["--features", "all"], ["--features", "year", "genre"]],
    ids=["every-attribute", "all", "named"],
)
def test_train_config_repeats_a_run_with_item_features(
    features, tmp_path, capsys, monkeypatch
):
    # config.json lists the features read (genre, year: the file's) where
    # the run was given none, 'all' or another order: the same run.
    from tests.test_bad_input_item_features import GOOD, INTERACTIONS, TRAIN

    (tmp_path / "u.data").write_text(INTERACTIONS)
    (tmp_path / "x.item").write_text(GOOD)
    monkeypatch.chdir(tmp_path)
    flags = [*TRAIN, "--item-features", "x.item", *features, "--quiet"]
    assert cli.main(flags) == 0, capsys.readouterr().err[-2000:]
    _reused(["train", "--config", "runs/run/config.json"], capsys, tmp_path)


def test_config_with_an_unknown_top_level_key_names_it(tmp_path, capsys):
    path = tmp_path / "c.json"
    path.write_text(json.dumps({"train": {}, "head_choise": {}}))
    error = _refused(["train", "--config", str(path)], capsys, tmp_path)
    assert "unknown top-level keys ['head_choise']" in error
    assert str(path) in error


# --- tune --choices: every value, before the first trial ------------------


@pytest.mark.parametrize(
    "choice, named",
    [
        ("dropout=0.1,1.5", "dropout: the value 1.5"),
        ("encoder=gru4rec,lstm", "encoder: the value 'lstm'"),
        ("num_layers=1,-2", "num_layers: the value -2"),
        ("batch_size=64,-1", "batch_size: the value -1"),
        # Conditional on the head: checked under cpr, 500 > 40 items.
        ("cpr_reranker_ks=none;20;500", "cpr_reranker_ks: the value '500'"),
    ],
)
def test_every_choices_value_is_checked_before_the_first_trial(
    choice, named, tmp_path, capsys
):
    args = [
        "tune",
        *TINY_FLAGS,
        "--tuner",
        "random",
        "--max-trials",
        "2",
        "--epochs",
        "1",
        "--choices",
        choice,
        "--output-dir",
        str(tmp_path / "tuning"),
    ]
    error = _refused(args, capsys, tmp_path)
    assert f"--choices {named}" in error
    assert "RuntimeError" not in error
    assert not list(tmp_path.glob("tuning/*/search/trial_*"))


# --- TF_CONFIG: the task must be one of its cluster's ---------------------


@pytest.mark.parametrize(
    "task, named",
    [
        ({"type": "worker", "index": 5}, "task is worker 5"),
        ({"type": "worker", "index": -1}, "task is worker -1"),
        ({"type": "chief", "index": 0}, "lists no chief tasks"),
        ({"type": "ps", "index": 0}, "task type 'ps'"),
        ({"type": "worker", "index": "1"}, "index must be an integer"),
    ],
)
def test_tf_config_task_outside_its_cluster_is_refused(
    task, named, tmp_path, capsys, monkeypatch
):
    cluster = {"worker": ["127.0.0.1:1", "127.0.0.1:2"]}
    monkeypatch.setenv(
        "TF_CONFIG", json.dumps({"cluster": cluster, "task": task})
    )
    monkeypatch.chdir(tmp_path)
    error = _refused(["train", *TINY_FLAGS, "--epochs", "1"], capsys, tmp_path)
    assert "TF_CONFIG" in error and named in error
    assert "127.0.0.1:2" in error  # the cluster is shown


# --- export --version: int64 ----------------------------------------------


@pytest.mark.parametrize("version", [str(2**63), str(10**30)])
def test_export_version_beyond_int64_is_refused(version, tmp_path, capsys):
    args = [
        "export",
        str(tmp_path / "run"),
        "--name",
        "m",
        "--version",
        version,
    ]
    error = _refused(args, capsys, tmp_path, code=2)
    assert f"must be at most {2**63 - 1}" in error
    assert version in error


# --- a run resumes with its data path written another way -----------------


def _udata(path, users=30, shift=0):
    lines = [
        f"u{u}\ti{(u * 3 + k + shift) % 25}\t1\t{1000 * u + k}"
        for u in range(users)
        for k in range(6)
    ]
    path.write_text("\n".join(lines) + "\n")


@pytest.mark.slow
def test_interrupted_run_resumes_with_its_data_path_written_another_way(
    tmp_path, capsys, monkeypatch
):
    from tfrec_tricks.training.run_training import train
    from tfrec_tricks.training.train_config import TrainConfig

    data = tmp_path / "data"
    data.mkdir()
    _udata(data / "u.data")
    runs = tmp_path / "runs"
    # Started from data/, relative path; interrupted after its first epoch.
    monkeypatch.chdir(data)
    config = TrainConfig(
        data="file",
        data_path="u.data",
        max_len=5,
        epochs=2,
        output_dir=str(runs),
        name="run",
        model={"embedding_dim": 8},
    )
    with pytest.raises(KeyboardInterrupt):
        train(config, verbose=0, callbacks=[Interrupt()])
    flags = [
        "train",
        "--data",
        "file",
        "--max-len",
        "5",
        "--embedding-dim",
        "8",
        "--epochs",
        "2",
        "--output-dir",
        str(runs),
        "--name",
        "run",
        "--quiet",
    ]
    # Another file of the same name is other data: refused.
    other = tmp_path / "other"
    other.mkdir()
    _udata(other / "u.data", shift=1)
    monkeypatch.chdir(tmp_path)
    error = _refused([*flags, "--data-path", "other/u.data"], capsys, tmp_path)
    assert "data.0.sha256" in error
    assert "train.data_path" in error  # the real paths differ too
    assert "synthetic" not in error  # only the data differs
    # The same file, from another folder, absolute: resumed.
    status = cli.main([*flags, "--data-path", str(data / "u.data")])
    captured = capsys.readouterr()
    assert status == 0, captured.err[-2000:]
    assert "Traceback" not in captured.err
    metrics = json.loads((runs / "run" / "metrics.json").read_text())
    assert metrics["epochs_run"] == 2
