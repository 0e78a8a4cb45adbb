"""Bad input to ``tfrec-tricks recommend`` through the real CLI: a clear
message, an exit code, nothing written.

Each case copies a tiny finished run (and, for some, a failed or an
interrupted one) into a fresh workspace, writes the files it needs, runs
the command in this process (``cli.main``) and asserts the exit code (1,
or 2 for argparse), the message, no traceback, and every file and folder
of the workspace as it was: no output file, no staging folder, no lock.
"""

import json
import os
import shutil
import signal
import time

import pandas as pd
import pytest

from tests.recommendation.recommend_helpers import (
    TINY_DATA,
    synthetic_histories,
    train_tiny_run,
)
from tests.run_helpers import Case, Interrupt, snapshot, start_cli
from tfrec_tricks import cli

pytestmark = pytest.mark.slow


@pytest.fixture(scope="module")
def runs(tmp_path_factory):
    """``run``, finished; ``failed``, marked failed; ``running``,
    interrupted after its first epoch."""
    from tfrec_tricks.training.run_directory import fail_run
    from tfrec_tricks.training.run_training import train
    from tfrec_tricks.training.train_config import TrainConfig

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
        "new-item-slots-above-k",
        [*RUN, "--k", "3", "--new-item-slots", "4", "--output", "recs.csv"],
        1,
        [
            "`new_item_slots` must be an int in 0..k=3: the last places of "
            "each list kept for new items. Received: new_item_slots=4"
        ],
    ),
    Case(
        "new-item-slots-ids-only",
        [*RUN, "--new-item-slots", "2", "--output", "recs.csv"],
        1,
        [
            "`new_item_slots` needs a model with item features (train "
            "--item-features): without them a new item has no attribute "
            "to be ranked by. Received: new_item_slots=2 for a model of "
            "item ids only"
        ],
    ),
    Case(
        "new-item-boost-ids-only",
        [*RUN, "--new-item-boost", "0.5", "--output", "recs.csv"],
        1,
        [
            "`new_item_boost` needs a model with item features (train "
            "--item-features): without them a new item has no attribute "
            "to be ranked by. Received: new_item_boost=0.5 for a model of "
            "item ids only"
        ],
    ),
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
        "new-item-boost-negative",
        [*RUN, "--new-item-boost", "-1", "--output", "recs.csv"],
        2,
        ["argument --new-item-boost: must be >= 0, got -1.0"],
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
            "column; its columns are user_id, item_id). Received: "
            "features []"
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


# --- a run on an .inter file with a token column, and an .item file ----------


@pytest.fixture(scope="module")
def shop(tmp_path_factory):
    """``data/shop.inter`` (a ``device`` token column the run does not
    read), ``data/shop.item`` and ``runs/shop``, trained on them."""
    from tfrec_tricks.training.run_training import train
    from tfrec_tricks.training.train_config import TrainConfig

    root = tmp_path_factory.mktemp("shop")
    data = root / "data"
    data.mkdir()
    rows = [
        f"u{u}\ti{(u + k) % 12}\t{1000 * u + k}\t{('web', 'app')[k % 2]}\n"
        for u in range(20)
        for k in range(6)
    ]
    header = "user_id:token\titem_id:token\ttimestamp:float\tdevice:token\n"
    (data / "shop.inter").write_text(header + "".join(rows))
    (data / "shop.item").write_text(
        "item_id:token\tgenre:token_seq\n"
        + "".join(f"i{i}\tg{i % 3}\n" for i in range(12))
    )
    config = TrainConfig(
        data="file",
        data_path=str(data / "shop.inter"),
        item_features=str(data / "shop.item"),
        max_len=5,
        epochs=1,
        output_dir=str(root / "runs"),
        name="shop",
        model={"embedding_dim": 8},
    )
    train(config, verbose=0)
    return root


SHOP = ["recommend", "runs/shop"]


@pytest.fixture
def shop_workspace(shop, tmp_path, monkeypatch):
    """A fresh folder holding a copy of ``runs/shop``, the working
    directory; the run's data stays where it trained."""
    shutil.copytree(shop / "runs", tmp_path / "runs")
    monkeypatch.chdir(tmp_path)
    return tmp_path


def _main(capsys, *args):
    """``tfrec-tricks ARGS`` in this process: the exit code and the error
    output, checked to hold no traceback."""
    try:
        status = cli.main(list(args))
    except SystemExit as error:
        status = error.code
    captured = capsys.readouterr()
    assert "Traceback" not in captured.err + captured.out
    return status, " ".join(captured.err.split())


def test_the_runs_own_inter_file_gives_histories(shop, shop_workspace, capsys):
    # Its device column is text the run does not read: left unread, as
    # train leaves it. Before: "column 'device' must hold numbers".
    import tfrec_tricks

    inter = str(shop / "data" / "shop.inter")
    before = snapshot(shop_workspace)
    status, err = _main(
        capsys, *SHOP, "--histories", inter, "--output", "recs.csv"
    )
    assert status == 0, err
    after = snapshot(shop_workspace)
    assert {name: after[name] for name in before} == before
    written = pd.read_csv("recs.csv", dtype={"user_id": str, "item_id": str})
    assert written["user_id"].nunique() == 20
    # The facade, with the same histories as a table (device as text).
    from tfrec_tricks.recommendation.history_frames import read_histories

    histories = read_histories(inter)
    assert histories["device"].tolist()[:2] == ["web", "app"]
    lists = tfrec_tricks.Recommender.load("runs/shop").recommend(
        histories=histories
    )
    columns = ["user_id", "rank", "item_id"]
    assert lists[columns].astype(str).values.tolist() == (
        written[columns].astype(str).values.tolist()
    )


