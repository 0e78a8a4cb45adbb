"""The in-memory interaction table every loader returns."""

import dataclasses

import numpy as np


@dataclasses.dataclass
class Interactions:
    """One row per interaction, in the order of the source file.

    Attributes:
        users: array [n] of raw user (or session) ids, as strings.
        items: array [n] of raw item ids, as strings.
        timestamps: float64 array [n] of Unix seconds, all finite (a NaN
            or infinite timestamp raises ``ValueError``), or None when the
            source has no time; then the file order within a user is the
            time order.
        numeric: dict of float32 arrays [n], numeric columns such as
            "rating" (used as per-position continuous features).
        tokens: dict of str arrays [n], categorical per-interaction
            columns such as "device" (``""``: no value).
        source: str. Where the rows came from (a path or a dataset name).
    """

    users: np.ndarray
    items: np.ndarray
    timestamps: np.ndarray | None = None
    numeric: dict[str, np.ndarray] = dataclasses.field(default_factory=dict)
    source: str = ""
    tokens: dict[str, np.ndarray] = dataclasses.field(default_factory=dict)

    def __post_init__(self):
        n = len(self.users)
        columns = {"items": self.items, **self.numeric, **self.tokens}
        if self.timestamps is not None:
            columns["timestamps"] = self.timestamps
        for name, column in columns.items():
            if len(column) != n:
                raise ValueError(
                    f"Column {name!r} has {len(column)} rows, users has {n}."
                )
        if self.timestamps is not None:
            self._check_finite_timestamps()

    def _check_finite_timestamps(self):
        # A NaN or infinite time would sort last and silently become the
        # user's test target. Integer times are always finite.
        timestamps = np.asarray(self.timestamps)
        if timestamps.dtype.kind != "f":
            return
        finite = np.isfinite(timestamps)
        if finite.all():
            return
        i = int(np.argmin(finite))  # the first non-finite one
        raise ValueError(
            "timestamps must be finite. Received: "
            f"timestamps[{i}]={float(timestamps[i])!r} "
            f"(user {str(self.users[i])!r}, item {str(self.items[i])!r})"
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
            + (f", token columns: {sorted(self.tokens)}" if self.tokens else "")
        )
