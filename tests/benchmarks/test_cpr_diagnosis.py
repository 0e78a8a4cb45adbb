"""benchmarks.cpr_diagnosis: options, the report on fake numbers, a tiny run."""

import argparse
import json

import numpy as np
import pytest

from benchmarks import common
from benchmarks import cpr_diagnosis as diagnosis
from benchmarks.history_ranking import history_mask


def summary(inner_ndcg: float, new_ndcg: float, top_mean: float) -> dict:
    """A ``summarize_diagnostics`` result with round numbers."""
    histogram = [2, 1, 1] + [0] * 8
    return {
        "overall": {"ndcg@10": 0.4},
        "by_kind": {
            "repeat": {"share": 0.25, "ndcg@10": 0.8},
            "new": {"share": 0.75, "ndcg@10": new_ndcg},
        },
        "new_non_history": {
            "count": 3,
            "ndcg@10": inner_ndcg,
            "hr@10": 0.5,
            "hr@100": 0.9,
            "median_rank": 12.0,
            "mean_rank": 40.25,
        },
        "merge_loss": 0.125,
        "history_in_top_k": {
            "all": {"histogram": [1, 1, 1, 1] + [0] * 7, "mean": 1.5,
                    "count": 4},
            "new": {"histogram": histogram, "mean": top_mean, "count": 4},
        },
        "history": {"mean_length": 5.5, "mean_distinct": 4.25},
    }  # fmt: skip


def change(difference: float, error: float) -> dict:
    return {"difference": difference, "standard_error": error}


def fake_result(non_history: dict, merge: dict) -> dict:
    return {
        "runs": {"softmax": {"epochs_run": 7}, "cpr": {"epochs_run": 5}},
        "summaries": {
            "softmax": summary(0.2, 0.15, 1.0),
            "cpr": summary(0.19, 0.05, 3.0),
            "cpr_base": summary(0.18, 0.1, 1.25),
        },
        "comparison": {
            "cpr": {
                "new": change(-0.1, 0.01),
                "non_history": non_history,
                "merge_cost": merge,
            },
            "cpr_base": {
                "new": change(-0.05, 0.01),
                "non_history": change(-0.02, 0.005),
                "merge_cost": change(0.03, 0.01),
            },
            "merge_cost": {"softmax": 0.05, "cpr": 0.14, "cpr_base": 0.08},
        },
    }


def fake_args(**options) -> argparse.Namespace:
    args = diagnosis.build_parser().parse_args([])
    return argparse.Namespace(**{**vars(args), **options})


@pytest.mark.parametrize(
    "non_history, merge, case",
    [
        (change(-0.01, 0.01), change(0.09, 0.01), "merge"),
        (change(-0.08, 0.01), change(0.02, 0.015), "ranking"),
        (change(-0.08, 0.01), change(0.09, 0.01), "both"),
        (change(-0.01, 0.01), change(0.01, 0.01), "neither"),
        (change(0.05, 0.01), change(0.15, 0.01), "merge"),
    ],
)
def test_the_case_follows_the_significant_parts(non_history, merge, case):
    comparison = fake_result(non_history, merge)["comparison"]
    assert diagnosis.diagnosis_case(comparison) == case


