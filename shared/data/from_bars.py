"""Kinds computed from real bars, so any vendor of dated bars (your files, yfinance, the
bundled series) answers them for any past ``as_of``: sector performance from the SPDR
sector ETFs, index levels from the indices, and movers among the universe's equities from
their last two sessions. Screeners and "top gainers" endpoints answer only about now; these
are as of the day asked.

``OtherVendors`` reads a kind's chain less the vendor that asks (built on first use), so a
vendor computing from others' data never reads itself: this one for bars and the universe,
the SEC for the close its ratios need.
"""

from __future__ import annotations

from collections.abc import Callable
from datetime import datetime

from shared.data.contracts import (
    INDEX_SYMBOLS,
    DataKind,
    DataVendor,
    IndexLevel,
    IndustryCompany,
    Listing,
    MarketMovers,
    Sector,
    SectorPerformance,
)
from shared.data.figures import (
    RELATIVE_VOLUME_DAYS,
    index_levels,
    market_movers,
    return_over,
    sector_performance,
)
from shared.data.router import DataRouter
from shared.errors import InvalidInput, NoData, NotConfigured
from shared.market.bars import Bar, Timeframe

NAME = "bars"
SECTOR_SESSIONS = 300
"""Daily bars read per sector ETF: enough for the year to date."""
MOVERS_AT_MOST = 1000
"""Universe equities read for movers or a sector's companies (each one series of bars)."""
MONTH = 21
"""Sessions of a month: an industry company's return and its average traded value."""


class OtherVendors:
    """Reads through a router of other vendors, built by ``build`` on first use."""

    def __init__(self, build: Callable[[], DataRouter]) -> None:
        self._build = build
        self._router: DataRouter | None = None

    @property
    def router(self) -> DataRouter:
        if self._router is None:
            self._router = self._build()
        return self._router

    def daily(self, symbol: str, as_of: datetime, sessions: int) -> list[Bar] | None:
        """Up to ``sessions`` daily bars of ``symbol`` up to ``as_of``; None when none has any."""
        try:
            return self.router.call(
                DataKind.OHLCV,
                lambda v: v.ohlcv(symbol, Timeframe.D1, as_of, sessions),
                as_of=as_of,
            ).value
        except (NoData, NotConfigured, InvalidInput):
            return None

    def close(self, symbol: str, as_of: datetime) -> float | None:
        """The last daily close of ``symbol`` at ``as_of``, if any vendor has it."""
        bars = self.daily(symbol, as_of, 1)
        return bars[-1].close if bars else None

    def universe(self, as_of: datetime) -> list[Listing]:
        """The universe as of ``as_of``; empty when no vendor has one for that time."""
        try:
            return self.router.call(
                DataKind.UNIVERSE, lambda v: v.universe(as_of), as_of=as_of
            ).value
        except (NoData, NotConfigured):
            return []


class FromBarsVendor(DataVendor):
    """Sectors, indices and movers computed from ``others``' bars as of any time."""

    name = NAME
    kinds = frozenset({DataKind.SECTORS, DataKind.INDICES, DataKind.MOVERS, DataKind.INDUSTRY})

    def __init__(self, others: OtherVendors) -> None:
        self.others = others

    def sectors(self, as_of: datetime) -> list[SectorPerformance]:
        """The SPDR sector ETFs' returns from their daily bars up to ``as_of``."""
        found = sector_performance(lambda etf: self.others.daily(etf, as_of, SECTOR_SESSIONS))
        if not found:
            raise NoData(f"no vendor of bars has a sector ETF's bars up to {as_of.isoformat()}")
        return found

    def indices(self, as_of: datetime) -> list[IndexLevel]:
        """The main indices' last close up to ``as_of`` and their 1- and 21-session changes."""
        found = index_levels(lambda symbol: self.others.daily(symbol, as_of, 22), INDEX_SYMBOLS)
        if not found:
            raise NoData(f"no vendor of bars has an index's bars up to {as_of.isoformat()}")
        return found

    def movers(self, as_of: datetime, limit: int = 10) -> MarketMovers:
        """The universe's equities that moved most in the last session by ``as_of``."""
        equities = [x for x in self.others.universe(as_of) if x.asset_type == "equity"]
        histories = [
            (listing, bars)
            for listing in equities[:MOVERS_AT_MOST]
            if (bars := self.others.daily(listing.symbol, as_of, RELATIVE_VOLUME_DAYS + 1))
        ]
        found = market_movers(histories, as_of, limit)
        if found is None:
            raise NoData(
                f"no two sessions of any of the universe's {len(equities)} equities by "
                f"{as_of.isoformat()}"
            )
        return found

    def industry(self, sector: Sector, as_of: datetime, limit: int = 10) -> list[IndustryCompany]:
        """The universe's equities of ``sector`` with bars by ``as_of``, the most traded first
        (a month's average close times volume: the size bars can tell, since a market cap
        needs share counts they do not have), each with its month's return."""
        members = [
            x
            for x in self.others.universe(as_of)
            if x.asset_type == "equity" and x.sector is sector
        ]
        ranked: list[tuple[float, IndustryCompany]] = []
        for listing in members[:MOVERS_AT_MOST]:
            bars = self.others.daily(listing.symbol, as_of, MONTH + 1)
            if not bars:
                continue
            traded = sum(bar.close * bar.volume for bar in bars[-MONTH:]) / len(bars[-MONTH:])
            company = IndustryCompany(
                symbol=listing.symbol,
                name=listing.name,
                sector=sector,
                industry=listing.industry or sector.value,
                market_cap=None,
                return_21d=return_over(bars, MONTH),
            )
            ranked.append((traded, company))
        if not ranked:
            raise NoData(
                f"no equity of {sector.value} in the universe has bars by {as_of.isoformat()} "
                f"({len(members)} listed with that sector)"
            )
        return [company for _, company in sorted(ranked, key=lambda r: -r[0])[:limit]]
