"""The summary of a Beam preparation: training statistics, split counts
and sizes of all users, and the checks the driver makes of it.

Training statistics and split counts are computed per batch of users and
merged (both merge across disjoint sets of users), so no worker holds
every user.

Example:

>>> config = BeamConfig.from_options({"max_len": 3}, None, filter_rounds=8)
>>> check_summary({"rows": 0}, config, "e.tsv", filter_rounds=8)
Traceback (most recent call last):
...
tfrec_tricks.errors.DataError: No interactions in e.tsv: the files are empty.
"""

from collections.abc import Iterable

import apache_beam as beam
import numpy as np

from tfrec_tricks.data.beam.config import BeamConfig
from tfrec_tricks.data.prepared.writer import merge_split_counts, split_counts
from tfrec_tricks.data.training_statistics import (
    TrainingStatistics,
    training_statistics,
)
from tfrec_tricks.data.user_sequences import SPLITS, UserSequences
from tfrec_tricks.errors import DataError

# Users per batch whose statistics are computed at once, then merged.
STATISTICS_BATCH = 1024


def summarize(encoded: beam.PCollection, config: BeamConfig):
    """A singleton PCollection: the ``SummaryFn`` output of all users.

    Args:
        encoded: PCollection of ``beam.ranking.encoded_users``' users.
        config: ``BeamConfig``. Its ``max_len``.
    """
    return (
        encoded
        | "SummaryInputs" >> beam.Map(lambda user: user[1])
        | "Summarize" >> beam.CombineGlobally(SummaryFn(config.max_len))
    )


class SummaryFn(beam.CombineFn):
    """Statistics, split counts and sizes of all users, batch by batch.

    A user is ``(items, features, validation_position, test_position)``.
    Users are buffered and folded ``batch_size`` at a time into
    ``training_statistics`` and ``split_counts`` (both merge across
    disjoint sets of users).

    Args:
        max_len: int. The longest history of a training example.
        batch_size: int. Users folded at once. Defaults to
            ``STATISTICS_BATCH``.
    """

    def __init__(self, max_len: int, batch_size: int = STATISTICS_BATCH):
        super().__init__()
        self.max_len = max_len
        self.batch_size = batch_size

    def create_accumulator(self) -> dict:
        return {
            "pending": [],
            "statistics": None,
            "split_counts": [],
            "users": 0,
            "interactions": 0,
            "longest": 0,
            "validation_users": 0,
            "test_users": 0,
            "feature_names": [],
        }

    def add_input(self, accumulator: dict, user: tuple) -> dict:
        accumulator["pending"].append(user)
        if len(accumulator["pending"]) >= self.batch_size:
            self._fold(accumulator)
        return accumulator

    def merge_accumulators(self, accumulators: Iterable[dict]) -> dict:
        # Reads the accumulators without changing them.
        merged = self.create_accumulator()
        for accumulator in accumulators:
            merged["pending"].extend(accumulator["pending"])
            merged["statistics"] = _merge_statistics(
                merged["statistics"], accumulator["statistics"]
            )
            merged["split_counts"] = [
                merge_split_counts(
                    merged["split_counts"] + accumulator["split_counts"]
                )
            ]
            for name in (
                "users",
                "interactions",
                "validation_users",
                "test_users",
            ):
                merged[name] += accumulator[name]
            merged["longest"] = max(merged["longest"], accumulator["longest"])
            merged["feature_names"] = (
                merged["feature_names"] or accumulator["feature_names"]
            )
        if len(merged["pending"]) >= self.batch_size:
            self._fold(merged)
        return merged

    def compact(self, accumulator: dict) -> dict:
        self._fold(accumulator)
        return accumulator

    def extract_output(self, accumulator: dict) -> dict:
        self._fold(accumulator)
        statistics = accumulator["statistics"] or TrainingStatistics(
            np.zeros(0, np.int64), {}
        )
        return {
            "statistics": statistics.to_dict(),
            "split_counts": merge_split_counts(accumulator["split_counts"]),
            **{
                name: accumulator[name]
                for name in (
                    "users",
                    "interactions",
                    "longest",
                    "validation_users",
                    "test_users",
                    "feature_names",
                )
            },
        }

    def _fold(self, accumulator: dict) -> None:
        """Folds the pending users into the statistics and counts."""
        users = accumulator["pending"]
        if not users:
            return
        accumulator["pending"] = []
        lengths = np.array([len(u[0]) for u in users], np.int64)
        names = list(users[0][1])
        sequences = UserSequences(
            item_names=[],
            user_names=[],
            items=np.concatenate([u[0] for u in users]),
            starts=np.r_[0, np.cumsum(lengths)[:-1]].astype(np.int64),
            lengths=lengths,
            features={
                n: np.concatenate([u[1][n] for u in users]) for n in names
            },
            validation_positions=np.array([u[2] for u in users], np.int64),
            test_positions=np.array([u[3] for u in users], np.int64),
        )
        statistics = training_statistics(
            sequences, self.max_len, num_items=int(sequences.items.max()) + 1
        )
        accumulator["statistics"] = _merge_statistics(
            accumulator["statistics"], statistics
        )
        accumulator["split_counts"] = [
            merge_split_counts(
                accumulator["split_counts"]
                + [
                    split_counts(
                        sequences.train_ends,
                        sequences.validation_positions,
                        sequences.test_positions,
                    )
                ]
            )
        ]
        accumulator["users"] += len(users)
        accumulator["interactions"] += int(lengths.sum())
        accumulator["longest"] = max(accumulator["longest"], int(lengths.max()))
        accumulator["validation_users"] += int(
            (sequences.validation_positions >= 0).sum()
        )
        accumulator["test_users"] += int((sequences.test_positions >= 0).sum())
        accumulator["feature_names"] = names


def _merge_statistics(
    first: TrainingStatistics | None, second: TrainingStatistics | None
) -> TrainingStatistics | None:
    if first is None:
        return second
    if second is None:
        return first
    return first.merge(second)


def check_summary(
    summary: dict, config: BeamConfig, source: str, filter_rounds: int
) -> None:
    """The errors ``user_sequences`` raises, from the pipeline's counts.

    Args:
        summary: dict. The ``SummaryFn`` output with the pipeline's
            counts (``rows``, ``unsettled_items``), read back from JSON.
        config: ``BeamConfig``. Its bounds and split, named in errors.
        source: str. The data, named in errors.
        filter_rounds: int. Named when the filter did not settle.

    Raises:
        DataError: the files are empty, the filter did not settle,
            nothing is left after filtering, or there are no validation
            or test examples.
    """
    if not summary["rows"]:
        raise DataError(f"No interactions in {source}: the files are empty.")
    if summary["unsettled_items"]:
        raise DataError(
            f"The k-core filter of {source} did not settle in "
            f"filter_rounds={filter_rounds} rounds: "
            f"{summary['unsettled_items']:,} items still have fewer than "
            f"min_item_interactions={config.min_item} interactions. Pass a "
            "larger filter_rounds to prepare_with_beam."
        )
    if not summary["users"]:
        raise DataError(
            f"No interactions left in {source} after filtering with "
            f"min_user_interactions={config.min_user}, "
            f"min_item_interactions={config.min_item}."
        )
    test_from, validation_from = SPLITS[config.split]
    for name, needed in (
        ("validation", validation_from),
        ("test", test_from),
    ):
        if not summary[f"{name}_users"]:
            raise DataError(
                f"No {name} examples in {source}: with "
                f"split={config.split!r} a user gives one from {needed} "
                f"interactions on, and the longest of the "
                f"{summary['users']:,} users has {summary['longest']}."
            )
