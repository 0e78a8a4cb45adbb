"""benchmarks.side_information: variants, summaries, the report and the
record of seeds carried over between machines."""

import json

from benchmarks import side_information
from tfrec_tricks.training.train_config import TrainConfig


def _metrics(val, test, seconds=2.0, epochs=5, groups=None):
    metrics = {
        "validation_seen_excluded": {"ndcg@10": val, "hr@10": 2 * val},
        "test_seen_excluded": {"ndcg@10": test, "hr@10": 2 * test},
        "seconds_per_epoch_median": seconds,
        "epochs_run": epochs,
    }
    if groups is not None:
        metrics["test_seen_excluded_by_popularity"] = groups
    return metrics


def _groups(tail, head):
    return {
        "0": {"share": 0.0},
        "1-9": {"share": 0.25, "ndcg@10": tail},
        "10+": {"share": 0.75, "ndcg@10": head},
    }


def test_variants_differ_only_in_features_and_fusion():
    base = TrainConfig(data="ml-100k", model={"encoder": "gru4rec"})
    plain = side_information.variant_config(base, "id-only", ["genres"], 1)
    fused = side_information.variant_config(base, "concat", ["genres"], 1)
    assert dict(plain.model) == {"encoder": "gru4rec"}
    assert dict(fused.model) == {
        "encoder": "gru4rec",
        "feature_fusion": "concat",
        "features": ["genres"],
    }
    assert (plain.name, fused.name) == (
        "ml-100k-id-only-seed1",
        "ml-100k-concat-seed1",
    )
    assert plain.seed == fused.seed == 1


def test_base_config_ranks_seen_items_last_and_takes_a_recipe():
    args = side_information.build_parser().parse_args(
        ["--data", "ml-1m", "--recipe", "long-histories-1h"]
    )
    config = side_information.base_config(args)
    assert config.eval_seen_excluded
    assert config.epochs == 25  # the recipe's, not the script's default
    assert config.model.value("encoder") == "sasrec"


def test_model_settings_reach_every_variant_and_name_the_runs():
    args = side_information.build_parser().parse_args(
        ["--encoder", "sasrec", "--model", '{"num_layers": 2, "dropout": 0.5}']
    )
    config = side_information.base_config(args)
    assert config.model.value("num_layers") == 2
    assert config.model.value("dropout") == 0.5
    assert config.name == "ml-100k-sasrec-num_layers2-dropout0.5"
    plain = side_information.build_parser().parse_args(["--encoder", "sasrec"])
    assert side_information.base_config(plain).name == "ml-100k-sasrec"


def test_the_report_gives_means_ranges_and_changes():
    rows = {
        "id-only": [_metrics(0.10, 0.08), _metrics(0.12, 0.10)],
        "sum": [_metrics(0.11, 0.09, 3.0), _metrics(0.13, 0.11, 3.0)],
    }
    numbers = {"data": "ml-100k", "encoder": "gru4rec", "variants": {}}
    for name, results in rows.items():
        numbers["variants"][name] = side_information.variant_results(results)
    numbers["id-only"] = numbers["variants"]["id-only"]
    summary = numbers["variants"]["sum"]["test ndcg@10"]
    assert round(summary["mean"], 6) == 0.1
    assert (summary["min"], summary["max"]) == (0.09, 0.11)
    args = side_information.build_parser().parse_args([])
    text = side_information.report_text(args, numbers, "python -m x")
    assert "| sum | 0.1200 [0.1100, 0.1300] | 0.1000 [0.0900, 0.1100] |" in text
    assert "+11.1%" in text  # 0.10 / 0.09 - 1
    assert "3.0 (1.50x)" in text
    assert text.endswith("```\npython -m x\n```")


def test_the_chart_is_written(tmp_path):
    results = [_metrics(0.1, 0.08)]
    numbers = {
        "data": "d",
        "encoder": "e",
        "variants": {
            "id-only": side_information.variant_results(results),
            "sum": side_information.variant_results(results),
        },
    }
    path = tmp_path / "chart.png"
    side_information.draw_chart(numbers, str(path))
    assert path.read_bytes()[:4] == b"\x89PNG"


