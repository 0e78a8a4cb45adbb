"""Training windows: each user's training sequence cut into ``max_len`` rows.

The prefix protocol (RecBole's) trains every target position ``t`` of a
user as its own example, with the last ``max_len`` items before it as the
history: a user with ``E`` training targets costs ``E`` encoder rows, and
on long histories (MovieLens-1M: 165 items per user) each row repeats
``max_len - 1`` items of the one before. SASRec, SSE-PT and GRU4Rec's
session-parallel batches train differently: a window of the sequence runs
through the encoder once, with a target at every position.

``window_ends`` cuts a user's targets ``1 .. E`` into windows, from the
most recent one back, ``stride`` targets apart:

- windows ending at ``E, E - stride, ...`` while the end is beyond
  ``max_len``: their history holds the ``max_len`` items before the end;
  each trains its last ``stride`` targets (the ones no later window
  trains);
- one first window ending at the remaining ``e <= max_len``: it trains
  targets ``1 .. e``.

Every training target is trained exactly once per epoch, as under the
prefix protocol, but a target at position ``p`` of a window sees only the
``p + 1`` items of the window up to it: with ``stride = max_len`` (the
default of ``--train-windows``, non-overlapping windows) the first targets
of a window see short histories, where the prefix protocol gives every
target the ``max_len`` items before it. A smaller stride overlaps the
windows and lengthens those histories (each trained target then sees at
least ``max_len - stride + 1`` items), at ``max_len / stride`` times the
rows; ``stride = 1`` gives exactly the prefix protocol's (history, target)
pairs, as ``merge_prefixes`` does. Why the default stays ``max_len``:
docs/decisions.md#window-stride.

Each window is a row of the merged format: the prefix example of its last
target, with ``position_targets`` [max_len] (0 at the positions it does
not train).
"""

import numpy as np

from tfrec_tricks.data.in_memory_dataset import SequenceExamples
from tfrec_tricks.data.prefix_merging import (
    POSITION_TARGETS,
    as_sequence_examples,
    rows_with_runs,
)


def window_ends(
    train_ends: np.ndarray, max_len: int, stride: int
) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """The windows of each user: (user, last target position, targets).

    Args:
        train_ends: int array [U]: user ``u`` trains target positions
            ``1 .. train_ends[u]`` (0: none).
        max_len: int. Items per window.
        stride: int in ``1 .. max_len``. Targets between the ends of two
            consecutive windows.

    Returns:
        ``(users, ends, runs)``, int64 arrays [windows], user after user,
        each user's windows in time order: window ``w`` is the prefix
        example of target position ``ends[w]`` and trains its last
        ``runs[w]`` targets.

    Example:

    >>> users, ends, runs = window_ends(np.array([10, 3, 0]), 4, 4)
    >>> users.tolist(), ends.tolist(), runs.tolist()
    ([0, 0, 0, 1], [2, 6, 10, 3], [2, 4, 4, 3])
    """
    check_stride(stride, max_len)
    train_ends = np.asarray(train_ends, np.int64)
    later = np.where(
        train_ends > max_len, -(-(train_ends - max_len) // stride), 0
    )
    first = train_ends - later * stride  # in 1 .. max_len when there is one
    count = (train_ends >= 1) + later
    users = np.repeat(np.arange(len(train_ends)), count)
    index = np.arange(len(users)) - np.repeat(np.cumsum(count) - count, count)
    ends = first[users] + index * stride
    runs = np.where(index == 0, first[users], stride)
    return users, ends, runs


def check_stride(stride: int, max_len: int) -> None:
    """Raises ``ValueError`` unless ``1 <= stride <= max_len``."""
    if not 1 <= stride <= max_len:
        raise ValueError(
            f"The window stride must be in 1..max_len={max_len} (a larger "
            f"one would skip targets). Received: stride={stride}"
        )


def merged_stride(
    every_position: bool, window_stride: int | None
) -> int | None:
    """The stride of merged training rows: 1 for ``every_position``.

    ``every_position`` (the prefix protocol's pairs, merged) is the windows
    of stride 1; None: neither, one row per target.
    """
    if every_position and window_stride is not None:
        raise ValueError(
            "every_position and window_stride are two training protocols; "
            "choose one. Received: every_position=True, "
            f"window_stride={window_stride}"
        )
    return 1 if every_position else window_stride


def train_windows(
    examples: SequenceExamples | dict[str, np.ndarray], stride: int
) -> dict[str, np.ndarray]:
    """The training windows of ``prepare``'s training examples.

    Args:
        examples: a training ``SequenceExamples`` as ``prepare`` writes it:
            each user's prefix examples together, in time order, the
            ``k``-th (from 0) with target position ``k + 1``, so with a
            history of ``min(k + 1, max_len)`` items; or its
            ``as_dict()`` arrays.
        stride: int in ``1 .. max_len``. See ``window_ends``.

    Returns:
        ``examples.as_dict()`` restricted to the windows' rows, plus
        ``"position_targets"`` int32 [rows, max_len].

    Raises:
        ValueError: the examples are not laid out as ``prepare`` writes
            them (the message names the first example that is not).

    Example:

    >>> history = np.array([[5, 0], [5, 6], [6, 7], [7, 8], [3, 0]])
    >>> examples = SequenceExamples(history, np.array([6, 7, 8, 9, 4]),
    ...                             np.array([0, 0, 0, 0, 1]), {})
    >>> rows = train_windows(examples, stride=2)
    >>> rows["history"].tolist(), rows["position_targets"].tolist()
    ([[5, 6], [7, 8], [3, 0]], [[6, 7], [8, 9], [4, 0]])
    """
    if isinstance(examples, dict):
        examples = as_sequence_examples(examples)
    history = np.asarray(examples.history)
    user = np.asarray(examples.user)
    n, max_len = history.shape
    check_stride(stride, max_len)
    starts = np.flatnonzero(np.r_[True, user[1:] != user[:-1]]) if n else []
    counts = np.diff(np.r_[starts, n]).astype(np.int64)
    first_row = np.repeat(starts, counts)
    expected = np.minimum(np.arange(n) - first_row + 1, max_len)
    lengths = (history > 0).sum(axis=1)
    wrong = np.flatnonzero(lengths != expected)
    if len(wrong):
        at = wrong[0]
        raise ValueError(
            "Training windows need prepare's training examples: each "
            "user's prefixes together, in time order, the k-th with "
            f"min(k + 1, max_len) history items. Received: example {at} "
            f"(user {user[at]}) has {lengths[at]} history items, expected "
            f"{expected[at]}."
        )
    if len(user) and len(np.unique(user[starts])) != len(starts):
        raise ValueError(
            "Training windows need each user's examples together. "
            "Received: user examples split into several runs."
        )
    users, ends, runs = window_ends(counts, max_len, stride)
    rows = np.asarray(starts, np.int64)[users] + ends - 1
    return rows_with_runs(examples, rows, runs)


__all__ = [
    "POSITION_TARGETS",
    "check_stride",
    "merged_stride",
    "train_windows",
    "window_ends",
]
