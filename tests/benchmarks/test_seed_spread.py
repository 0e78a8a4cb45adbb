"""benchmarks.seed_spread: one run per (row, seed), reuse, report."""

import argparse

import pytest

from benchmarks import common, seed_spread
from tfrec_tricks.config_fields import field_default
from tfrec_tricks.training import ablation
from tfrec_tricks.training.ablation import run_ablation
from tfrec_tricks.training.train_config import TrainConfig

pytestmark = pytest.mark.slow


def test_seeds_reuse_the_ablation_run_and_differ(
    tmp_path, monkeypatch, tiny_ablation_base
):
    base = tiny_ablation_base
    (row,) = run_ablation(base, ["Softmax"], dropouts=(0.2,))
    trained = []

    def counting_train(config, verbose=0):
        trained.append(config.seed)
        return ablation.train(config, verbose=verbose)

    monkeypatch.setattr(seed_spread, "train", counting_train)
    results = seed_spread.run_seeds(base, ["Softmax"], [0, 1], 0.2)
    # Seed 0 is the ablation's run (read, not trained); seed 1 is new.
    assert trained == [1]
    assert results["Softmax", 0]["test"] == row.test
    run = tmp_path / "abl-softmax-dropout0.2-seed1"
    assert (run / "metrics.json").is_file()
    assert results["Softmax", 1]["test"] != row.test


def test_report_gives_mean_range_and_change():
    def metrics(test, validation):
        return {
            "test": {"ndcg@10": test, "hr@10": 2 * test, "mrr@10": test / 2},
            "validation": {"ndcg@10": validation},
            "epochs_run": 6,
            "seconds_per_epoch_median": 30.0,
            "test_by_target": {
                "repeat": {"ndcg@10": 2 * test},
                "new": {"ndcg@10": test / 2},
            },
        }

    results = {
        ("Softmax", 0): metrics(0.40, 0.30),
        ("Softmax", 1): metrics(0.42, 0.31),
        ("MoS", 0): metrics(0.41, 0.32),
        ("MoS", 1): metrics(0.45, 0.33),
    }
    args = argparse.Namespace(
        data="d",
        encoder="sasrec",
        num_layers=2,
        dropout=0.2,
        head_dropout=0.3,
        every_position=True,
        train_windows=False,
        eval_negatives=0,
        split="recbole",
        epochs=40,
        patience=5,
        rows=["Softmax", "MoS"],
        seeds=[0, 1],
        name=None,
        learning_rate=0.005,
        model={},
    )
    command = "python -m benchmarks.seed_spread --rows Softmax MoS"
    text = seed_spread.report(results, args, command)
    lines = text.splitlines()
    header = next(line for line in lines if line.startswith("| variant"))
    separator = lines[lines.index(header) + 1]
    assert header.count("|") == separator.count("|") == 10
    assert "| Softmax | 0.4000 / 0.4200 | 0.4100 | 0.0200 | +0.0% |" in text
    # MoS: mean 0.43, range 0.04, +4.9% over 0.41.
    assert "| MoS | 0.4100 / 0.4500 | 0.4300 | 0.0400 | +4.9% |" in text
    # Validation per seed and its mean; test repeat and new target means.
    assert "| 0.3200 / 0.3300 | 0.3250 | 0.8600 | 0.2150 |" in text
    # Runs from before the split by target kind leave those cells empty.
    del results["MoS", 1]["test_by_target"]
    assert "| 0.3200 / 0.3300 | 0.3250 |  |  |" in seed_spread.report(
        results, args, command
    )
    assert "split recbole" in text
    assert "d=64, Adam 0.005, batch 128" in text
    assert f"Command: `{command}`" in text
    # NDCG, HR and MRR: mean (range); epochs and minutes (6 x 30 s).
    assert (
        "| MoS | 0.4300 (0.0400) | 0.8600 (0.0800) | 0.2150 (0.0200) | 6.0 "
        "| 3.0 |"
    ) in text
    assert "sampled negatives" not in text
    assert "Model settings" not in text
    args.model = {"tie_embeddings": False}
    assert 'Model settings of every row: `{"tie_embeddings": false}`.' in (
        seed_spread.report(results, args, command)
    )
    # No --learning-rate: train's default for the protocol.
    args.learning_rate = None
    assert "Adam 0.001," in seed_spread.report(results, args, command)
    args.train_windows = True
    assert "Adam 0.005," in seed_spread.report(results, args, command)
    # A run without epoch times (reused from before they were recorded).
    assert seed_spread.training_minutes({"epochs_run": 4}) == 0
    for key in results:
        results[key]["test_sampled"] = dict(results[key]["test"])
    args.eval_negatives = 100
    text = seed_spread.report(results, args, command)
    assert "With 100 sampled negatives" in text
    assert "| variant | test_sampled ndcg@10 |" in text


