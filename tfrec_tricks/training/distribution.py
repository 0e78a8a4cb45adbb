"""Training on several devices or machines with ``tf.distribute``.

``TrainConfig.distribute`` picks the strategy:

- ``auto`` (default): ``MultiWorkerMirroredStrategy`` when the environment
  variable ``TF_CONFIG`` names more than one task (the usual way a cluster
  manager starts TensorFlow workers: every process gets the same
  ``cluster`` and its own ``task``), else one process on its default
  device;
- ``mirrored``: ``MirroredStrategy`` over every local device (the GPUs,
  when there are any);
- ``off``: one process, one device, whatever ``TF_CONFIG`` says.

Under a strategy each worker reads its own share of the training data (its
shards of a prepared dataset, or every n-th batch in memory), at the
per-replica batch size, so a step still trains one global batch of
``batch_size``. Every worker evaluates the whole validation set: the
metrics, summed over replicas, stay exact. The chief (task ``chief``, or
worker 0 when there is none) alone writes the run directory; the other
workers write their checkpoints to scratch folders, and
``BackupAndRestore`` resumes all of them from the chief's backup.
"""

import json
import os
import socket
import time

import tensorflow as tf

# Re-exported: the modes live in a module without TensorFlow.
from tfrec_tricks.training.option_choices import (
    DISTRIBUTE_MODES as DISTRIBUTE_MODES,
)

# The task types a multi-worker run has (MultiWorkerMirroredStrategy): no
# parameter servers, no evaluator.
TASK_TYPES = ("chief", "worker")
# How long a worker waits for the others to start before giving up.
CLUSTER_TIMEOUT_SECONDS = 120.0


def cluster_spec() -> dict:
    """The ``cluster`` of ``TF_CONFIG`` (``{}`` when unset)."""
    text = os.environ.get("TF_CONFIG", "")
    if not text:
        return {}
    try:
        config = json.loads(text)
    except ValueError as error:
        raise ValueError(f"TF_CONFIG is not valid JSON ({error}).") from None
    return config.get("cluster", {}) if isinstance(config, dict) else {}


def task() -> tuple[str, int]:
    """This process's ``(task type, index)`` from ``TF_CONFIG``."""
    config = json.loads(os.environ.get("TF_CONFIG") or "{}")
    entry = config.get("task", {})
    return entry.get("type", "worker"), int(entry.get("index", 0))


def check_tf_config() -> None:
    """Refuses a ``TF_CONFIG`` whose task is not one of its cluster's.

    A task index outside the cluster (``worker`` 5 of 2), a task type the
    cluster does not list, or one a multi-worker run has no part for
    (``ps``, ``evaluator``) would otherwise start a process that trains
    alone, or waits for peers that never come. Unset (or empty): nothing
    to check.

    Raises:
        ValueError: naming TF_CONFIG, the task's type and index, and the
            cluster.

    Example:

    >>> import json, os
    >>> os.environ["TF_CONFIG"] = json.dumps({
    ...     "cluster": {"worker": ["a:1", "b:1"]},
    ...     "task": {"type": "worker", "index": 2}})
    >>> check_tf_config()  # doctest: +ELLIPSIS
    Traceback (most recent call last):
    ...
    ValueError: TF_CONFIG's task is worker 2, but its cluster has worker ...
    >>> del os.environ["TF_CONFIG"]
    """
    text = os.environ.get("TF_CONFIG", "")
    if not text.strip():
        return
    try:
        config = json.loads(text)
    except ValueError as error:
        raise ValueError(f"TF_CONFIG is not valid JSON ({error}).") from None
    if config == {}:
        return  # no cluster, no task: one process, as when unset
    cluster = config.get("cluster", {}) if isinstance(config, dict) else None
    entry = config.get("task", {}) if isinstance(config, dict) else None
    if not isinstance(cluster, dict) or not isinstance(entry, dict):
        raise ValueError(
            "TF_CONFIG must be an object with a 'cluster' object and a "
            f"'task' object. Received: TF_CONFIG={text[:200]}"
        )
    sizes = {
        kind: len(tasks) if isinstance(tasks, list) else tasks
        for kind, tasks in cluster.items()
    }
    kind, index = entry.get("type", "worker"), entry.get("index", 0)
    where = f"Received: TF_CONFIG task={entry}, cluster={cluster}"
    if kind not in TASK_TYPES:
        raise ValueError(
            f"TF_CONFIG's task type {kind!r} is not one a multi-worker run "
            f"has: expected one of {TASK_TYPES}. {where}"
        )
    if not isinstance(index, int) or isinstance(index, bool):
        raise ValueError(
            f"TF_CONFIG's task index must be an integer. Received: "
            f"index={index!r}. {where}"
        )
    size = sizes.get(kind)
    if not isinstance(size, int):
        raise ValueError(
            f"TF_CONFIG's task is {kind} {index}, but its cluster lists no "
            f"{kind} tasks (it has {sizes or 'none'}). {where}"
        )
    if not 0 <= index < size:
        raise ValueError(
            f"TF_CONFIG's task is {kind} {index}, but its cluster has "
            f"{kind} indices 0..{size - 1} only ({size} task"
            f"{'s' if size != 1 else ''}). {where}"
        )


