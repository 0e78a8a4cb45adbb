"""benchmarks.keras_versions: tf-keras and Keras 3 runs and step times,
each in its own process, and the report of both."""

import json

import pytest

from benchmarks import keras_versions

TINY = [
    "--data", "synthetic", "--synthetic-users", "60", "--synthetic-items",
    "40", "--epochs", "1", "--seeds", "0", "--encoders", "gru4rec",
    "--heads", "softmax", "--flags", "--max-len 10 --embedding-dim 8",
]  # fmt: skip


@pytest.mark.slow
def test_both_kerases_train_time_and_report_then_carry_over(tmp_path):
    places = ["--report-dir", str(tmp_path / "results")]
    runs = ["--output-dir", str(tmp_path / "runs")]
    argv = [*TINY, *places, *runs, "--steps", "2", "--rounds", "2"]
    assert keras_versions.main(argv) == 0
    stem = tmp_path / "results" / "keras-versions" / "keras_versions"
    numbers = json.loads(stem.with_suffix(".json").read_text())
    row = numbers["quality"]["synthetic-60x40/gru4rec/softmax"]
    assert sorted(row) == ["keras-3", "tf-keras"]
    for side in row.values():
        assert 0 <= side["metrics"]["test ndcg@10"]["mean"] <= 1
        assert side["runs"]["0"]["carried_over"] is False
        assert side["runs"]["0"]["settings"]["epochs"] == 1
    # Each run trained under its own Keras (run.json records Keras 3).
    folder = tmp_path / "runs" / "synthetic-60x40-gru4rec-softmax-{}-s0"
    keras_3 = json.loads((folder.parent / folder.name.format("keras-3") /
                          "run.json").read_text())  # fmt: skip
    assert keras_3["fingerprint"]["keras"] == "keras-3"
    tf_keras = folder.parent / folder.name.format("tf-keras") / "run.json"
    assert "keras" not in json.loads(tf_keras.read_text())["fingerprint"]
    (steps,) = numbers["step_time"]["rows"]
    assert steps["tf-keras seconds per step"] > 0
    assert steps["keras-3 seconds per step"] > 0
    assert len(steps["rounds"]) == 2 and steps["ratio"]["low"] > 0
    text = stem.with_suffix(".md").read_text()
    assert "| synthetic-60x40 | gru4rec | softmax | test ndcg@10 |" in text
    assert "| tf-keras | Keras 3 |" in text
    assert "Were both Kerases one model" in text
    assert "| gru4rec | softmax |" in text.split("## Step time")[1]
    assert stem.with_suffix(".png").read_bytes()[:4] == b"\x89PNG"
    # Elsewhere (no run folders): the seeds come from the record, the
    # step times too, and a seed not trained is named.
    elsewhere = ["--output-dir", str(tmp_path / "elsewhere")]
    argv = [*TINY, *places, *elsewhere, "--seeds", "0", "1", "--report-only"]
    assert keras_versions.main(argv) == 0
    text = stem.with_suffix(".md").read_text()
    assert "Carried over from this report's earlier record" in text
    assert "**Not finished yet**" in text and "Keras 3 seeds 1" in text
    assert "(Step times from this report's earlier record.)" in text
    assert "--report-only" not in text
    assert not (tmp_path / "elsewhere").exists()


def test_the_verdicts_and_the_flag_over_1_2x():
    summary = {"mean": 0.5, "min": 0.4, "max": 0.6}
    assert keras_versions.inside(0.45, summary)
    assert not keras_versions.inside(0.61, summary)
    over = {"median": 1.3, "low": 1.1, "high": 1.5}
    assert keras_versions.ratio_cell(over) == "**1.30x (1.10-1.50) over 1.2x**"
    within = {"median": 1.05, "low": 0.9, "high": 1.2}
    assert keras_versions.ratio_cell(within) == "1.05x (0.90-1.20)"


def test_the_chance_of_inside_when_both_kerases_train_one_model():
    # One seed's mean equals no other single seed; more seeds, a wider
    # range against a tighter mean.
    assert keras_versions.chance_inside(1, trials=1000) == 0.0
    assert 0.6 < keras_versions.chance_inside(3) < 0.66
    assert keras_versions.chance_inside(5) > keras_versions.chance_inside(3)


def test_a_run_is_named_after_its_data_encoder_head_and_keras():
    args = keras_versions.build_parser().parse_args(["--epochs", "7"])
    flags = keras_versions.run_flags(
        args, "ml-100k", "sasrec", "cpr", "keras-3"
    )
    config = keras_versions.run_config(
        flags, 2, {"output_dir": "out", "data_path": "data"}
    )
    assert config.run_name == "ml-100k-sasrec-cpr-keras-3-s2"
    assert (config.seed, config.epochs, config.patience) == (2, 7, 3)
    assert config.model["encoder"] == "sasrec"
    assert config.model["head"] == "cpr"


def test_nothing_finished_or_recorded_is_refused(tmp_path, capsys):
    argv = [*TINY, "--report-only", "--report-dir", str(tmp_path),
            "--output-dir", str(tmp_path / "runs")]  # fmt: skip
    assert keras_versions.main(argv) == 1
    assert "nothing to report" in capsys.readouterr().err


def test_flags_train_refuses_are_a_usage_error(tmp_path, capsys):
    with pytest.raises(SystemExit) as exit_info:
        keras_versions.main(
            ["--data", "synthetic", "--flags", "--max-len -3",
             "--report-dir", str(tmp_path)]
        )  # fmt: skip
    assert exit_info.value.code == 2
    assert "refuses these flags" in capsys.readouterr().err
    assert not any(tmp_path.iterdir())
