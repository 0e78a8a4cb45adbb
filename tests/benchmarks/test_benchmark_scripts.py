"""Every benchmark script: a package module with its options and reports."""

import argparse
import importlib
import json
import pathlib
import sys
import tempfile
import types

import pytest
import tensorflow as tf

from benchmarks import (
    baseline,
    common,
    facade_latency,
    output_head,
    serving_latency,
    sse_sweep,
    tuning_search,
)

BENCHMARKS = pathlib.Path(__file__).resolve().parents[2] / "benchmarks"
TMP = tempfile.gettempdir()

TRAINING_RUNS = {
    "data": "yoochoose-100k",
    "data_path": None,
    "file_format": "auto",
    "max_sessions": None,
    "synthetic_users": 1000,
    "synthetic_items": 1000,
    "encoder": "sasrec",
    "num_layers": None,
    "rows": ["Softmax", "Softmax + CPR:100 + Mi"],
    "model": {},
    "dropout": 0.2,
    "head_dropout": 0.3,
    "every_position": False,
    "train_windows": False,
    "window_stride": 0,
    "learning_rate": None,
    "eval_negatives": 0,
    "epochs": 40,
    "patience": 5,
    "split": "recbole",
    "output_dir": "runs/benchmarks",
    "report_dir": common.RESULTS,
    "name": None,
}

