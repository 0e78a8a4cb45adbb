"""``TF_CONFIG`` checks of ``tfrec_tricks.training.distribution`` (no cluster
started: the processes are in tests/training/test_multi_worker.py)."""

import json

import pytest

from tfrec_tricks.training import distribution

CLUSTER = {"chief": ["host:1"], "worker": ["host:2", "host:3"]}


def _set(monkeypatch, value):
    text = value if isinstance(value, str) else json.dumps(value)
    monkeypatch.setenv("TF_CONFIG", text)


@pytest.mark.parametrize(
    "task", [{"type": "chief", "index": 0}, {"type": "worker", "index": 1}]
)
def test_a_task_of_its_cluster_is_accepted(task, monkeypatch):
    _set(monkeypatch, {"cluster": CLUSTER, "task": task})
    distribution.check_tf_config()


@pytest.mark.parametrize("value", ["", "  ", "{}"])
def test_unset_or_empty_is_one_process(value, monkeypatch):
    _set(monkeypatch, value)
    distribution.check_tf_config()


@pytest.mark.parametrize(
    "config, named",
    [
        (
            {"cluster": CLUSTER, "task": {"type": "worker", "index": 2}},
            "task is worker 2, but its cluster has worker indices 0..1",
        ),
        (
            {"cluster": CLUSTER, "task": {"type": "chief", "index": 1}},
            "task is chief 1, but its cluster has chief indices 0..0",
        ),
        (
            {"cluster": {"worker": ["h:1"]}, "task": {"type": "chief"}},
            "lists no chief tasks",
        ),
        (
            {"cluster": CLUSTER, "task": {"type": "evaluator", "index": 0}},
            "task type 'evaluator'",
        ),
        (
            {"cluster": CLUSTER, "task": {"type": "worker", "index": True}},
            "index must be an integer",
        ),
        ({"cluster": ["h:1"], "task": {}}, "must be an object"),
        ("{not json", "not valid JSON"),
    ],
)
def test_a_task_outside_its_cluster_is_refused(config, named, monkeypatch):
    _set(monkeypatch, config)
    with pytest.raises(ValueError) as error:
        distribution.check_tf_config()
    assert "TF_CONFIG" in str(error.value) and named in str(error.value)


def test_auto_checks_tf_config_and_off_ignores_it(monkeypatch):
    bad = {"cluster": {"worker": ["h:1"]}, "task": {"index": 3}}
    _set(monkeypatch, bad)
    with pytest.raises(ValueError, match="task is worker 3"):
        distribution.make_strategy("auto")
    assert distribution.make_strategy("off") is None
