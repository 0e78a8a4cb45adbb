"""The in-memory interaction table every loader returns."""

import dataclasses

import numpy as np


@dataclasses.dataclass
class Interactions:
    """One row per interaction, in the order of the source file.

    Attributes:
        users: array [n] of raw user (or session) ids, as strings.
        items: array [n] of raw item ids, as strings.
        timestamps: float64 array [n] of Unix seconds, or None when the
            source has no time; then the file order within a user is the
            time order.
        numeric: dict of float32 arrays [n], numeric columns such as
            "rating" (used as per-position continuous features).
        source: str. Where the rows came from (a path or a dataset name).
    """

    users: np.ndarray
    items: np.ndarray
    timestamps: np.ndarray | None = None
    numeric: dict[str, np.ndarray] = dataclasses.field(default_factory=dict)
    source: str = ""

    def __post_init__(self):
        n = len(self.users)
        columns = {"items": self.items, **self.numeric}
        if self.timestamps is not None:
            columns["timestamps"] = self.timestamps
        for name, column in columns.items():
            if len(column) != n:
                raise ValueError(
                    f"Column {name!r} has {len(column)} rows, users has {n}."
                )

    def __len__(self) -> int:
        return len(self.users)

    @property
    def ratings(self) -> np.ndarray | None:
        return self.numeric.get("rating")

    def summary(self) -> str:
        users = len(np.unique(self.users))
        items = len(np.unique(self.items))
        return (
            f"{self.source}: {len(self):,} interactions, {users:,} users, "
            f"{items:,} items, timestamps: "
            f"{'yes' if self.timestamps is not None else 'no'}, numeric "
            f"columns: {sorted(self.numeric) or 'none'}"
        )