def num_cluster_tasks() -> int:
    """Chief and worker tasks ``TF_CONFIG`` names (0 when unset)."""
    spec = cluster_spec()
    return len(spec.get("chief", [])) + len(spec.get("worker", []))


def make_strategy(mode: str = "auto") -> tf.distribute.Strategy | None:
    """The strategy of ``mode`` (see the module docstring); None for one.

    For a multi-worker cluster, waits until every other task accepts
    connections (``CLUSTER_TIMEOUT_SECONDS``).

    Raises:
        ValueError: an unknown ``mode``, or (``auto``) ``TF_CONFIG`` not
            valid JSON or naming a task its cluster does not have
            (``check_tf_config``).
        ConnectionError: another worker could not be reached; names the
            address tried.
    """
    if mode not in DISTRIBUTE_MODES:
        raise ValueError(
            f"distribute must be one of {DISTRIBUTE_MODES}. Received: "
            f"distribute={mode!r}"
        )
    if mode == "mirrored":
        return tf.distribute.MirroredStrategy()
    if mode == "auto":
        check_tf_config()
    if mode == "off" or num_cluster_tasks() < 2:
        return None
    strategy = tf.distribute.MultiWorkerMirroredStrategy()
    wait_for_cluster()
    return strategy


def wait_for_cluster(timeout: float = CLUSTER_TIMEOUT_SECONDS) -> None:
    """Waits until every other task of ``TF_CONFIG`` accepts connections.

    Without it a worker whose peers never start waits in its first
    collective operation forever.

    Raises:
        ConnectionError: naming the task and address that did not answer
            within ``timeout`` seconds.
    """
    me = task()
    spec = cluster_spec()
    deadline = time.monotonic() + timeout
    for kind in ("chief", "worker"):
        for index, address in enumerate(spec.get(kind, [])):
            if (kind, index) == me:
                continue
            host, _, port = address.rpartition(":")
            while True:
                try:
                    with socket.create_connection((host, int(port)), 2.0):
                        break
                except OSError as error:
                    if time.monotonic() > deadline:
                        raise ConnectionError(
                            f"Cannot reach {kind} {index} at {address} "
                            f"(from TF_CONFIG) within {timeout:.0f} s: "
                            f"{error}. Start every task of the cluster, "
                            "with the same TF_CONFIG cluster and its own "
                            "task."
                        ) from None
                    time.sleep(0.5)


def is_chief(strategy: tf.distribute.Strategy | None) -> bool:
    """Whether this process writes the run directory."""
    if not isinstance(strategy, tf.distribute.MultiWorkerMirroredStrategy):
        return True
    kind, index = task()
    if kind == "chief":
        return True
    return kind == "worker" and index == 0 and not cluster_spec().get("chief")