def test_the_report_of_fake_numbers():
    results = {
        "data": {"num_items": 101, "test_examples": 4},
        "labels": diagnosis.model_labels(diagnosis.CPR),
        "encoders": {
            "gru4rec": fake_result(change(-0.01, 0.01), change(0.09, 0.01)),
            "sasrec": fake_result(change(-0.08, 0.01), change(0.02, 0.015)),
        },
    }
    for encoder, result in results["encoders"].items():
        result["verdict"] = diagnosis.verdict(encoder, result)
    command = "python -m benchmarks.cpr_diagnosis --epochs 3"
    text = diagnosis.report(results, fake_args(), command)
    lines = text.splitlines()
    assert lines[0] == "# Why CPR loses new targets: yoochoose-100k"
    assert f"Command: `{command}`" in lines
    assert (
        "Test: 4 examples, 100 items, 25.0% repeat targets (3 new); history "
        "5.50 items on average (4.25 distinct)." in text
    )
    assert "| gru4rec | Softmax | 0.4000 | 0.8000 | 0.1500 | 7 |" in lines
    assert "| gru4rec | CPR:100 + Mi | 0.4000 | 0.8000 | 0.0500 | 5 |" in lines
    assert (
        "| sasrec | CPR:100 + Mi, base logits only | 0.4000 | 0.8000 | "
        "0.1000 |  |" in lines
    )
    assert (
        "| gru4rec | Softmax | 0.2000 |  | 0.5000 | 0.9000 | 12 | 40.2 "
        "| 12.5% |" in lines
    )
    assert (
        "| sasrec | CPR:100 + Mi | 0.1900 | -0.0800 ± 0.0100 | 0.5000 | "
        "0.9000 | 12 | 40.2 | 12.5% |" in lines
    )
    assert (
        "| gru4rec | -0.1000 ± 0.0100 | -0.0100 ± 0.0100 | +0.0900 ± 0.0100 "
        "| 0.0500 / 0.1400 |" in lines
    )
    assert (
        "| sasrec | CPR:100 + Mi | new | 50.0% | 25.0% | 25.0% | "
        + " | ".join(["0.0%"] * 8)
        + " | 3.00 |"
        in lines
    )
    assert (
        "| gru4rec | Softmax | all | 25.0% | 25.0% | 25.0% | 25.0% | "
        + " | ".join(["0.0%"] * 7)
        + " | 1.50 |"
        in lines
    )
    assert lines[-2] == (
        "- **gru4rec: the loss is in the merge.** CPR ranks non-history "
        "items as well as the softmax (NDCG@10 of new targets among "
        "non-history items 0.1900 vs 0.2000, -0.0100 ± 0.0100). New-target "
        "NDCG@10 0.0500 vs 0.1500 (-0.1000) = non-history ranking -0.0100 "
        "- merge cost change +0.0900 ± 0.0100 (the merge costs CPR 0.1400, "
        "the softmax 0.0500; history items in the top-10 of new targets: "
        "3.00 vs 1.00 on average). CPR's base logits alone rank "
        "non-history items worse than the softmax (NDCG@10 0.1800, "
        "-0.0200 ± 0.0050; HR@100, the reranker's reach, 0.9000 vs "
        "0.9000)."
    )
    assert lines[-1].startswith(
        "- **sasrec: the non-history ranking degraded, not the merge.** "
        "CPR ranks non-history items worse than the softmax (NDCG@10 of "
        "new targets among non-history items 0.1900 vs 0.2000, "
        "-0.0800 ± 0.0100)."
    )


def test_report_names(tmp_path):
    stem = diagnosis.report_stem(fake_args(report_dir=str(tmp_path)))
    assert stem == str(tmp_path / "cpr_diagnosis")
    args = fake_args(
        report_dir=str(tmp_path),
        data="file",
        data_path="/data/retailrocket-sessions/interactions.tsv",
        max_sessions=20000,
    )
    assert common.data_label(args) == "interactions-20000"
    assert diagnosis.report_stem(args) == str(
        tmp_path / "cpr_diagnosis-interactions-20000"
    )
    args.name = "retailrocket-20k"
    assert diagnosis.report_stem(args) == str(
        tmp_path / "cpr_diagnosis-retailrocket-20k"
    )
    args.max_sessions = None  # no subset file to write
    config = diagnosis.base_config(args, "sasrec")
    assert config.name == "cpr_diagnosis-retailrocket-20k-sasrec"
    assert config.every_position and config.model["num_layers"] == 2
    assert config.data_path == "/data/retailrocket-sessions/interactions.tsv"


def test_first_sessions_keeps_the_first_sessions_and_the_header(tmp_path):
    source = tmp_path / "sessions.tsv"
    source.write_text(
        "SessionId\tItemId\tTime\n"
        "7\t1\t0\n7\t2\t1\n3\t5\t0\n7\t1\t2\n9\t4\t0\n3\t1\t1\n"
    )
    path = common.first_sessions(str(source), 2, str(tmp_path / "out"))
    assert path == str(tmp_path / "out" / "sessions-first2.tsv")
    assert open(path).read() == (
        "SessionId\tItemId\tTime\n7\t1\t0\n7\t2\t1\n3\t5\t0\n7\t1\t2\n3\t1\t1\n"
    )
    # Same input: the file is left as it is (its runs are reused).
    before = (tmp_path / "out" / "sessions-first2.tsv").stat().st_mtime_ns
    assert common.first_sessions(str(source), 2, str(tmp_path / "out"))
    after = (tmp_path / "out" / "sessions-first2.tsv").stat().st_mtime_ns
    assert before == after
    with pytest.raises(ValueError, match="Received: 0"):
        common.first_sessions(str(source), 0, str(tmp_path))


@pytest.mark.parametrize(
    "options, message",
    [
        (["--encoders", "gru4rec,bert"], "Received: 'gru4rec,bert'"),
        (["--encoders", ","], "Received: ','"),
        (["--max-sessions", "5"], "--max-sessions takes a positive count"),
        (["--data", "file"], "--data file needs --data-path FILE"),
    ],
)
def test_bad_options_exit_with_a_usage_error(capsys, options, message):
    with pytest.raises(SystemExit) as stop:
        diagnosis.main(options)
    assert stop.value.code == 2
    assert message in capsys.readouterr().err


