"""benchmarks.step_profile: op time by type from a profiler trace."""

import collections

import pytest

from benchmarks import step_profile
from tfrec_tricks.data import load_source, prepare
from tfrec_tricks.data.tf_data_pipeline import make_dataset

pytestmark = pytest.mark.slow


@pytest.fixture(scope="module")
def tiny_data():
    options = {"num_users": 40, "num_items": 60}
    source = load_source("synthetic", synthetic_options=options)
    return prepare(source.interactions)


def test_profile_reads_the_kernels_of_the_step(tiny_data):
    batches = list(make_dataset(tiny_data.train, 16).take(3))
    head = step_profile.HEADS["CPR:100 + Mi"]
    model = step_profile.ours(
        tiny_data, "sasrec", dict(head, cpr_reranker_ks=(5,)), 1
    )
    wall, op_ms = step_profile.profile_steps(model, batches, repeats=1)
    assert wall > 0
    # The CPR head's top-k selection and the logits' matmuls are kernels
    # of every step; the executor's wrapper events are not op types.
    assert op_ms["TopKV2"] > 0
    assert any("MatMul" in op for op in op_ms)
    assert not any(":" in op for op in op_ms)
    assert sum(op_ms.values()) > op_ms["TopKV2"]


def test_report_gives_cpr_extra_per_op_type():
    results = {
        ("sasrec", "Softmax"): (
            10.0,
            collections.Counter(MatMul=2.0, Adam=1.0),
        ),
        ("sasrec", "CPR:100 + Mi"): (
            15.0,
            collections.Counter(MatMul=3.0, TopKV2=4.0, Adam=1.0),
        ),
    }
    table = step_profile.report(results, {"sasrec": 7}, top=2)
    rows = {line.split("|")[1].strip(): line for line in table.splitlines()}
    cells = [c.strip() for c in rows["wall"].split("|")[2:-1]]
    assert cells == ["10.00", "15.00", "5.00"]
    # TopKV2 (4 ms) and MatMul (5 ms) are the top two; Adam goes to other.
    assert [c.strip() for c in rows["`TopKV2`"].split("|")[2:-1]] == [
        "0.00",
        "4.00",
        "4.00",
    ]
    assert [c.strip() for c in rows["other types"].split("|")[2:-1]] == [
        "1.00",
        "1.00",
        "0.00",
    ]
    assert "sasrec: CPR extra" in table


def test_main_writes_the_table_and_the_plot(tmp_path):
    argv = ["--data", "synthetic", "--steps", "2", "--repeats", "1"]
    assert step_profile.main([*argv, "--report-dir", str(tmp_path)]) == 0
    table = (tmp_path / "step_profile.md").read_text()
    assert "gru4rec: CPR extra" in table and "sasrec: CPR extra" in table
    assert (tmp_path / "step_profile.png").stat().st_size > 0


def test_window_stride_profiles_windowed_batches_of_both_encoders(tmp_path):
    argv = ["--data", "synthetic", "--steps", "2", "--repeats", "1"]
    argv += ["--window-stride", "25", "--report-dir", str(tmp_path)]
    assert step_profile.main(argv) == 0
    table = (tmp_path / "step_profile.md").read_text()
    assert "both encoders on windows of 50 items, 25 apart" in table
    assert "gru4rec: CPR extra" in table and "sasrec: CPR extra" in table


def test_main_rejects_a_stride_beyond_max_len():
    with pytest.raises(SystemExit, match="--window-stride: .*stride=51"):
        step_profile.main(["--data", "synthetic", "--window-stride", "51"])


def test_main_rejects_zero_steps():
    with pytest.raises(SystemExit, match="--steps must be at least 1"):
        step_profile.main(["--steps", "0"])