def test_the_report_splits_test_ndcg_by_target_popularity(tmp_path):
    rows = {
        "id-only": [_metrics(0.1, 0.1, groups=_groups(0.02, 0.12))],
        "sum": [
            _metrics(0.1, 0.1, groups=_groups(0.03, 0.12)),
            _metrics(0.1, 0.1, groups=_groups(0.05, 0.12)),
        ],
    }
    numbers = {"data": "d", "encoder": "e", "variants": {}}
    for name, results in rows.items():
        numbers["variants"][name] = side_information.variant_results(results)
    numbers["id-only"] = numbers["variants"]["id-only"]
    groups = numbers["variants"]["sum"]["test ndcg@10 by popularity"]
    # A group without targets has no metric and is left out.
    assert list(groups) == ["1-9", "10+"]
    assert groups["1-9"]["mean"] == 0.04
    assert (groups["1-9"]["min"], groups["1-9"]["max"]) == (0.03, 0.05)
    args = side_information.build_parser().parse_args([])
    text = side_information.report_text(args, numbers, "python -m x")
    assert "| 1-9 | 25.0% | 0.0200 | 0.0400 (+100.0%) |" in text
    assert "| 10+ | 75.0% | 0.1200 | 0.1200 (0.0%) |" in text
    # Against an id-only group of NDCG 0, no ratio: the values alone.
    numbers["id-only"]["test ndcg@10 by popularity"]["1-9"]["mean"] = 0.0
    text = side_information.report_text(args, numbers, "python -m x")
    assert "| 1-9 | 25.0% | 0.0000 | 0.0400 |" in text
    path = tmp_path / "chart.png"
    side_information.draw_chart(numbers, str(path))
    assert path.read_bytes()[:4] == b"\x89PNG"


def test_runs_without_popularity_groups_give_no_popularity_table():
    results = [_metrics(0.1, 0.08), _metrics(0.1, 0.08, groups=_groups(0, 1))]
    assert "test ndcg@10 by popularity" not in (
        side_information.variant_results(results)
    )


class _Run:
    def __init__(self, metrics):
        self.metrics = metrics


def test_recorded_seeds_carry_over_to_another_machine(tmp_path, monkeypatch):
    trained = []

    def fake_train(config, verbose=0):
        trained.append(config.name)
        return _Run(
            _metrics(0.1 + config.seed / 100, 0.08, groups=_groups(0, 1))
        )

    monkeypatch.setattr(side_information, "train", fake_train)
    # No run folder is ever finished here: a new machine each time.
    monkeypatch.setattr(side_information, "finished_metrics", lambda c: None)
    places = ["--report-dir", str(tmp_path), "--output-dir", str(tmp_path)]
    flags = ["--variants", "id-only", "sum", *places, "--seeds", "0", "1"]
    assert side_information.main(flags) == 0
    assert len(trained) == 4
    path = tmp_path / "side_information-ml-100k-gru4rec.json"
    runs = json.loads(path.read_text())["variants"]["sum"]["runs"]
    assert sorted(runs) == ["0", "1"]
    assert runs["1"]["metrics"]["validation_seen_excluded"]["ndcg@10"] == 0.11
    # Reported again elsewhere: every seed comes from the record.
    assert side_information.main(["--report-only", *flags]) == 0
    assert len(trained) == 4
    text = (tmp_path / "side_information-ml-100k-gru4rec.md").read_text()
    assert "Carried over from this report's earlier record" in text
    assert "id-only seeds 0, 1; sum seeds 0, 1" in text
    assert "| sum | 0.1050 [0.1000, 0.1100] |" in text
    # The command quoted trains the seeds; --report-only is not in it.
    assert "--report-only" not in text and "--seeds 0 1" in text
    # A third seed is not finished: the report says so, means over two.
    assert side_information.main(["--report-only", *flags, "2"]) == 0
    text = (tmp_path / "side_information-ml-100k-gru4rec.md").read_text()
    assert "**Not finished yet**" in text and "sum seeds 2" in text
    assert len(trained) == 4
    # A variant with no seed at all is named too.
    variants = ["--variants", "id-only", "concat", *places, "--seeds", "0"]
    assert side_information.main(["--report-only", *variants]) == 0
    text = (tmp_path / "side_information-ml-100k-gru4rec.md").read_text()
    assert "**Not trained yet**: concat." in text