#: Each script's options parsed from (its required arguments only): the
#: defaults the scripts had before they shared ``benchmarks.common``.
DEFAULTS = {
    "baseline": ([], {
        "datasets": ["yoochoose-100k", "ml-1m"], "data_path": None,
        "epochs": 30, "patience": 3, "output_dir": "runs/benchmarks",
        "name": "baseline",
    }),
    "bit_identity": (["--save", "a.npz"], {
        "save": "a.npz", "compare": None, "configs": None,
    }),
    "cpr_diagnosis": ([], {
        "data": "yoochoose-100k", "data_path": None, "file_format": "auto",
        "max_sessions": None, "cpr_row": "Softmax + CPR:100 + Mi",
        "synthetic_users": 1000,
        "synthetic_items": 1000, "encoders": ["gru4rec", "sasrec"],
        "dropout": 0.2, "head_dropout": 0.3, "epochs": 10, "patience": 3,
        "output_dir": "runs/benchmarks", "split": "recbole", "seed": 0,
        "report_dir": common.RESULTS, "name": None,
    }),
    "epoch_speed": ([], {
        "data": "yoochoose-100k", "data_path": None, "epochs": 4,
        "split": "recbole", "report_dir": common.RESULTS,
        "recbole_python": None,
    }),
    "multi_worker": ([], {
        "data": "yoochoose-100k", "data_path": None, "epochs": 3,
        "work_dir": None, "report_dir": common.RESULTS,
    }),
    "facade_latency": ([], {
        "synthetic_users": 5000, "synthetic_items": 2000, "epochs": 1,
        "k": 10, "calls": 50, "fresh": 3,
        "work_dir": TMP + "/tfrec_tricks_facade",
        "report_dir": common.RESULTS,
    }),
    "keras_versions": ([], {
        "data": ["ml-100k", "yoochoose-100k"], "data_path": None,
        "synthetic_users": 1000, "synthetic_items": 1000,
        "encoders": ["gru4rec", "sasrec"], "heads": ["softmax", "cpr"],
        "seeds": [0, 1, 2], "flags": "", "parts": ["quality", "step-time"],
        "step_data": None, "steps": 64, "rounds": 5, "report_only": False,
        "epochs": 20, "patience": 3, "output_dir": "runs/benchmarks",
        "report_dir": common.RESULTS, "run_worker": None,
        "steps_worker": None,
    }),
    "large_catalogue": ([], {
        "interactions": 3_000_000, "users": 20_000, "items": 1_000_000,
        "repeat_probability": 0.2, "heads": ["cpr", "softmax"],
        "optimizer": "adagrad", "train_steps": 192,
        "work_dir": TMP + "/tfrec_tricks_large_catalogue",
        "seed": 0, "report_dir": common.RESULTS, "generate_worker": None,
        "train_worker": None,
    }),
    "output_head": ([], {
        "sizes": "3706,40000,1000000", "repeats": 7, "warmup": 2,
        "quick": False,
        "heads": "plain;tied;CP;CPR:100;CPR:100+Mi;CPR:20,100,500+Mi;"
        "MoS(K=4)",
        "batch": 128, "length": 50, "dim": 64, "no_memory": False,
        "out_dir": common.RESULTS, "worker": None, "num_items": None,
    }),
    "prepared_speed": ([], {
        "data": "yoochoose-100k", "data_path": None, "epochs": 4,
        "repeats": 5, "work_dir": TMP + "/tfrec_tricks_prepared_speed",
        "report_dir": common.RESULTS,
    }),
    "ragged_item_features": ([], {
        "cases": [
            "amazon-like",
            "amazon-like, one 20,000-value row",
            "1M items, full softmax",
            "1M items, sampled",
        ],
        "item_file": None, "steps": 8, "rounds": 4, "batch": 128,
        "max_len": 50, "padded": False, "seed": 0,
        "report_dir": common.RESULTS,
    }),
    "recbole_reference": (["--recbole-python", sys.executable], {
        "data": "yoochoose-100k", "data_path": None,
        "recbole_python": sys.executable,
        "models": ["GRU4Rec", "GRU4RecCPR"], "epochs": 25,
        "report_dir": common.RESULTS,
    }),
    "recommend_throughput": ([], {
        "items": [3706, 1_000_000], "users": [20_000, 4_000],
        "memory_users": [10_000, 100_000, 1_000_000], "heads": ["softmax"],
        "formats": ["csv", "parquet", "none"], "repeats": 5, "length": 20,
        "k": 10, "batch_size": 256, "train_examples": 1024,
        "sample_seconds": 0.2, "build_only": False,
        "work_dir": TMP + "/tfrec_tricks_recommend_throughput", "seed": 0,
        "report_dir": common.RESULTS + "/recommend-throughput",
        "train_worker": None, "throughput_worker": None, "load_worker": None,
    }),
    "repeat_headroom": ([], {**TRAINING_RUNS, "seed": 0, "folds": 2}),
    "seed_spread": ([], {**TRAINING_RUNS, "seeds": [0, 1, 2]}),
    "side_information": ([], {
        "data": "ml-100k", "data_path": None, "item_features": None,
        "recipe": None, "encoder": None, "model": {},
        "features": ["genres", "year"],
        "variants": ["id-only", "concat", "sum"], "seeds": [0, 1, 2],
        "train_windows": False, "report_only": False, "epochs": 100,
        "patience": 5, "output_dir": "runs/benchmarks",
        "report_dir": common.RESULTS,
    }),
    "cold_items": ([], {
        "data": "ml-1m", "data_path": None, "file_format": "auto",
        "item_features": None, "features": ["genres", "year"],
        "attribute": "genres", "cold_share": 0.1, "seed": 0,
        "seeds": [0, 1, 2], "encoder": "gru4rec", "train_windows": True,
        "model": {}, "epochs": 100, "patience": 5,
        "work_dir": "runs/benchmarks/cold-items",
        "report_dir": common.RESULTS + "/cold-items",
    }),
    "cold_approaches": (["--report", "a=x.json", "--output", "o"], {
        "report": ["a=x.json"], "output": "o",
    }),
    "scale_out": ([], {
        "sizes": [1_000_000, 10_000_000, 50_000_000],
        "engines": ["memory", "local", "beam"],
        "work_dir": TMP + "/tfrec_tricks_scale_out",
        "memory_max": 10_000_000, "beam_max": 10_000_000,
        "epoch_max": 1_000_000, "steps": 320, "eval_batches": 8,
        "optimizer": "adam", "no_train": False, "seed": 0,
        "report_dir": common.RESULTS,
        "prepare_worker": None, "train_worker": None,
    }),
    "serving_latency": ([], {
        "sizes": None, "requests": None, "batches": None, "batch": 256,
        "quick": False, "child": None, "options": None,
    }),
    "sse_sweep": ([], {
        "data": "ml-100k", "data_path": None,
        "probabilities": "0,0.05,0.1,0.2", "epochs": 10, "patience": 3,
        "output_dir": "runs/benchmarks",
    }),
    "objective_speed": (["--row", "r", "--data ml-1m"], {
        "row": [["r", "--data ml-1m"]], "steps": 32, "rounds": 3, "seed": 0,
        "data_path": None, "report_dir": common.RESULTS,
    }),
    "state_of_the_art": (["--row", "r", "--data ml-1m"], {
        "row": [["r", "--data ml-1m"]], "seeds": [0, 1, 2],
        "data_path": None, "output_dir": "runs", "report_only": False,
        "report_dir": common.RESULTS,
    }),
    "step_profile": ([], {
        "data": "yoochoose-100k", "data_path": None, "split": "recbole",
        "steps": 40, "repeats": 5, "top": 12, "window_stride": None,
        "report_dir": common.RESULTS,
    }),
    "tuning_search": ([], {
        "data": "yoochoose-100k", "data_path": None, "encoder": "gru4rec",
        "every_position": False, "train_windows": False, "window_stride": 0,
        "tuner": "hyperband", "max_minutes": 60.0,
        "max_trials": None, "retrain_top": 3, "seeds": 3, "epochs": 20,
        "patience": 3, "seed": 0, "output_dir": "runs/benchmarks",
        "fixed": {}, "report_dir": common.RESULTS,
    }),
    "windowed_speed": ([], {
        "data": "ml-1m", "data_path": None,
        "models": ["gru4rec:Softmax", "gru4rec:CPR:100+Mi", "sasrec:Softmax",
                   "sasrec:CPR:100+Mi"],
        "epochs": 3, "prefix_batches": 320, "windowed_batches": None,
        "max_users": None, "seed": 0, "report_dir": common.RESULTS,
    }),
}  # fmt: skip