@pytest.mark.slow
def test_a_tiny_run_end_to_end(tmp_path, monkeypatch):
    monkeypatch.setattr(common, "RESULTS", str(tmp_path / "results"))
    argv = [
        "--data", "synthetic", "--synthetic-users", "80",
        "--synthetic-items", "150", "--epochs", "1", "--encoders",
        "gru4rec", "--output-dir", str(tmp_path / "runs"), "--report-dir",
        str(tmp_path / "results"),
    ]  # fmt: skip
    assert diagnosis.main(argv) == 0
    # Synthetic data of other sizes than the default names its sizes.
    stem = tmp_path / "results" / "cpr_diagnosis-synthetic-80x150"
    text = (stem.with_suffix(".md")).read_text()
    assert text.startswith("# Why CPR loses new targets: synthetic-80x150\n")
    assert "\n- **gru4rec: " in text
    assert (stem.with_suffix(".png")).read_bytes()[:4] == b"\x89PNG"
    results = json.loads((stem.with_suffix(".json")).read_text())
    result = results["encoders"]["gru4rec"]
    assert result["case"] in diagnosis.CASES
    for name in ("softmax", "cpr"):
        # The diagnosis scores the run's own model: train's test metrics.
        ours = result["summaries"][name]
        run = result["runs"][name]
        assert ours["overall"]["ndcg@10"] == pytest.approx(
            run["test"]["ndcg@10"], abs=1e-6
        )
        assert ours["by_kind"]["new"]["ndcg@10"] == pytest.approx(
            run["test_by_target"]["new"]["ndcg@10"], abs=1e-6
        )
    assert sum(result["summaries"]["cpr"]["history_in_top_k"]["all"][
        "histogram"
    ]) == results["data"]["test_examples"]  # fmt: skip


@pytest.mark.slow
def test_base_logits_are_the_cpr_logits_outside_its_partitions(tmp_path):
    from tfrec_tricks.data.tf_data_pipeline import make_dataset
    from tfrec_tricks.training.run_training import train
    from tfrec_tricks.training.training_data import prepare_in_memory

    args = fake_args(
        data="synthetic",
        synthetic_users=80,
        synthetic_items=150,
        epochs=1,
        output_dir=str(tmp_path),
    )
    base = diagnosis.base_config(args, "gru4rec")
    config = diagnosis.seed_spread.row_config(base, diagnosis.CPR, 0, 0.2)
    model = train(config, verbose=0).model
    _, data = prepare_in_memory(config)
    batch = next(iter(make_dataset(data.test, 64)))
    history, states = model.encode(batch, training=False)
    scores = model.logits(history, states).numpy()
    logits = diagnosis.base_logits(model, history, states)
    assert logits.shape == scores.shape
    assert (logits[:, 0] == diagnosis.PADDING_LOGIT).all()
    outside = ~history_mask(batch["history"].numpy(), scores.shape[1])
    outside[:, 0] = False
    # CPR:100 changes at most the 100 items its reranker selected among
    # the items outside the history: the base's best 100 there.
    changed = (scores != logits) & outside
    assert 0 < changed.sum(axis=1).max() <= 100
    ranked = np.where(outside, logits, -np.inf)
    kept = np.argsort(-ranked, axis=1, kind="stable")[:, 100:]
    rows = np.arange(len(scores))[:, None]
    np.testing.assert_array_equal(
        scores[rows, kept][outside[rows, kept]],
        logits[rows, kept][outside[rows, kept]],
    )


def test_another_cpr_row_names_the_report_and_its_rows(tmp_path):
    row = "Softmax + CPR:100 + Mi, base loss 1"
    labels = diagnosis.model_labels(row)
    assert labels["cpr"] == "CPR:100 + Mi, base loss 1"
    assert labels["cpr_base"] == "CPR:100 + Mi, base loss 1, base logits only"
    args = fake_args(cpr_row=row, report_dir=str(tmp_path))
    assert diagnosis.report_stem(args).endswith(
        "cpr_diagnosis-softmax_cpr-100_mi-baseloss1"
    )


def test_a_cpr_row_of_another_head_is_refused(capsys):
    with pytest.raises(SystemExit) as exit_info:
        diagnosis.main(["--cpr-row", "MoS"])
    assert exit_info.value.code == 2
    assert "--cpr-row must be an ablation row of the CPR head" in (
        capsys.readouterr().err
    )
