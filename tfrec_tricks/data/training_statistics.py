"""What a model needs from its training data besides the examples.

``SequentialRetrievalModel.from_data`` needs the training targets' item
counts (the sampled softmax's logQ correction) and the mean and variance of
each standardised feature over the real positions of the training
histories. Under the prefix protocol a user's interaction at position ``j``
sits in the history of every training example whose target is at
``j + 1 .. min(train_end, j + max_len)``, so it counts that many times: the
statistics are computed from each user's sequence once, with those weights,
and equal what the prefix examples would give.

Partial statistics of disjoint sets of users ``merge`` (Chan et al.'s
parallel variance), so a Beam pipeline computes them shard by shard.

Memory: the per-row positions and weights are formed a block of users
(about a million rows) at a time; a feature's weights and values of every
row (16 bytes per interaction) are the only arrays of the table's size.
"""

import dataclasses

import numpy as np

from tfrec_tricks.data.user_sequences import TIME_GAP, UserSequences

# The per-position features standardised after a signed log1p (they are
# heavy-tailed); every other feature is standardised as it is.
LOG1P_FEATURES = (TIME_GAP,)


@dataclasses.dataclass
class Moments:
    """Weighted count, mean and sum of squared deviations of a feature."""

    weight: float = 0.0
    mean: float = 0.0
    m2: float = 0.0

    @property
    def variance(self) -> float:
        return self.m2 / self.weight if self.weight else 0.0

    def merge(self, other: "Moments") -> "Moments":
        weight = self.weight + other.weight
        if not weight:
            return Moments()
        delta = other.mean - self.mean
        return Moments(
            weight,
            self.mean + delta * other.weight / weight,
            self.m2 + other.m2 + delta**2 * self.weight * other.weight / weight,
        )


@dataclasses.dataclass
class TrainingStatistics:
    """Training-target item counts, per-feature moments, repeat targets.

    Attributes:
        item_counts: int64 [num_items]. How often each item is a training
            target (index 0, padding, is 0).
        moments: ``{feature: Moments}`` over the real positions of the
            training histories (after ``signed_log1p`` for
            ``LOG1P_FEATURES``), NaNs left out.
        repeat_targets: int or None. Training targets whose item the user
            had before (anywhere in their history, not only in the last
            ``max_len``); None when unknown (a dataset prepared by an
            earlier version).
    """

    item_counts: np.ndarray
    moments: dict[str, Moments]
    repeat_targets: int | None = 0

    @property
    def repeat_share(self) -> float | None:
        """The share of training targets that repeat a history item (None
        when unknown, 0 without targets)."""
        if self.repeat_targets is None:
            return None
        return self.repeat_targets / max(int(self.item_counts.sum()), 1)

    @property
    def feature_statistics(self) -> dict[str, tuple[float, float]]:
        """``{name: (mean, variance)}`` of the features with any value."""
        return {
            name: (m.mean, m.variance)
            for name, m in self.moments.items()
            if m.weight > 0
        }

    def merge(self, other: "TrainingStatistics") -> "TrainingStatistics":
        size = max(len(self.item_counts), len(other.item_counts))
        counts = np.zeros(size, np.int64)
        counts[: len(self.item_counts)] += self.item_counts
        counts[: len(other.item_counts)] += other.item_counts
        names = sorted(set(self.moments) | set(other.moments))
        repeats = None
        if self.repeat_targets is not None and other.repeat_targets is not None:
            repeats = self.repeat_targets + other.repeat_targets
        return TrainingStatistics(
            counts,
            {
                name: self.moments.get(name, Moments()).merge(
                    other.moments.get(name, Moments())
                )
                for name in names
            },
            repeats,
        )

    def to_dict(self) -> dict:
        """JSON-ready: counts as a list, moments as dicts."""
        return {
            "item_counts": self.item_counts.tolist(),
            "repeat_targets": self.repeat_targets,
            "moments": {
                name: dataclasses.asdict(m) for name, m in self.moments.items()
            },
        }

    @classmethod
    def from_dict(cls, data: dict) -> "TrainingStatistics":
        return cls(
            np.asarray(data["item_counts"], np.int64),
            {name: Moments(**m) for name, m in data["moments"].items()},
            data.get("repeat_targets"),
        )


