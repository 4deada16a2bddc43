"""Event tables: columns sorted by the instant each row becomes visible, indexed by key.

Every as-of read in the sim is "the rows of this key visible in (after, upto]",
so it is one lookup and two binary searches, and the as-of rule lives here once.
"""

from __future__ import annotations

from collections.abc import Hashable, Mapping
from dataclasses import dataclass

import numpy as np

ALL: Hashable = None
"""The key of the group holding every row."""


@dataclass(frozen=True)
class EventTable:
    """Rows of equal-length columns in ascending ``times`` (int64 ns), grouped by key."""

    columns: Mapping[str, np.ndarray]
    times: np.ndarray
    groups: Mapping[Hashable, np.ndarray]  # key -> row numbers, ascending (hence by time)

    @classmethod
    def build(
        cls,
        columns: Mapping[str, np.ndarray],
        *,
        time: str,
        keys: Mapping[str, str] | None = None,
    ) -> EventTable:
        """Sort ``columns`` by the column ``time`` and group rows by each column in ``keys``.

        ``keys`` maps a column to a prefix; a row whose column holds ``v`` joins
        group ``(prefix, v)``. Every row is also in group ``ALL``.
        """
        order = np.argsort(columns[time], kind="stable")
        ordered = {name: values[order] for name, values in columns.items()}
        groups: dict[Hashable, np.ndarray] = {ALL: np.arange(len(order))}
        for column, prefix in (keys or {}).items():
            groups.update(group_rows(ordered[column], prefix))
        return cls(ordered, ordered[time], groups)

    def with_groups(self, extra: Mapping[Hashable, np.ndarray]) -> EventTable:
        """The same table with more groups (row numbers in this table's order)."""
        return EventTable(self.columns, self.times, {**self.groups, **extra})

    def rows(self, key: Hashable, upto: int, after: int | None = None) -> np.ndarray:
        """Row numbers of ``key``'s group visible in (``after``, ``upto``], oldest first."""
        rows = self.groups.get(key)
        if rows is None:
            return np.empty(0, dtype=np.intp)
        times = self.times[rows]
        low = 0 if after is None else int(np.searchsorted(times, after, side="right"))
        return rows[low : int(np.searchsorted(times, upto, side="right"))]


def group_rows(values: np.ndarray, prefix: str) -> dict[Hashable, np.ndarray]:
    """``(prefix, value)`` -> the ascending row numbers holding ``value``."""
    order = np.argsort(values, kind="stable")
    distinct, starts = np.unique(values[order], return_index=True)
    return {
        (prefix, value.item()): rows
        for value, rows in zip(distinct, np.split(order, starts[1:]), strict=True)
    }
