"""A data vendor that answers every read with one outcome and counts the calls: the stand-in
the routing, factory and cache tests route to."""

from __future__ import annotations

from datetime import UTC, datetime, timedelta

from shared.data.contracts import POINT_IN_TIME, DataKind, NewsItem, Reach
from shared.market.bars import Timeframe

PAST = datetime(2024, 1, 10, tzinfo=UTC)
WEEK = timedelta(days=7)
NEWS = [
    NewsItem(id="1", published_at=PAST, title="t", summary="s", source="fake", symbols=["ACME"])
]


class FakeVendor:
    """Answers every read with ``outcome`` (raised if it is an exception) and counts calls."""

    def __init__(
        self,
        name: str,
        outcome: object = NEWS,
        kinds: frozenset[DataKind] = frozenset(DataKind),
        reach: Reach = POINT_IN_TIME,
    ) -> None:
        self.name = name
        self.kinds = kinds
        self.outcome = outcome
        self.calls = 0
        self._reach = reach

    def reach(self, kind: DataKind) -> Reach:
        return self._reach

    def _answer(self) -> object:
        self.calls += 1
        if isinstance(self.outcome, Exception):
            raise self.outcome
        return self.outcome

    def news(
        self,
        as_of: datetime,
        window: timedelta,
        *,
        symbol: str | None = None,
        topic: str | None = None,
        limit: int = 20,
    ) -> object:
        return self._answer()

    def ohlcv(self, symbol: str, timeframe: Timeframe, as_of: datetime, lookback: int) -> object:
        return self._answer()