def test_a_record_of_other_settings_is_not_carried_over(
    tmp_path, monkeypatch, capsys
):
    def fake_train(config, verbose=0):
        return _Run(_metrics(0.1, 0.08))

    monkeypatch.setattr(side_information, "train", fake_train)
    monkeypatch.setattr(side_information, "finished_metrics", lambda c: None)
    places = ["--report-dir", str(tmp_path), "--output-dir", str(tmp_path)]
    flags = ["--variants", "id-only", *places, "--seeds", "0"]
    assert side_information.main(flags) == 0
    # The same command now means 7 epochs: the record is of other runs.
    status = side_information.main(["--epochs", "7", "--report-only", *flags])
    assert status == 1
    err = capsys.readouterr().err
    assert "trained with other settings" in err
    assert "No id-only seed is finished or recorded" in err


def test_the_report_pairs_each_seed_with_id_only_s_run_of_that_seed():
    def recorded(*pairs):
        results = [_metrics(val, test) for val, test in pairs]
        row = side_information.variant_results(results)
        row["runs"] = {str(s): {"metrics": m} for s, m in enumerate(results)}
        return row

    numbers = {
        "data": "ml-100k",
        "encoder": "gru4rec",
        "variants": {
            "id-only": recorded((0.10, 0.08), (0.12, 0.10)),
            # Seed 1's validation is behind its id-only run, though its
            # value is above id-only's mean.
            "sum": recorded((0.11, 0.09), (0.114, 0.11)),
            "concat": side_information.variant_results([_metrics(1, 1)]),
        },
    }
    numbers["id-only"] = numbers["variants"]["id-only"]
    args = side_information.build_parser().parse_args([])
    text = side_information.report_text(args, numbers, "python -m x")
    assert "| variant | validation | ahead | test | ahead |" in text
    assert (
        "| sum | 0: +10.0%, 1: -5.0% | 1/2 | 0: +12.5%, 1: +10.0% | 2/2 |"
        in (text)
    )
    # A variant without per-seed records (older reports) has no row.
    assert "| concat | " not in text.split("paired by seed")[1]
    # Without any record, no paired table.
    for row in numbers["variants"].values():
        row.pop("runs", None)
    text = side_information.report_text(args, numbers, "python -m x")
    assert "paired by seed" not in text


def test_the_id_only_row_leaves_its_change_empty():
    numbers = {"data": "d", "encoder": "gru4rec", "variants": {}}
    numbers["variants"]["id-only"] = side_information.variant_results(
        [_metrics(0.1, 0.08)]
    )
    numbers["id-only"] = numbers["variants"]["id-only"]
    args = side_information.build_parser().parse_args([])
    text = side_information.report_text(args, numbers, "python -m x")
    assert (
        "| id-only | 0.1000 [0.1000, 0.1000] | 0.0800 [0.0800, 0.0800] |  |"
        in (text)
    )
    assert "+0.0%" not in text


def test_a_data_file_with_an_item_file_names_runs_by_the_file():
    args = side_information.build_parser().parse_args(
        [
            "--data", "file",
            "--data-path", "data/amazon-sports/sports.inter",
            "--item-features", "data/amazon-sports/sports.item",
            "--encoder", "sasrec",
        ]
    )  # fmt: skip
    base = side_information.base_config(args)
    plain = side_information.variant_config(base, "id-only", ["a"], 0)
    fused = side_information.variant_config(base, "sum", ["a"], 0)
    assert plain.name == "sports-sasrec-id-only-seed0"
    # Ids only read no .item file: its rows would add cold items.
    assert plain.item_features is None
    assert fused.item_features == "data/amazon-sports/sports.item"
    assert list(fused.model.value("features")) == ["a"]