#: The scripts: the modules run with ``python -m`` (they define ``main``).
#: Shared code and the studies the scripts import have no options of their own.
SCRIPTS = sorted(
    path.stem
    for path in BENCHMARKS.glob("*.py")
    if "\ndef main(" in path.read_text(encoding="utf-8")
)


def test_every_script_has_its_defaults_pinned():
    assert sorted([*DEFAULTS, "recbole_worker"]) == SCRIPTS


@pytest.mark.parametrize("name", sorted(DEFAULTS))
def test_a_script_keeps_its_options_and_defaults(name):
    module = importlib.import_module(f"benchmarks.{name}")
    argv, expected = DEFAULTS[name]
    assert vars(module.build_parser().parse_args(argv)) == expected


@pytest.mark.parametrize("name", SCRIPTS)
def test_scripts_are_package_modules_without_sys_path_edits(name):
    module = importlib.import_module(f"benchmarks.{name}")
    assert module.__name__ == f"benchmarks.{name}"
    source = (BENCHMARKS / f"{name}.py").read_text()
    assert "sys.path" not in source
    assert "spec_from_file_location" not in source


def fake_metrics(ndcg: float, epochs: int = 3) -> dict:
    return {
        "num_train_examples": 1234,
        "epochs_run": epochs,
        "seconds_per_epoch_median": 2.5,
        "test": {"ndcg@10": ndcg, "hr@10": 0.5, "mrr@10": 0.2},
        "validation": {"ndcg@10": ndcg - 0.1},
    }


def test_baseline_writes_its_table_numbers_and_chart(tmp_path, monkeypatch):
    trained = []

    def fake_train(config, verbose=0):
        trained.append(config.name)
        return types.SimpleNamespace(metrics=fake_metrics(0.3))

    monkeypatch.setattr(baseline, "train", fake_train)
    monkeypatch.setattr(common, "RESULTS", str(tmp_path))
    argv = ["--datasets", "ml-1m", "--name", "base"]
    assert baseline.main(argv) == 0
    assert trained == ["baseline-ml-1m"]
    text = (tmp_path / "base.md").read_text()
    assert text.startswith(
        "Command: `python -m benchmarks.baseline --datasets ml-1m "
        "--name base`\n\n| dataset |"
    )
    assert "| ml-1m | 1,234 | 3 | 2.5 | 0.3000 |" in text
    assert json.loads((tmp_path / "base.json").read_text()) == {
        "ml-1m": fake_metrics(0.3)
    }
    assert (tmp_path / "base.png").read_bytes()[:4] == b"\x89PNG"


def test_sse_sweep_writes_its_table_and_chart(tmp_path, monkeypatch):
    scores = {0.0: 0.30, 0.1: 0.33}
    monkeypatch.setattr(sse_sweep, "finished_metrics", lambda config: None)

    def fake_train(config, verbose=0):
        p = config.model["sse_item_probability"]
        assert config.name == f"sse-sweep-ml-100k-p{p}"
        return types.SimpleNamespace(metrics=fake_metrics(scores[p]))

    monkeypatch.setattr(sse_sweep, "train", fake_train)
    monkeypatch.setattr(common, "RESULTS", str(tmp_path))
    assert sse_sweep.main(["--probabilities", "0,0.1"]) == 0
    text = (tmp_path / "sse_sweep-ml-100k.md").read_text()
    assert (
        "Command: `python -m benchmarks.sse_sweep --probabilities 0,0.1`"
        in text
    )
    assert "| 0.1 | 0.2300 | 0.3300 | +10.0% |" in text
    assert text.endswith("Selected on validation NDCG@10: p = 0.1.\n")
    assert (tmp_path / "sse_sweep-ml-100k.png").read_bytes()[:4] == b"\x89PNG"