def training_statistics(
    sequences: UserSequences, max_len: int, num_items: int | None = None
) -> TrainingStatistics:
    """The ``TrainingStatistics`` of ``sequences``' training examples.

    Args:
        sequences: a ``UserSequences`` (or any subset of its users).
        max_len: int. The history length of the examples.
        num_items: int. Length of ``item_counts``; defaults to the
            vocabulary's size.

    Example:

    >>> import numpy as np
    >>> from tfrec_tricks.data.user_sequences import user_sequences
    >>> sequences = user_sequences(
    ...     np.array(["u"] * 5), np.array(list("abcde")),
    ...     timestamps=np.array([0.0, 1.0, 3.0, 7.0, 8.0]))
    >>> statistics = training_statistics(sequences, max_len=50)
    >>> statistics.item_counts.tolist()  # targets b, c (d, e held out)
    [0, 0, 1, 1, 0, 0]
    >>> statistics.repeat_share  # neither b nor c was seen before
    0.0
    >>> round(statistics.moments["time_gap"].mean, 4)  # log1p(1), once
    0.6931
    """
    if num_items is None:
        num_items = len(sequences.item_names)
    counts = np.zeros(num_items, np.int64)
    repeats = 0
    for block in _user_blocks(sequences, max_len):
        repeats += block.repeat_targets()
        block_counts = np.bincount(block.targets(), minlength=num_items)
        if len(block_counts) > len(counts):
            counts = np.r_[
                counts, np.zeros(len(block_counts) - len(counts), np.int64)
            ]
        counts[: len(block_counts)] += block_counts
    # Imported here: tfrec_tricks.layers imports TensorFlow, and this module
    # is read (through data.in_memory_dataset's SPLITS) by TrainConfig,
    # which the command line builds its flags from before TensorFlow loads.
    from tfrec_tricks.layers.soft_one_hot_encoding import signed_log1p

    moments = {}
    # One feature at a time, its weights and values of every used row in
    # two arrays: the sums run over whole arrays (NumPy's and BLAS's
    # summation order), as they would over the rows' columns at once.
    weights = np.empty(len(sequences.items), np.float64)
    values = np.empty(len(sequences.items), np.float64)
    for name, column in sequences.features.items():
        used = 0
        for block in _user_blocks(sequences, max_len):
            x = column[block.rows].astype(np.float64)
            if name in LOG1P_FEATURES:
                x = signed_log1p(x)
            keep = np.isfinite(x) & (block.weight > 0)
            size = np.count_nonzero(keep)
            weights[used : used + size] = block.weight[keep]
            values[used : used + size] = x[keep]
            used += size
        w, x = weights[:used], values[:used]
        total = float(w.sum())
        if not total:
            moments[name] = Moments()
            continue
        mean = float(np.dot(w, x) / total)
        x -= mean
        np.square(x, out=x)  # (x - mean) ** 2, in place
        moments[name] = Moments(total, mean, float(np.dot(w, x)))
    return TrainingStatistics(counts, moments, repeats)


# Rows per block of users: the per-row temporaries stay a few tens of MB.
BLOCK_ROWS = 1 << 20


@dataclasses.dataclass
class _Block:
    """Consecutive users' rows: their positions, training ends, weights."""

    items: np.ndarray
    rows: slice
    position: np.ndarray
    train_end: np.ndarray
    weight: np.ndarray

    def is_target(self) -> np.ndarray:
        """Which rows are training targets."""
        return (self.position >= 1) & (self.position <= self.train_end)

    def targets(self) -> np.ndarray:
        """Item ids of the block's training targets."""
        return self.items[self.is_target()]

    def repeat_targets(self) -> int:
        """Training targets whose item is earlier in the user's sequence."""
        # Rows sorted by (user, item, position): every row after the first
        # of its (user, item) run repeats an earlier interaction. A block
        # starts at a user's first row, so position 0 opens each user.
        user = np.cumsum(self.position == 0)
        order = np.lexsort((self.position, self.items, user))
        items, users = self.items[order], user[order]
        seen = np.zeros(len(order), bool)
        seen[1:] = (items[1:] == items[:-1]) & (users[1:] == users[:-1])
        repeat = np.empty_like(seen)
        repeat[order] = seen
        return int(np.count_nonzero(repeat & self.is_target()))


def _user_blocks(sequences: UserSequences, max_len: int):
    """``_Block``s of about ``BLOCK_ROWS`` rows, users in order.

    A user's rows follow the previous user's (``starts`` are cumulative).
    """
    lengths = sequences.lengths
    ends = np.cumsum(lengths)
    train_ends = sequences.train_ends
    first = 0
    while first < sequences.num_users:
        start = int(ends[first] - lengths[first])
        last = int(np.searchsorted(ends, start + BLOCK_ROWS, side="right"))
        last = max(last, first + 1)
        stop = int(ends[last - 1])
        user_of_row = np.repeat(np.arange(first, last), lengths[first:last])
        position = np.arange(start, stop) - sequences.starts[user_of_row]
        train_end = train_ends[user_of_row]
        # How many training histories hold the interaction at ``position``.
        weight = np.maximum(
            np.minimum(train_end, position + max_len) - position, 0
        ).astype(np.float64)
        yield _Block(
            sequences.items[start:stop],
            slice(start, stop),
            position,
            train_end,
            weight,
        )
        first = last
