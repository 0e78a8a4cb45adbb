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

DISTRIBUTE_MODES = ("auto", "off", "mirrored")
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


def num_cluster_tasks() -> int:
    """Chief and worker tasks ``TF_CONFIG`` names (0 when unset)."""
    spec = cluster_spec()
    return len(spec.get("chief", [])) + len(spec.get("worker", []))


def make_strategy(mode: str = "auto") -> tf.distribute.Strategy | None:
    """The strategy of ``mode`` (see the module docstring); None for one.

    For a multi-worker cluster, waits until every other task accepts
    connections (``CLUSTER_TIMEOUT_SECONDS``).

    Raises:
        ValueError: an unknown ``mode``, or ``TF_CONFIG`` not valid JSON.
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