def test_tuning_search_writes_its_report_and_a_copy_of_the_chart(
    tmp_path, monkeypatch
):
    search_dir = tmp_path / "search"
    search_dir.mkdir()
    (search_dir / "trials.png").write_bytes(b"\x89PNG trials")

    def row(label, validation, test, differs=()):
        return {
            "label": label, "validation": validation, "test": test,
            "validation_mean": sum(validation) / len(validation),
            "test_mean": sum(test) / len(test), "training_minutes": 2.0,
            "techniques": "softmax; tied", "differs": list(differs),
            "search_score": 0.3, "config": object(),
        }  # fmt: skip

    def fake_search(config, options):
        assert config.model == {"encoder": "sasrec", "num_layers": 2}
        assert (config.train_windows, config.window_stride) == (True, 10)
        assert config.name == "tuning-yoochoose-100k-sasrec-windows"
        assert (options.max_minutes, options.seeds) == (5.0, 2)
        return types.SimpleNamespace(
            selection=[
                row("defaults", [0.30, 0.32], [0.40, 0.42]),
                row("trial 3", [0.33, 0.33], [0.43, 0.43],
                    ["learning_rate: 0.001 -> 0.003"]),
            ],
            trials=[{"status": "COMPLETED", "score": 0.34}] * 2,
            seconds=240.0,
            output_dir=str(search_dir),
        )  # fmt: skip

    monkeypatch.setattr(tuning_search, "run_search", fake_search)
    monkeypatch.setattr(
        tuning_search,
        "knob_rows",
        lambda search, seed: [
            row("defaults + learning_rate", [0.33], [0.42],
                ["learning_rate: 0.001 -> 0.003"])
        ],
    )  # fmt: skip
    argv = ["--encoder", "sasrec", "--fixed", '{"num_layers": 2}',
            "--max-minutes", "5", "--seeds", "2", "--train-windows",
            "--window-stride", "10",
            "--report-dir", str(tmp_path / "results")]  # fmt: skip
    assert tuning_search.main(argv) == 0
    stem = tmp_path / "results" / "tuning_search-yoochoose-100k-sasrec-windows"
    text = stem.with_suffix(".md").read_text()
    assert "Trained on windows of max_len items (stride 10)" in text
    assert "2 trials (2 completed) in 4.0 min (budget 5 min)" in text
    assert (
        "| **trial 3** (chosen) | 0.3000 | 0.3300 (0.0000) | 0.4300 (0.0000) "
        "| +6.5% / +4.9% | 2.0 | softmax; tied | learning_rate: 0.001 -> "
        "0.003 |"
    ) in text
    assert "| defaults | 0.3000 | 0.3100 (0.0200) | 0.4100 (0.0200) | " in text
    assert "(target: +2% on both within 60 min of search: met)" in text
    assert "seed-0 run: validation 0.3000, test 0.4000" in text
    assert (
        "| learning_rate: 0.001 -> 0.003 | 0.3300 | 0.4200 | +10.0% / +5.0% |"
    ) in text
    assert text.endswith(
        "![best so far](tuning_search-yoochoose-100k-sasrec-windows.png)\n"
    )
    assert stem.with_suffix(".png").read_bytes() == b"\x89PNG trials"
    numbers = json.loads(stem.with_suffix(".json").read_text())
    assert [r["label"] for r in numbers] == [
        "defaults", "trial 3", "defaults + learning_rate"
    ]  # fmt: skip


def test_output_head_writes_its_table_and_chart(tmp_path):
    rows = [
        {"n": 100, "head": "plain", "median_ms": 2.0, "ratio": 1.0},
        {"n": 100, "head": "tied", "median_ms": 3.0, "ratio": 1.5},
    ]
    args = argparse.Namespace(
        batch=8, length=5, dim=4, repeats=3, warmup=1,
        heads=["plain", "tied"], argv=["--sizes", "100"],
    )  # fmt: skip
    paths = output_head.write_results(rows, args, str(tmp_path))
    assert paths == {
        "md": str(tmp_path / "output_head.md"),
        "png": str(tmp_path / "output_head.png"),
    }
    text = (tmp_path / "output_head.md").read_text()
    assert "Command: `python -m benchmarks.output_head --sizes 100`" in text
    assert "| 100 | tied | 3.0 | 1.50 | n/a | n/a |" in text
    assert (tmp_path / "output_head.png").read_bytes()[:4] == b"\x89PNG"


