"""Each example runs end to end in its smoke mode (tiny size, one epoch)."""

import pathlib
import subprocess
import sys

import pytest

EXAMPLES = pathlib.Path(__file__).resolve().parents[1] / "examples"
pytestmark = pytest.mark.slow


def run_example(name, *args):
    result = subprocess.run(
        [sys.executable, str(EXAMPLES / name), "--smoke", *args],
        capture_output=True,
        text=True,
    )
    assert result.returncode == 0, result.stderr[-3000:]
    return result.stdout


def test_quickstart():
    out = run_example("quickstart.py")
    assert "CPR:100 + Mi + time gap: ndcg@10" in out
    assert "top 10:" in out


def test_movielens_tfds_offline():
    out = run_example("movielens_tfds.py")
    assert "tfds:movielens/1m-ratings" in out and "'ndcg@10'" in out


def test_yoochoose_repeats(shared_data):
    out = run_example("yoochoose_repeats.py", "--data-path", str(shared_data))
    assert "of the test targets repeat a session item" in out
    assert "Softmax + CPR:100 + Mi    new: ndcg@10" in out
    assert "relative NDCG@10 change" in out
