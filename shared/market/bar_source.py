"""The ``BarSource`` interface: one ``read`` signature, checked once, for every source of bars.

``read`` parses and checks its arguments into a ``BarQuery`` and hands that to the
source's ``read_query``, so a source states only how it finds bars, not the
signature and its checks again.
"""

from __future__ import annotations

from abc import ABC, abstractmethod
from dataclasses import dataclass
from datetime import datetime

import pandas as pd

from shared.market.bars import Bar, Timeframe
from shared.market.series import check_lookback, parse_as_of


@dataclass(frozen=True)
class BarQuery:
    """A checked ``read``: the symbol as given, the parsed timeframe, the UTC cutoff
    (None: the latest) and how many bars to keep (None: all)."""

    symbol: str
    timeframe: Timeframe
    cutoff: pd.Timestamp | None
    lookback: int | None


class BarSource(ABC):
    """Anything that serves bars by symbol and timeframe, bounded by ``as_of``."""

    @abstractmethod
    def symbols(self) -> tuple[str, ...]:
        """The symbols ``read`` accepts, upper-case and sorted (empty: any the source knows)."""

    def read(
        self,
        symbol: str,
        timeframe: Timeframe | str,
        *,
        as_of: datetime | None = None,
        lookback: int | None = None,
    ) -> list[Bar]:
        """Bars of ``symbol`` labelled at or before ``as_of`` (None: the latest), oldest first.

        ``lookback`` keeps the last N of them; fewer come back when the data holds
        fewer (check with ``validate_bars(min_bars=...)``). Raises ``InvalidInput``
        on ``symbol`` (listing the symbols), ``timeframe`` (listing the supported
        ones), ``as_of`` (before the data, giving its start) or ``lookback``.
        """
        wanted, cutoff = Timeframe.parse(timeframe), parse_as_of(as_of)
        check_lookback(lookback)
        return self.read_query(BarQuery(symbol, wanted, cutoff, lookback))

    @abstractmethod
    def read_query(self, query: BarQuery) -> list[Bar]:
        """The bars ``query`` asks for (see ``read``)."""