def test_serving_latency_report_and_chart(tmp_path):
    rows = [
        {
            "N": 100, "head": head, "scoring": scoring,
            "p50_ms": 1.0 + i, "p99_ms": 2.0 + i, "batch_ms": 10.0 + i,
            "throughput": 100.0, "export_s": 1.0,
        }
        for i, (head, scoring) in enumerate(serving_latency.VARIANTS)
    ]  # fmt: skip
    options = {
        "requests": "30", "batches": "3", "batch": 256,
        "load_before": "1.0", "load_after": "1.5",
    }  # fmt: skip
    command = common.command_line("serving_latency", ["--quick"])
    paths = common.write_report(
        str(tmp_path / "serving_latency"),
        serving_latency.report(rows, options, command),
        chart=lambda path: serving_latency.plot(rows, options, path),
    )
    text = (tmp_path / "serving_latency.md").read_text()
    assert "Command: `python -m benchmarks.serving_latency --quick`" in text
    # The floor is the last variant: p50 7 ms, batch 16 ms.
    assert "| 100 | softmax | index | 2.00 | 3.00 | 1.00 | 0.29 |" in text
    assert (
        "| 100 | floor | matmul + top_k | 7.00 | 8.00 | 3.50 | 1.00 |" in text
    )
    assert "- N=100: CPR:100+Mi through the index is 2.00x" in text
    assert (
        "- N=100: softmax through the index is 0.29x the floor at batch 1 "
        "and 0.69x at batch 256 (no target: the encoder dominates at this "
        "size); with its table "
        "copy-on-read (before the fix) 0.71x and 0.88x." in text
    )
    assert pathlib.Path(paths["png"]).read_bytes()[:4] == b"\x89PNG"


@pytest.mark.slow
def test_output_head_steps_of_cpr_variants_run_and_add_the_base_loss():
    losses = {}
    for name in ["CPR:4+Mi", "CPR:4+Mi+base", "CPR:4+add+base"]:
        # build_steps builds the weights: the same seed before each build
        # gives CPR:4+Mi and CPR:4+Mi+base the same weights, whatever the
        # tests before drew (seeding after the build made this flaky).
        tf.keras.utils.set_random_seed(0)
        steps, arguments = output_head.build_steps([name], 30, 4, 6, 8)
        losses[name] = float(steps[name](*arguments))
    assert all(loss > 0 for loss in losses.values())
    # The base loss is a second cross-entropy, on top of the same CPR one
    # (about log(30) at these random weights).
    assert losses["CPR:4+Mi+base"] > losses["CPR:4+Mi"] + 1.0
    with pytest.raises(ValueError, match="CPR:4\\+sum"):
        output_head.build_steps(["CPR:4+sum"], 30, 4, 6, 8)


def test_output_head_sampled_steps_score_the_in_batch_candidates():
    losses = {}
    for name in ["sampled", "CPR:3+sampled", "CPR:3+sampled+within"]:
        tf.keras.utils.set_random_seed(0)
        steps, arguments = output_head.build_steps([name], 30, 4, 6, 8)
        losses[name] = float(steps[name](*arguments))
    # A softmax over the batch's 4 targets: about log(4) at random weights.
    for loss in losses.values():
        assert 0.1 < loss < 5.0


def test_name_list_keeps_the_given_order_once_and_names_the_choices():
    parse = common.name_list(("a", "b", "c"), "letters")
    assert parse("c, a,c") == ["c", "a"]
    for bad in ("a,d", ","):
        with pytest.raises(argparse.ArgumentTypeError) as error:
            parse(bad)
        assert str(error.value) == (
            f"letters are a, b, c, comma-separated. Received: {bad!r}"
        )


@pytest.mark.slow
def test_facade_latency_times_each_row_on_a_tiny_run(tmp_path):
    argv = [
        "--synthetic-users", "40", "--synthetic-items", "60",
        "--calls", "3", "--fresh", "1",
        "--work-dir", str(tmp_path / "runs"),
        "--report-dir", str(tmp_path / "results"),
    ]  # fmt: skip
    assert facade_latency.main(argv) == 0
    text = (tmp_path / "results" / "facade_latency.md").read_text()
    assert text.startswith(
        f"Command: `{common.command_line('facade_latency', argv)}`"
    )
    numbers = json.loads(
        (tmp_path / "results" / "facade_latency.json").read_text()
    )
    assert {row: len(ms) for row, ms in numbers.items()} == {
        "first call": 1,
        "later calls": 3,
        "one job per call": 1,
        "served call alone": 3,
    }
    assert all(f"| {row} |" in text for row in facade_latency.ROWS)