@pytest.mark.parametrize(
    "options",
    [
        ["--encoder", "gru4rec"],
        ["--encoder", "sasrec", "--num-layers", "2", "--every-position"],
        ["--encoder", "gru4rec", "--split", "every-user"],
        [
            "--encoder",
            "sasrec",
            "--train-windows",
            "--window-stride",
            "10",
            "--eval-negatives",
            "100",
        ],
        ["--encoder", "gru4rec", "--train-windows", "--learning-rate", "0.005"],
    ],
)
def test_base_config_is_the_ablations(options):
    # Seed 0 reuses the ablation's run only if the configs are equal.
    from tfrec_tricks.cli import parser as cli_parser

    shared = [
        "--data", "yoochoose-100k", "--data-path", "data", "--epochs", "40",
        "--patience", "5", "--head-dropout", "0.3", "--output-dir", "out",
        "--name", "yc",
    ]  # fmt: skip
    args = seed_spread.build_parser().parse_args([*shared, *options])
    parser = cli_parser.build_parser()
    expected = cli_parser.train_config(
        cli_parser.parse(parser, ["ablation", *shared, *options])
    )
    assert seed_spread.base_config(args) == expected


def test_model_settings_reach_every_row_but_not_its_head():
    args = seed_spread.build_parser().parse_args(
        ["--rows", "Softmax", "Softmax + CPR:100 + Mi", "--model",
         '{"tie_embeddings": false, "sse_item_probability": 0.1}']
    )  # fmt: skip
    seed_spread.check_rows(seed_spread.build_parser(), args)
    base = seed_spread.base_config(args)
    for row in args.rows:
        model = seed_spread.row_config(base, row, 1, 0.2).model
        assert model["tie_embeddings"] is False
        assert model["sse_item_probability"] == 0.1
        assert model["head"] == ablation.ROWS[row]["head"]


@pytest.mark.parametrize(
    "model, message",
    [
        ("[1, 2]", "must be a JSON object"),
        ("{tie: no}", "not valid JSON"),
        ('{"head": "mos"}', "--model sets ['head'], which row 'Softmax'"),
        ('{"dropout": 0.5}', "own options: --dropout"),
        ('{"tie_embedding": false}', "Unknown model config keys"),
        ('{"sse_item_probability": 2}', "sse_item_probability"),
    ],
)
def test_a_bad_model_setting_is_a_usage_error(capsys, model, message):
    parser = seed_spread.build_parser()
    with pytest.raises(SystemExit) as exited:
        args = parser.parse_args(["--rows", "Softmax", "--model", model])
        seed_spread.check_rows(parser, args)
    assert exited.value.code == 2
    assert message in capsys.readouterr().err


def test_a_file_of_sessions_names_the_runs_and_keeps_its_first_sessions(
    tmp_path,
):
    source = tmp_path / "clicks.tsv"
    source.write_text("".join(f"s{i % 4}\ti{i}\t{i}\n" for i in range(12)))
    args = seed_spread.build_parser().parse_args(
        [
            "--data", "file", "--data-path", str(source), "--format",
            "sessions", "--max-sessions", "2", "--output-dir",
            str(tmp_path / "out"), "--encoder", "gru4rec",
        ]
    )  # fmt: skip
    config = seed_spread.base_config(args)
    assert config.name == "clicks-2-gru4rec"
    assert config.file_format == "sessions"
    kept = open(config.data_path).read().split()[::3]
    assert sorted(set(kept)) == ["s0", "s1"]
    # --name prefixes the runs; the report is still named after the data.
    args.name = "runs-x"
    assert seed_spread.base_config(args).name == "runs-x"
    assert common.data_label(args, by_name=False) == "clicks-2"


def test_synthetic_sizes_reach_the_config_and_name_the_runs():
    argv = ["--data", "synthetic", "--encoder", "gru4rec"]
    default = seed_spread.base_config(
        seed_spread.build_parser().parse_args(argv)
    )
    assert (default.synthetic_users, default.synthetic_items) == (1000, 1000)
    for name in ("synthetic_users", "synthetic_items"):
        assert common.SYNTHETIC_SIZE == field_default(TrainConfig, name)
    assert default.name == "synthetic-gru4rec"
    args = seed_spread.build_parser().parse_args(
        [*argv, "--synthetic-users", "300", "--synthetic-items", "40000"]
    )
    config = seed_spread.base_config(args)
    assert (config.synthetic_users, config.synthetic_items) == (300, 40000)
    assert config.name == "synthetic-300x40000-gru4rec"


def test_report_stem_names_only_a_non_default_split(tmp_path):
    # The stems of seed_spread's and repeat_headroom's reports.
    args = argparse.Namespace(
        report_dir=str(tmp_path / "reports"),
        data="yoochoose-100k",
        encoder="sasrec",
        split="recbole",
    )

    def report_stem(args, kind):
        return common.report_stem(
            args.report_dir, kind, args.data, args.encoder, split=args.split
        )

    stem = report_stem(args, "repeat_headroom")
    assert stem == str(
        tmp_path / "reports" / "repeat_headroom-yoochoose-100k-sasrec"
    )
    assert (tmp_path / "reports").is_dir()
    args.split = "every-user"
    assert report_stem(args, "seed_spread").endswith(
        "seed_spread-yoochoose-100k-sasrec-every-user"
    )
