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
"""

import dataclasses

import numpy as np

from tfrec_tricks.data.user_sequences import TIME_GAP, UserSequences
from tfrec_tricks.layers.soft_one_hot_encoding import signed_log1p

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
    """Training-target item counts and per-feature moments.

    Attributes:
        item_counts: int64 [num_items]. How often each item is a training
            target (index 0, padding, is 0).
        moments: ``{feature: Moments}`` over the real positions of the
            training histories (after ``signed_log1p`` for
            ``LOG1P_FEATURES``), NaNs left out.
    """

    item_counts: np.ndarray
    moments: dict[str, Moments]

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
        return TrainingStatistics(
            counts,
            {
                name: self.moments.get(name, Moments()).merge(
                    other.moments.get(name, Moments())
                )
                for name in names
            },
        )

    def to_dict(self) -> dict:
        """JSON-ready: counts as a list, moments as dicts."""
        return {
            "item_counts": self.item_counts.tolist(),
            "moments": {
                name: dataclasses.asdict(m) for name, m in self.moments.items()
            },
        }

    @classmethod
    def from_dict(cls, data: dict) -> "TrainingStatistics":
        return cls(
            np.asarray(data["item_counts"], np.int64),
            {name: Moments(**m) for name, m in data["moments"].items()},
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
    >>> round(statistics.moments["time_gap"].mean, 4)  # log1p(1), once
    0.6931
    """
    if num_items is None:
        num_items = len(sequences.item_names)
    user_of_row = np.repeat(np.arange(sequences.num_users), sequences.lengths)
    position = np.arange(len(sequences.items)) - sequences.starts[user_of_row]
    train_end = sequences.train_ends[user_of_row]
    del user_of_row
    targets = sequences.items[(position >= 1) & (position <= train_end)]
    counts = np.bincount(targets, minlength=num_items).astype(np.int64)
    # How many training histories hold the interaction at ``position``.
    weight = np.maximum(
        np.minimum(train_end, position + max_len) - position, 0
    ).astype(np.float64)
    del position, train_end
    moments = {}
    for name, column in sequences.features.items():
        values = column.astype(np.float64)
        if name in LOG1P_FEATURES:
            values = signed_log1p(values)
        used = np.isfinite(values) & (weight > 0)
        w, x = weight[used], values[used]
        total = float(w.sum())
        if not total:
            moments[name] = Moments()
            continue
        mean = float(np.dot(w, x) / total)
        moments[name] = Moments(total, mean, float(np.dot(w, (x - mean) ** 2)))
    return TrainingStatistics(counts, moments)
