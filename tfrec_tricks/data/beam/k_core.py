"""The k-core filter of a Beam preparation, unrolled into the pipeline.

The item bound and the user bound are applied in turn, ``filter_rounds``
times when both are active (once when only one is, which is then final).
A pipeline cannot loop until nothing changes, so ``k_core`` also counts
the items still too rare after the last round: the driver refuses a
filter that did not settle, as ``user_sequences`` never returns one.

Example:

>>> list(_keep_frequent(("a", [1, 2, 3]), bound=3))
[1, 2, 3]
>>> list(_keep_frequent(("b", [1, 2]), bound=3))
[]
"""

from collections.abc import Iterable

import apache_beam as beam

from tfrec_tricks.data.beam.config import BeamConfig
from tfrec_tricks.data.beam.rows import ITEM, USER


def k_core(rows: beam.PCollection, config: BeamConfig) -> tuple:
    """The k-core filter, unrolled; and a count of items still too rare.

    Args:
        rows: PCollection of rows (``beam.rows``).
        config: ``BeamConfig``. Its ``min_item``, ``min_user`` and
            ``filter_rounds``.

    Returns:
        The kept rows, and a singleton PCollection: how many items have
        fewer than the item bound among them (0 when the filter settled;
        after a user pass every user is within its bound).
    """
    bounds = [
        (name, key, bound)
        for name, key, bound in (
            ("Items", ITEM, config.min_item),
            ("Users", USER, config.min_user),
        )
        if bound > 1
    ]
    rounds = config.filter_rounds if len(bounds) == 2 else 1
    for round_index in range(rounds if bounds else 0):
        for name, key, bound in bounds:
            rows = rows | f"Filter{name}{round_index}" >> _FilterRare(
                key, bound
            )
    if len(bounds) < 2:
        pipeline = rows.pipeline
        return rows, pipeline | "NothingUnsettled" >> beam.Create([0])
    min_item = config.min_item
    unsettled = (
        rows
        | "FinalItemRows" >> beam.Map(lambda r: (r[ITEM], 1))
        | "FinalItemCounts" >> beam.CombinePerKey(sum)
        | "TooRare" >> beam.Filter(lambda kv: kv[1] < min_item)
        | "CountTooRare" >> beam.combiners.Count.Globally()
    )
    return rows, unsettled


class _FilterRare(beam.PTransform):
    """Drops the rows whose ``key`` column value has fewer than ``bound``."""

    def __init__(self, key: int, bound: int):
        super().__init__()
        self.key = key
        self.bound = bound

    def expand(self, rows):
        key, bound = self.key, self.bound
        return (
            rows
            | "Key" >> beam.Map(lambda r: (r[key], r))
            | "Group" >> beam.GroupByKey()
            | "Keep" >> beam.FlatMap(_keep_frequent, bound)
        )


def _keep_frequent(group: tuple, bound: int) -> Iterable[tuple]:
    """A group's rows if there are at least ``bound`` of them, else none."""
    _, rows = group
    # Counts up to ``bound`` only; a grouped iterable can be read again.
    for count, _ in enumerate(rows, start=1):
        if count >= bound:
            return rows
    return ()
