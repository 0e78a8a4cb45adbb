"""benchmarks.repeat_headroom: a run's switches, its report and chart."""

import argparse
import json

import pytest

from benchmarks import repeat_headroom as headroom_script

pytestmark = pytest.mark.slow


def test_a_trained_run_and_its_report(tmp_path, tiny_ablation_base):
    spread = headroom_script.seed_spread
    base = tiny_ablation_base
    metrics = spread.run_seeds(base, ["Softmax"], [0], 0.2)["Softmax", 0]
    config = spread.row_config(base, "Softmax", 0, 0.2)
    result = headroom_script.headroom_of_run(config, folds=2)
    switched = result["metrics"]
    # The logits are the run's own: its test NDCG@10, unswitched.
    assert switched["model"]["ndcg@10"] == pytest.approx(
        metrics["test"]["ndcg@10"], abs=1e-6
    )
    for name in ("constant", "learned", "cross-fitted"):
        assert switched["perfect"]["ndcg@10"] >= switched[name]["ndcg@10"]
    assert set(result["repeat_share"]) == {"train", "fit", "evaluate"}
    assert 0 < result["repeat_share"]["train"] < 1
    json.dumps(result)  # main() writes it as the report's .json

    args = argparse.Namespace(
        data="synthetic",
        encoder="gru4rec",
        num_layers=None,
        dropout=0.2,
        head_dropout=0.3,
        every_position=False,
        split="recbole",
        seed=0,
        epochs=1,
        patience=3,
    )
    command = "python -m benchmarks.repeat_headroom --rows Softmax"
    text = headroom_script.report({"Softmax": result}, args, command)
    model_ndcg = switched["model"]["ndcg@10"]
    assert f"| Softmax | model | {model_ndcg:.4f} | +0.0% |" in text
    assert "| Softmax | perfect switch |" in text
    assert "learned switch (cross-fitted on test)" in text
    path = tmp_path / "chart.png"
    headroom_script.plot({"Softmax": result}, str(path), "synthetic")
    assert path.read_bytes()[:4] == b"\x89PNG"


@pytest.mark.parametrize(
    "options, message",
    [
        (["--rows", "Nope"], "unknown --rows ['Nope']"),
        (["--folds", "1"], "--folds must be 2 or more. Received: 1"),
    ],
)
def test_bad_options_exit_with_a_usage_error(capsys, options, message):
    with pytest.raises(SystemExit) as stop:
        headroom_script.main(options)
    assert stop.value.code == 2
    assert message in capsys.readouterr().err
