"""The bundled OHLCV files as a data vendor, and the bar-reading rule file vendors share.

``BundledVendor`` serves bars and a three-symbol universe offline, so demos and
tests need neither the user's files nor a network. ``read_bars`` is how every
file-backed vendor reads bars: a bar source's "not in my data" answers (unknown
symbol, ``as_of`` before the data, a timeframe its bars cannot make, bars that
ended long before ``as_of``) become ``NoData``, so the router asks the next
vendor instead of failing the call; a naive ``as_of`` or a bad lookback stay
``InvalidInput``, since no vendor can answer them.
"""

from __future__ import annotations

from datetime import UTC, datetime, timedelta

from shared.data.contracts import INDEX_SYMBOLS, DataKind, DataVendor, Listing, Sector
from shared.data.real import INDEX_FILES
from shared.errors import InvalidInput, NoData
from shared.market.bars import Bar, Timeframe
from shared.market.sources import BarSource, BundledSource, FrameSource

STALE_GRACE = timedelta(days=7)
"""Weekends, holidays, a feed a few days behind: how far past the newest bar it still counts."""

_NOT_IN_DATA = frozenset({"symbol", "as_of", "timeframe"})
"""The ``InvalidInput`` fields of a bar source that mean "this data does not have it"."""


def check_as_of(as_of: datetime) -> datetime:
    """``as_of`` in UTC; a naive one is refused, since guessing its zone shifts every bound."""
    if not isinstance(as_of, datetime) or as_of.utcoffset() is None:
        raise InvalidInput(
            "as_of",
            f"{as_of!r} is not a timezone-aware datetime",
            fix="Pass e.g. datetime(2024, 1, 2, tzinfo=UTC).",
        )
    return as_of.astimezone(UTC)


def read_bars(
    source: BarSource,
    vendor: str,
    symbol: str,
    timeframe: Timeframe,
    as_of: datetime,
    lookback: int | None,
) -> list[Bar]:
    """``source``'s bars up to ``as_of``, or ``NoData`` when its data cannot answer.

    Bars whose newest is more than two bars plus ``STALE_GRACE`` before ``as_of``
    are stale: an analysis "as of" 2024 must not stand on a file that ended in
    2013. (Two bars, because a resampled bar is only served once complete.)
    """
    cutoff = check_as_of(as_of)
    try:
        bars = source.read(symbol, timeframe, as_of=cutoff, lookback=lookback)
    except InvalidInput as error:
        if error.field not in _NOT_IN_DATA:
            raise
        raise NoData(f"{vendor} has no {symbol} {timeframe} bars as of {cutoff}: {error}") from None
    newest = bars[-1].time
    if cutoff - newest > 2 * timeframe.duration + STALE_GRACE:
        raise NoData(
            f"{vendor}'s {symbol} {timeframe} bars end at {newest.isoformat()}, "
            f"too long before as_of {cutoff.isoformat()}"
        )
    return bars


def native_timeframe(source: FrameSource, symbol: str) -> Timeframe:
    """The timeframe a symbol's file holds, unresampled: the finest it serves."""
    return source.timeframes(symbol)[0]


_LISTINGS = (
    *(
        Listing(symbol=symbol, name=INDEX_SYMBOLS[symbol], asset_type="index")
        for symbol in INDEX_FILES
    ),
    Listing(symbol="BTCUSD", name="Bitcoin / US dollar", asset_type="crypto"),
    Listing(symbol="EURUSD", name="Euro / US dollar", asset_type="fx"),
    Listing(
        symbol="GOOG",
        name="Alphabet Inc. (Google)",
        sector=Sector.COMMUNICATION_SERVICES,
        industry="Interactive Media & Services",
    ),
)


class BundledVendor(DataVendor):
    """``shared.market.sources.BundledSource`` behind the vendor interface: bars and universe.

    Every other kind is ``DataVendor``'s "does not serve" answer."""

    name = "bundled"
    kinds = frozenset({DataKind.OHLCV, DataKind.UNIVERSE})

    def __init__(self) -> None:
        self._source = BundledSource()

    def universe(self, as_of: datetime) -> list[Listing]:
        """The symbols with a (fresh) bar at ``as_of``: GOOG from 2004, EURUSD 2017-18, BTCUSD."""
        listed = [listing for listing in _LISTINGS if self._has_bar(listing.symbol, as_of)]
        if not listed:
            raise NoData(f"bundled has no symbol with bars at {check_as_of(as_of).isoformat()}")
        return listed

    def ohlcv(self, symbol: str, timeframe: Timeframe, as_of: datetime, lookback: int) -> list[Bar]:
        return read_bars(self._source, self.name, symbol, timeframe, as_of, lookback)

    def _has_bar(self, symbol: str, as_of: datetime) -> bool:
        timeframe = native_timeframe(self._source, symbol)
        try:
            read_bars(self._source, self.name, symbol, timeframe, as_of, 1)
        except NoData:
            return False
        return True
