"""benchmarks/multi_worker.py: its cluster configs and its table."""

import json

from benchmarks import multi_worker


def result(seconds, replicas, test):
    return {
        "seconds_per_epoch_median": seconds,
        "num_replicas": replicas,
        "validation": {"ndcg@10": 0.3},
        "test": {"ndcg@10": test},
    }


def test_tf_configs_name_one_cluster_and_each_task():
    configs = [json.loads(c) for c in multi_worker.tf_configs(2)]
    assert configs[0]["cluster"] == configs[1]["cluster"]
    assert [c["task"] for c in configs] == [
        {"type": "worker", "index": 0},
        {"type": "worker", "index": 1},
    ]
    addresses = configs[0]["cluster"]["worker"]
    assert len(set(addresses)) == 2
    assert all(a.startswith("127.0.0.1:") for a in addresses)


def test_table_has_a_row_per_setup_and_the_ratio():
    text = multi_worker.table(
        {"1 process": result(2.0, 1, 0.40), "2 workers": result(5.0, 2, 0.39)}
    )
    assert "| 1 process | 1 | 2.0 | 0.3000 | 0.4000 |" in text
    assert "| 2 workers | 2 | 5.0 | 0.3000 | 0.3900 |" in text
    assert "2.50x" in text and "-0.0100" in text


def test_options():
    args = multi_worker.parse_args(["--data", "synthetic", "--epochs", "2"])
    assert args.data == "synthetic" and args.epochs == 2
