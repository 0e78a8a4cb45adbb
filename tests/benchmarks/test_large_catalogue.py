"""benchmarks.large_catalogue: the random file, the options; its report
(benchmarks.large_catalogue_report)."""

import argparse
import json
import subprocess
import sys

import numpy as np
import pytest

from benchmarks import (
    common,
    large_catalogue,
    large_catalogue_data,
    large_catalogue_report,
)

GB = large_catalogue_report.GB


def parse(*argv):
    return large_catalogue.build_parser().parse_args(list(argv))


def test_user_lengths_sum_to_the_interactions_with_a_minimum():
    rng = np.random.default_rng(0)
    lengths = large_catalogue_data.user_lengths(rng, 3_000, 100)
    assert lengths.sum() == 3_000 and len(lengths) == 100
    assert lengths.min() >= large_catalogue_data.MIN_LENGTH
    exact = large_catalogue_data.user_lengths(rng, 500, 100)
    assert (exact == large_catalogue_data.MIN_LENGTH).all()
    with pytest.raises(ValueError, match="interactions=499, users=100"):
        large_catalogue_data.user_lengths(rng, 499, 100)


def test_item_pool_holds_every_item_and_a_zipf_head():
    rng = np.random.default_rng(1)
    pool = large_catalogue_data.item_pool(rng, 20_000, 2_000)
    assert len(pool) == 20_000 and pool.dtype == np.int32
    counts = np.bincount(pool, minlength=2_001)
    assert counts[0] == 0 and (counts[1:] >= 1).all()
    # Zipf: the most popular item is far above the mean (10 per item).
    assert counts.max() > 100
    # Fewer draws than items: distinct items, as many as drawn.
    small = large_catalogue_data.item_pool(rng, 50, 2_000)
    assert len(np.unique(small)) == 50


def test_repeats_copy_one_of_the_users_last_items():
    rng = np.random.default_rng(2)
    lengths = large_catalogue_data.user_lengths(rng, 40_000, 1_000)
    starts = np.cumsum(lengths) - lengths
    window = large_catalogue_data.REPEAT_WINDOW

    def repeat_share(probability):
        items = large_catalogue_data.item_sequences(
            rng, lengths, 100_000, probability
        )
        repeated = []
        for start, length in zip(starts, lengths):
            user = items[start : start + length]
            repeated += [
                user[t] in user[max(0, t - window) : t]
                for t in range(1, length)
            ]
        return np.mean(repeated)

    # Fresh draws from 100k items rarely hit one of the last 10 items.
    assert repeat_share(0.0) < 0.01
    assert 0.27 < repeat_share(0.3) < 0.33


def test_the_file_is_a_udata_log_user_after_user(tmp_path):
    path = str(tmp_path / "x.udata")
    counts = large_catalogue_data.write_interactions(
        path, 3_000, 200, 500, 0.2, seed=3
    )
    assert not (tmp_path / "x.udata.part").exists()
    rows = np.loadtxt(path, dtype=np.int64, delimiter="\t")
    assert rows.shape == (3_000, 4)
    users, items, ratings, stamps = rows.T
    assert counts == {
        "interactions": 3_000,
        "users": 200,
        "items": len(np.unique(items)),
    }
    # Every item occurs (2,400 fresh draws for 500 items), ids 1..500.
    assert counts["items"] == 500 and items.min() == 1
    assert set(ratings) <= {1, 2, 3, 4, 5}
    # One block per user, in order; times increase within a user.
    assert (np.diff(users) >= 0).all()
    assert np.unique(users).tolist() == list(range(1, 201))
    same = np.diff(users) == 0
    assert (np.diff(stamps)[same] == large_catalogue_data.GAP_SECONDS).all()
    assert np.bincount(users)[1:].min() >= large_catalogue_data.MIN_LENGTH
    again = str(tmp_path / "y.udata")
    large_catalogue_data.write_interactions(again, 3_000, 200, 500, 0.2, seed=3)
    assert open(path).read() == open(again).read()


def test_step_seconds_leave_out_the_first_call():
    ends = [(0, 0.0), (16, 9.0), (32, 10.6), (48, 12.0), (64, 13.6)]
    assert large_catalogue.step_seconds(ends) == pytest.approx(0.1)
    assert large_catalogue.step_seconds(ends[:3]) is None
    # The last call of a short epoch counts its own steps.
    ends = [(0, 0.0), (16, 9.0), (32, 10.6), (40, 11.4)]
    assert large_catalogue.step_seconds(ends) == pytest.approx(0.1)


def test_options_take_k_and_m_and_refuse_bad_values(capsys):
    args = parse("--items", "2M", "--users", "50k", "--heads", "softmax")
    assert (args.items, args.users, args.heads) == (
        2_000_000,
        50_000,
        ["softmax"],
    )
    assert parse("--heads", "softmax,cpr,softmax").heads == ["softmax", "cpr"]
    for argv in (("--items", "0"), ("--users", "x"), ("--heads", "mos")):
        with pytest.raises(SystemExit):
            parse(*argv)
    for argv in (
        ["--train-steps", "-1"],
        ["--repeat-probability", "1"],
        ["--interactions", "1000", "--users", "1000"],
    ):
        with pytest.raises(SystemExit) as raised:
            large_catalogue.main(argv)
        assert raised.value.code == 2
    assert "at least 5 per user" in capsys.readouterr().err


