"""What the book needs from the data layer, strictly as of one time: closes, histories, sectors.

Every read goes through the router with the reader's ``as_of``, so nothing after
it is priced. A symbol the data cannot price is a ``QuoteMissing`` carrying the
vendors' reasons: the book never values, sizes or fills at an invented price
(the fork's failed fetch became a price of 0). Sectors come from the universe
listings (the first routed vendor that lists the symbol, then the vendor that
prices it), then from the fundamentals, so they are GICS ``Sector`` values and
never free text.
"""

from __future__ import annotations

from collections.abc import Callable, Iterable
from datetime import date, datetime

from pydantic import AwareDatetime, BaseModel, ConfigDict, Field

from shared.data.contracts import SECTOR_ETFS, DataKind, DataVendor, Listing, Sector
from shared.data.router import DataRouter
from shared.errors import InvalidInput, NoData, NotConfigured
from shared.market.bars import Bar, Timeframe
from shared.portfolio.models import Price, canonical_symbol, price

_ETF_SECTORS: dict[str, Sector] = {etf: sector for sector, etf in SECTOR_ETFS.items()}
"""A sector ETF is all in its sector, though listings give ETFs no sector."""
HISTORY_BARS = 253
"""A year of sessions plus one: 252 daily returns."""


class Quote(BaseModel):
    """A symbol's last daily close at or before ``as_of``."""

    model_config = ConfigDict(frozen=True)

    symbol: str
    price: Price = Field(gt=0)
    bar_time: AwareDatetime = Field(description="the bar the close is from")
    vendor: str


class QuoteMissing(BaseModel):
    """No usable close: why, in the vendors' words."""

    model_config = ConfigDict(frozen=True)

    symbol: str
    reason: str


class Closes(BaseModel):
    """A symbol's daily closes up to ``as_of``, oldest first."""

    model_config = ConfigDict(frozen=True)

    symbol: str
    dates: list[date]
    closes: list[float]


class MarketReader:
    """Reads for one book as of one time; listings are read once and kept."""

    def __init__(self, router: DataRouter, as_of: datetime) -> None:
        if as_of.utcoffset() is None:
            raise InvalidInput("as_of", f"{as_of.isoformat()} has no timezone", fix="Add e.g. Z.")
        self.router = router
        self.as_of = as_of
        self._sectors: dict[str, Sector | None] = {}
        self._quotes: dict[str, Quote | QuoteMissing] = {}

    def _bars(self, symbol: str, lookback: int) -> tuple[list[Bar], str] | str:
        """The daily bars and the vendor that served them, or the reason there are none."""
        try:
            routed = self.router.call(
                DataKind.OHLCV,
                lambda vendor: vendor.ohlcv(symbol, Timeframe.D1, self.as_of, lookback),
                as_of=self.as_of,
            )
        except (NoData, NotConfigured) as error:
            return str(error)
        except InvalidInput as error:
            # A vendor that does not know the ticker at all says so about `symbol`.
            if error.field != "symbol":
                raise
            return str(error)
        if not routed.value:
            return f"no daily bar of {symbol} by {self.as_of.isoformat()}"
        return routed.value, routed.vendor

    def quote(self, symbol: str) -> Quote | QuoteMissing:
        """The last close at or before ``as_of`` (read once per symbol)."""
        wanted = canonical_symbol(symbol)
        if wanted not in self._quotes:
            bars = self._bars(wanted, 1)
            if isinstance(bars, str):
                self._quotes[wanted] = QuoteMissing(symbol=wanted, reason=bars)
            else:
                last = bars[0][-1]
                self._quotes[wanted] = Quote(
                    symbol=wanted, price=price(last.close), bar_time=last.time, vendor=bars[1]
                )
        return self._quotes[wanted]

    def quotes(self, symbols: Iterable[str]) -> dict[str, Quote | QuoteMissing]:
        """Each distinct symbol's quote."""
        wanted = dict.fromkeys(canonical_symbol(s) for s in symbols)
        return {symbol: self.quote(symbol) for symbol in wanted}

    def closes(self, symbol: str, bars: int = HISTORY_BARS) -> Closes | QuoteMissing:
        """Up to ``bars`` daily closes ending at ``as_of``."""
        wanted = canonical_symbol(symbol)
        found = self._bars(wanted, bars)
        if isinstance(found, str):
            return QuoteMissing(symbol=wanted, reason=found)
        return Closes(
            symbol=wanted,
            dates=[bar.time.date() for bar in found[0]],
            closes=[bar.close for bar in found[0]],
        )

    def sector(self, symbol: str) -> Sector | None:
        """The symbol's GICS sector: a sector ETF's own, else the listing's, else the
        fundamentals'; None for other ETFs, indices and symbols no vendor classifies."""
        wanted = canonical_symbol(symbol)
        if wanted not in self._sectors:
            self._sectors[wanted] = self._classify(wanted)
        return self._sectors[wanted]

    def _classify(self, wanted: str) -> Sector | None:
        if wanted in _ETF_SECTORS:
            return _ETF_SECTORS[wanted]
        lookups: tuple[Callable[[], Sector | None], ...] = (
            lambda: (
                self.router.call(
                    DataKind.UNIVERSE, lambda v: _listed(v, wanted, self.as_of), as_of=self.as_of
                ).value.sector
            ),
            lambda: self._listed_by_pricing_vendor(wanted),
            lambda: (
                self.router.call(
                    DataKind.FUNDAMENTALS,
                    lambda v: v.fundamentals(wanted, self.as_of),
                    as_of=self.as_of,
                ).value.sector
            ),
        )
        for lookup in lookups:
            try:
                sector = lookup()
            except (NoData, NotConfigured):
                continue
            except InvalidInput as error:
                if error.field != "symbol":
                    raise
                continue
            if sector is not None:
                return sector
        return None

    def _listed_by_pricing_vendor(self, symbol: str) -> Sector | None:
        """The sector in the universe of the vendor that serves the symbol's bars, if it has one."""
        quote = self.quote(symbol)
        vendor = self.router.vendors.get(quote.vendor) if isinstance(quote, Quote) else None
        if vendor is None or DataKind.UNIVERSE not in vendor.kinds:
            return None
        return _listed(vendor, symbol, self.as_of).sector

    def sectors(self, symbols: Iterable[str]) -> dict[str, Sector | None]:
        """Each distinct symbol's sector."""
        return {s: self.sector(s) for s in dict.fromkeys(canonical_symbol(x) for x in symbols)}


def _listed(vendor: DataVendor, symbol: str, as_of: datetime) -> Listing:
    """``symbol``'s listing in ``vendor``'s universe; NoData sends the router to the next one."""
    for listing in vendor.universe(as_of):
        if listing.symbol.upper() == symbol:
            return listing
    raise NoData(f"{symbol} is not in this vendor's universe")