def test_a_changed_item_file_is_named_as_item_attributes(
    shop, shop_workspace, capsys
):
    import tfrec_tricks

    item_file = shop / "data" / "shop.item"
    original = item_file.read_bytes()
    before = snapshot(shop_workspace)
    try:
        item_file.write_bytes(original + b"i99\tg1\n")
        status, err = _main(capsys, *SHOP, "--output", "recs.csv")
        with pytest.raises(ValueError) as raised:
            tfrec_tricks.Recommender.load("runs/shop").recommend()
    finally:
        item_file.write_bytes(original)
    said = (
        f"{item_file} changed since the run in runs/shop trained on it, so "
        "the item attributes it holds are not those the run's model "
        "learned; restore it, or retrain on it. Received:"
    )
    assert status == 1 and said in err, err
    assert "histories" not in err.split("Received")[0]
    assert said in str(raised.value)
    assert snapshot(shop_workspace) == before


def test_a_foreign_file_in_model_is_named_and_moving_it_out_works(
    shop_workspace, capsys
):
    import tfrec_tricks

    stray = shop_workspace / "runs" / "shop" / "model" / ".DS_Store"
    stray.write_bytes(b"\x00\x00\x00\x01Bud1")
    before = snapshot(shop_workspace)
    said = (
        "The run in runs/shop holds runs/shop/model/.DS_Store, which "
        "tfrec-tricks did not write and cannot verify as part of the run. "
        "Move it out of the run directory, then run the command again."
    )
    for args in (
        [*SHOP, "--output", "recs.csv"],
        ["export", "runs/shop", "--name", "m", "--base-path", "served"],
    ):
        status, err = _main(capsys, *args)
        assert status == 1 and said in err, err
        assert "--overwrite" not in err
    with pytest.raises(ValueError, match="Move it out of the run directory"):
        tfrec_tricks.Recommender.load("runs/shop")
    assert snapshot(shop_workspace) == before
    # The way out works.
    stray.rename(shop_workspace / ".DS_Store")
    status, err = _main(capsys, *SHOP, "--output", "recs.csv")
    assert status == 0, err
    assert tfrec_tricks.Recommender.load("runs/shop").run_dir == "runs/shop"


# --- Ctrl-C and SIGTERM during the Beam engine's pipeline -------------------


def _write_many_histories(path, users):
    """``users`` new users, five of the run's items each (udata)."""
    items = sorted(set(synthetic_histories()["item_id"]))
    with open(path, "w") as lines:
        for user in range(users):
            for step in range(5):
                item = items[(user * 5 + step * 7) % len(items)]
                lines.write(f"new{user}\t{item}\t3\t{100 + step}\n")


def _pipeline_started(folder):
    # The run's own temporary directory, or (before it had one) the job
    # server's folder of the DirectRunner's Prism attempt.
    prefixes = ("tfrec-tricks-beam-", "beam-temp")
    return any(name.startswith(prefixes) for name in os.listdir(folder))


@pytest.mark.parametrize(
    "signum, code, said",
    [
        (signal.SIGINT, 130, "interrupted."),
        (signal.SIGTERM, 143, "terminated."),
    ],
    ids=["ctrl-c", "sigterm"],
)
def test_an_interrupted_beam_engine_ends_in_one_line_and_leaves_nothing(
    signum, code, said, workspace
):
    # Before: exit 1 and three tracebacks (Beam's log record, the
    # RuntimeError it wrapped the interruption in, its chain), and
    # beam-temp* folders left in the temporary directory.
    temporary = workspace / "tmp"
    temporary.mkdir()
    # 20,000 new users: ranking them takes seconds, so the signal lands
    # inside the pipeline on any machine (the run's own 60 users were
    # ranked before it on a fast one, and the finished command died of
    # the signal in its teardown, as any finished program does).
    _write_many_histories(workspace / "many.tsv", users=20_000)
    before = snapshot(workspace)
    process = start_cli(
        *RUN,
        "--engine",
        "beam",
        "--histories",
        "many.tsv",
        "--histories-format",
        "udata",
        "--output",
        "recs.csv",
        "--quiet",
        cwd=workspace,
        env={"TMPDIR": str(temporary)},
    )
    while process.poll() is None and not _pipeline_started(temporary):
        time.sleep(0.1)
    time.sleep(2)  # inside the pipeline: loading the model, ranking
    process.send_signal(signum)
    output, _ = process.communicate(timeout=300)
    if process.returncode == 0:
        pytest.skip("finished before the signal")
    assert process.returncode == code, output[-3000:]
    assert "Traceback" not in output, output[-3000:]
    assert output.strip().splitlines()[-1] == said
    # No output, no staging folder, no lock, nothing left in the
    # temporary directory (TensorFlow's own files go at its exit too).
    assert snapshot(workspace) == before
