"""Bad input to ``tfrec-tricks recommend`` through the real CLI: a clear
message, an exit code, nothing written.

Each case copies a tiny finished run (and, for some, a failed or an
interrupted one) into a fresh workspace, writes the files it needs, runs
the command in this process (``cli.main``) and asserts the exit code (1,
or 2 for argparse), the message, no traceback, and every file and folder
of the workspace as it was: no output file, no staging folder, no lock.
"""

import json
import shutil

import pytest

from tests.recommendation.recommend_helpers import TINY_DATA, train_tiny_run
from tests.run_helpers import Case, Interrupt, snapshot
from tfrec_tricks import cli

pytestmark = pytest.mark.slow


@pytest.fixture(scope="module")
def runs(tmp_path_factory):
    """``run``, finished; ``failed``, marked failed; ``running``,
    interrupted after its first epoch."""
    from tfrec_tricks.training.run_directory import fail_run
    from tfrec_tricks.training.train_config import TrainConfig
    from tfrec_tricks.training.training import train

    root = tmp_path_factory.mktemp("runs")
    run = train_tiny_run(root, "run")
    shutil.copytree(run, root / "failed")
    fail_run(str(root / "failed"), "the loss diverged at epoch 1")
    config = TrainConfig(
        **TINY_DATA,
        max_len=10,
        epochs=3,
        output_dir=str(root),
        name="running",
        model={"embedding_dim": 8},
    )
    with pytest.raises(KeyboardInterrupt):
        train(config, verbose=0, callbacks=[Interrupt()])
    return root


@pytest.fixture
def workspace(runs, tmp_path, monkeypatch):
    """A fresh folder holding a copy of the runs, the working directory."""
    shutil.copytree(runs, tmp_path / "runs")
    monkeypatch.chdir(tmp_path)
    return tmp_path


def _write(name, text):
    def setup(workspace):
        (workspace / name).write_text(text)

    return setup


def _both(*setups):
    def setup(workspace):
        for one in setups:
            one(workspace)

    return setup


RUN = ["recommend", "runs/run"]
CASES = [
    Case(
        "unknown-user",
        [*RUN, "--users", "vip.txt", "--output", "recs.csv"],
        1,
        [
            "vip.txt:3: user 'nobody' is not in the run's data (60 users "
            "after its filters). Received: user 'nobody'"
        ],
        _write("vip.txt", "u1\n\nnobody\nu2\n"),
    ),
    Case(
        "unknown-allowed-item",
        [*RUN, "--items", "stock.txt", "--output", "recs.csv"],
        1,
        ["stock.txt:2: item 'i41' is not in the run's catalogue (40 items)"],
        _write("stock.txt", "i1\ni41\n"),
    ),
    Case(
        "unknown-denied-item",
        [*RUN, "--exclude-items", "deny.txt", "--output", "recs.csv"],
        1,
        ["deny.txt:1: item '[PAD]' is not in the run's catalogue"],
        _write("deny.txt", "[PAD]\n"),
    ),
    Case(
        "empty-id-file",
        [*RUN, "--users", "vip.txt", "--output", "recs.csv"],
        1,
        ["vip.txt holds no id (one raw id a line)"],
        _write("vip.txt", "\n\n"),
    ),
    Case(
        "missing-id-file",
        [*RUN, "--users", "vip.txt", "--output", "recs.csv"],
        1,
        ["Cannot read 'vip.txt': No such file or directory"],
    ),
    Case(
        "k-zero",
        [*RUN, "--k", "0", "--output", "recs.csv"],
        2,
        ["argument --k: must be positive, got 0"],
    ),
    Case(
        "k-above-the-catalogue",
        [*RUN, "--k", "41", "--output", "recs.csv"],
        1,
        ["`k` (--k) must be at most the catalogue's 40 items"],
    ),
    Case(
        "failed-run",
        ["recommend", "runs/failed", "--output", "recs.csv"],
        1,
        ["The run in runs/failed failed", "the loss diverged at epoch 1"],
    ),
    Case(
        "unfinished-run",
        ["recommend", "runs/running", "--output", "recs.csv"],
        1,
        ["The run in runs/running has not finished"],
    ),
    Case(
        "no-run",
        ["recommend", "runs/none", "--output", "recs.csv"],
        1,
        ["No run directory at 'runs/none'"],
    ),
    Case(
        "output-exists",
        [*RUN, "--output", "recs.csv"],
        1,
        ["'recs.csv' exists (a file); choose another --output"],
        _write("recs.csv", "last week's\n"),
    ),
    Case(
        "output-is-a-folder",
        [*RUN, "--output", "runs"],
        1,
        ["'runs' exists (a folder)"],
    ),
    Case(
        "output-in-the-run",
        [*RUN, "--output", "runs/run/recs.csv"],
        1,
        ["lies inside an input of this command ('runs/run')"],
    ),
    Case(
        "output-ending",
        [*RUN, "--output", "recs.tsv"],
        1,
        ["Cannot tell the output format from 'recs.tsv'", "--format"],
    ),
    Case(
        "histories-without-time",
        [*RUN, "--histories", "new.txt", "--output", "recs.csv"],
        1,
        [
            "new.txt has no ['time_gap'] (time_gap needs a timestamp "
            "column). Received: features []"
        ],
        _write("new.txt", "n1 i1\nn1 i2\n"),
    ),
    Case(
        "histories-bad-line",
        [*RUN, "--histories", "new.dat", "--output", "recs.csv"],
        1,
        ["new.dat:2:"],
        _write("new.dat", "n1::i1::5::100\nn1::i2\n"),
    ),
    Case(
        "user-not-in-histories",
        [*RUN, "--histories", "new.dat", "--users", "vip.txt"]
        + ["--output", "recs.csv"],
        1,
        ["vip.txt:1: user 'u1' is not in new.dat (1 users)"],
        _both(_write("new.dat", "n1::i1::5::100\n"), _write("vip.txt", "u1\n")),
    ),
]


@pytest.mark.parametrize("case", CASES, ids=[case.id for case in CASES])
def test_refused_with_a_message_and_nothing_written(case, workspace, capsys):
    if case.setup:
        case.setup(workspace)
    before = snapshot(workspace)
    try:
        status = cli.main(case.args)
    except SystemExit as error:  # argparse: usage and exit 2
        status = error.code
    captured = capsys.readouterr()
    assert status == case.code, captured.err[-2000:]
    assert "Traceback" not in captured.err + captured.out
    text = " ".join(captured.err.split())
    for message in case.messages:
        assert message in text, captured.err[-2000:]
    assert snapshot(workspace) == before


def test_every_refusal_has_its_case():
    # The refusals the issue names: unknown user and item (file:line), k,
    # a failed or unfinished run, an existing output.
    ids = {case.id for case in CASES}
    assert {
        "unknown-user",
        "unknown-allowed-item",
        "unknown-denied-item",
        "k-zero",
        "k-above-the-catalogue",
        "failed-run",
        "unfinished-run",
        "output-exists",
    } <= ids
    assert json.dumps([case.args for case in CASES])