def test_train_arguments_are_the_command_lines():
    argv = large_catalogue.train_arguments("/p", "cpr", "/runs")
    text = " ".join(argv)
    assert text.startswith("--prepared /p --objective sampled")
    assert "--embedding-dim 32 --epochs 1 --optimizer adagrad" in text
    assert "--learning-rate 0.1 --head cpr" in text
    assert "--output-dir /runs --name large-cpr" in text
    adam = " ".join(large_catalogue.train_arguments("/p", "cpr", "/r", "adam"))
    assert "--optimizer adam --learning-rate 0.001" in adam


def fake_results():
    def stage(seconds, gb, **extra):
        return {
            "seconds": seconds,
            "cpu_seconds": 20.0,
            "peak_rss": gb * GB,
            "returncode": 0,
            "log": "/w/logs/x.log",
            **extra,
        }

    train = stage(
        900.0,
        3.5,
        run_dir="/w/runs/large-cpr",
        steps=480,
        batch_size=128,
        examples=61_440,
        epoch_examples=2_700_000,
        whole_epoch=False,
        train_seconds=700.0,
        step_seconds=1.25,
        step_cpu_seconds=0.8,
        validation_seconds=80.0,
        after_fit_seconds=150.0,
        validation_examples=100_000,
        test_examples=100_000,
        num_items=1_000_001,
        eval_batch_size=67,
        metrics={"test": {"ndcg@10": 0.0512, "hr@10": 0.07}},
    )
    return {
        "generate": stage(
            30.0, 0.7, interactions=3_000_000, users=100_000, items=1_000_000
        ),
        "prepare": stage(60.0, 1.2),
        "num_items": 1_000_001,
        "heads": {
            "cpr": {
                "train": train,
                "export": stage(40.0, 2.0, path="/w/saved_models/large-cpr/1"),
                "serve": stage(
                    8.0,
                    1.1,
                    load_seconds=2.5,
                    rows=2,
                    first_call_seconds=0.4,
                    call_seconds=0.05,
                ),
            },
            "softmax": {
                "train": {
                    "seconds": 5.0,
                    "peak_rss": 0.5 * GB,
                    "returncode": 1,
                    "log": "/w/logs/train-softmax.log",
                }
            },
        },
    }


def test_the_report_tables_and_the_batched_evaluation_check(tmp_path):
    results = fake_results()
    args = parse("--report-dir", str(tmp_path), "--train-steps", "480")
    command = common.command_line("large_catalogue", [])
    flags = [*large_catalogue.TRAIN_FLAGS, *common.optimizer_flags("adagrad")]
    text = large_catalogue_report.report(results, args, command, flags)
    assert text.startswith("Command: `python -m benchmarks.large_catalogue`")
    assert (
        "Training: `tfrec-tricks train --prepared DIR --objective sampled "
        "--embedding-dim 32 --epochs 1 --optimizer adagrad --learning-rate "
        "0.1 --head H`" in text
    )
    assert "stopped after 480 steps" in text
    assert "| generate | 30 | 20 | 0.70 | 3,000,000 interactions" in text
    assert "| prepare | 60 | 20 | 1.20 | N = 1,000,001" in text
    assert (
        "| train (cpr) | 900 | 20 | 3.50 | 480 steps, 61,440 of the epoch's "
        "2,700,000 examples (the whole epoch: 7.3 h at this rate); then "
        "validation and test over all N, 67 examples per batch |" in text
    )
    assert "| export (cpr) | 40 | 20 | 2.00 | large-cpr |" in text
    assert "first call 400 ms, then 50 ms" in text
    assert "| train (softmax) | 5 | 0 | 0.50 | failed (exit 1, " in text
    assert (
        "| cpr | 1250 | 800 | 700 | 80 | 150 | 0.0512 | 0.0700 | 3.50 | 400 |"
        in text
    )
    assert "against 400 GB for one [test examples, N]" in text
    assert "evaluated in batches." in text
    paths = common.write_report(
        str(tmp_path / "large_catalogue"),
        text,
        results,
        chart=lambda path: large_catalogue_report.plot(results, path),
    )
    assert (tmp_path / "large_catalogue.png").read_bytes()[:4] == b"\x89PNG"
    assert json.loads(open(paths["json"]).read())["num_items"] == 1_000_001


def test_a_peak_near_the_full_matrix_is_not_called_batched():
    results = fake_results()
    results["heads"]["cpr"]["train"]["peak_rss"] = 100 * GB
    (line,) = large_catalogue_report.batched_evaluation(results)
    assert line.endswith("NOT clearly batched (peak above a tenth of it).")


@pytest.mark.slow
def test_the_serve_script_needs_only_tensorflow(tmp_path):
    import tensorflow as tf

    class Module(tf.Module):
        @tf.function(input_signature=[tf.TensorSpec([None, None], tf.string)])
        def recommend(self, history):
            return {
                "item_ids": history[:, :1],
                "scores": tf.ones(tf.shape(history[:, :1])),
            }

    module = Module()
    model = str(tmp_path / "model")
    tf.saved_model.save(
        module, model, signatures={"serving_default": module.recommend}
    )
    request = tmp_path / "request.json"
    request.write_text(
        json.dumps(
            {"instances": [{"history": ["a", "b"]}, {"history": ["c", ""]}]}
        )
    )
    result = tmp_path / "result.json"
    subprocess.run(
        [
            sys.executable,
            "-c",
            large_catalogue.SERVE_SCRIPT,
            model,
            str(request),
            str(result),
        ],
        check=True,
    )
    served = json.loads(result.read_text())
    assert served["item_ids"] == [["a"], ["c"]]
    assert served["rows"] == 2 and served["call_seconds"] > 0


def test_positive_is_an_argparse_type():
    assert large_catalogue.positive("1_000") == 1_000
    with pytest.raises(argparse.ArgumentTypeError, match="Received: '-2'"):
        large_catalogue.positive("-2")
