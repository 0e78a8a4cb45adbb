"""Merging a session's prefix examples into one row with a target per position.

RecBole's protocol trains on every prefix of a session as its own example:
a session of n items gives n - 1 rows whose histories repeat each other, so a
causal encoder computes the state at position t of that session n - 1 - t
times. A causal encoder's state at position t depends on positions up to t
only, so one row holding the longest prefix, with the next item as the
target of every position, gives the same (history, target) pairs from one
encoder pass.
"""

import numpy as np

from tfrec_tricks.data.in_memory_dataset import SequenceExamples

POSITION_TARGETS = "position_targets"


def merge_prefixes(
    examples: SequenceExamples | dict[str, np.ndarray],
) -> dict[str, np.ndarray]:
    """Per-example arrays where each row carries a target per position.

    Example ``i + 1`` extends example ``i`` when it has the same user, one
    more item, the same items and features at ``i``'s positions, and
    ``i``'s target as its new last item. A maximal run of such examples
    (consecutive rows, as ``prepare`` writes them: by user, then time)
    becomes one row: the run's last example, with ``position_targets[p]``
    the target of the run's example whose history ends at position ``p``
    (0 at the other positions). Every example is the prefix of exactly one
    row at exactly one position, so the merged rows hold the same
    (history, target) pairs. Examples whose history was cut to its last
    ``max_len`` items do not extend each other (the items move left), so
    they stay rows with one target: merging is exact, and gains little on
    long-history data.

    Args:
        examples: a ``SequenceExamples`` split with right-padded histories,
            or its ``as_dict()`` arrays (``user`` may be absent; every key
            but ``history``, ``target`` and ``user`` is a per-position
            feature).

    Returns:
        ``examples.as_dict()`` restricted to the merged rows, plus
        ``"position_targets"`` int32 [rows, L]; ``target`` is each row's
        last target.

    Example:

    >>> import numpy as np
    >>> from tfrec_tricks.data import SequenceExamples
    >>> history = np.array([[5, 0, 0], [5, 6, 0], [5, 6, 7], [8, 0, 0]])
    >>> examples = SequenceExamples(history, np.array([6, 7, 9, 4]),
    ...                             np.array([0, 0, 0, 1]), {})
    >>> rows = merge_prefixes(examples)
    >>> rows["history"].tolist()
    [[5, 6, 7], [8, 0, 0]]
    >>> rows["position_targets"].tolist()
    [[6, 7, 9], [4, 0, 0]]
    """
    if isinstance(examples, dict):
        examples = as_sequence_examples(examples)
    history = np.asarray(examples.history)
    target = np.asarray(examples.target)
    n, width = history.shape
    if n == 0:
        arrays = examples.as_dict()
        arrays[POSITION_TARGETS] = np.zeros([0, width], np.int32)
        return arrays
    lengths = (history > 0).sum(axis=1)
    steps = np.arange(width)[None, :]
    previous = steps < lengths[:-1, None]  # example i's positions
    following = history[1:]
    # An empty history reads the state after a padding step, not the
    # state at a real position: such an example stays a row of its own.
    extends = (
        (lengths[:-1] > 0)
        & (examples.user[1:] == examples.user[:-1])
        & (lengths[1:] == lengths[:-1] + 1)
        & (np.where(previous, following, 0) == history[:-1]).all(axis=1)
        & (
            following[np.arange(n - 1), np.minimum(lengths[:-1], width - 1)]
            == target[:-1]
        )
    )
    for column in [*examples.features.values(), *examples.tokens.values()]:
        column = np.asarray(column)
        same = (column[1:] == column[:-1]) | (
            np.isnan(column[1:]) & np.isnan(column[:-1])
        )
        extends &= (same | ~previous).all(axis=1)

    ends = np.flatnonzero(np.r_[~extends, True])
    return rows_with_runs(examples, ends, np.diff(np.r_[-1, ends]))


def rows_with_runs(
    examples: SequenceExamples, rows: np.ndarray, runs: np.ndarray
) -> dict[str, np.ndarray]:
    """Merged rows: example ``rows[i]`` training its last ``runs[i]`` targets.

    Position ``p`` of a row's history gets the item at ``p + 1`` as its
    target, the last position the row's own target; positions before the
    row's last ``runs[i]`` ones get 0 (not trained).

    Args:
        examples: a ``SequenceExamples`` with right-padded histories.
        rows: int array [R], indices of the examples that become rows.
        runs: int array [R], each in ``1 .. `` its history's length.

    Returns:
        ``examples.as_dict()`` at ``rows``, plus ``"position_targets"``
        int32 [R, L].
    """
    arrays = {
        name: np.asarray(value)[rows]
        for name, value in examples.as_dict().items()
    }
    history = arrays["history"]
    steps = np.arange(history.shape[1])[None, :]
    row_lengths = (history > 0).sum(axis=1)
    # Position p's target is the item at p + 1, the row's target at its end.
    shifted = np.zeros_like(history)
    shifted[:, :-1] = history[:, 1:]
    last = np.maximum(row_lengths - 1, 0)
    shifted[np.arange(len(rows)), last] = arrays["target"]
    in_run = (steps >= (row_lengths - runs)[:, None]) & (steps <= last[:, None])
    arrays[POSITION_TARGETS] = np.where(in_run, shifted, 0).astype(np.int32)
    return arrays


def as_sequence_examples(arrays: dict[str, np.ndarray]) -> SequenceExamples:
    """``SequenceExamples`` of ``as_dict()`` arrays (``user`` optional)."""
    target = np.asarray(arrays["target"])
    return SequenceExamples(
        history=np.asarray(arrays["history"]),
        target=target,
        user=np.asarray(arrays.get("user", np.zeros_like(target))),
        features={
            name: np.asarray(value)
            for name, value in arrays.items()
            if name not in ("history", "target", "user")
        },
    )
