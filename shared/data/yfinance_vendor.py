"""Yahoo Finance as a research-data vendor, through the optional ``yfinance`` package (online).

Yahoo serves today's view of the world, so each kind is bounded by ``as_of`` here:

- bars: fetched up to ``as_of`` and cut there, no bar labelled after it (as every
  bar source); sector and index figures come from those bars.
- news: kept only if published in ``(as_of - window, as_of]``. Yahoo returns only
  its latest stories, so a past ``as_of`` often finds none: ``NoData``, not a guess.
- statements: visible once ``period_end`` plus a reporting lag has passed (Yahoo
  gives no filing date; the lags are in ``yfinance_shapes``). Yahoo keeps about
  five quarters.
- insider trades: visible once their Form 4 deadline has passed.
- fundamentals: computed from those statements and the as-traded close at
  ``as_of``, never from ``Ticker.info``'s live ratios; ``info`` only names the company.
- movers: Yahoo's screeners are live, so they answer only for an ``as_of`` within a
  day of now, and only with quotes timed at or before it.

Industry, social and macro data are not served (``DataVendor``'s "does not serve" answer): Yahoo's industry pages rank by
today's market caps, which would leak the future into a past ``as_of``.

Errors are classified by ``yfinance_shapes.ERROR_RULES``. An unknown ticker is ``NoData``, not
``InvalidInput``: Yahoo cannot tell a mistyped ticker from a delisted one or an empty
range, and ``NoData`` lets the router ask the next vendor.
"""

from __future__ import annotations

import importlib
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from datetime import UTC, datetime, timedelta
from typing import Any, TypeVar

import pandas as pd

from shared.data import yfinance_shapes as shapes
from shared.data.bundled import read_bars
from shared.data.contracts import (
    INDEX_SYMBOLS,
    SECTOR_ETFS,
    DataKind,
    DataVendor,
    Fundamentals,
    IndexLevel,
    InsiderTransaction,
    Listing,
    MarketMovers,
    Mover,
    NewsItem,
    NewsQuery,
    NewsSearch,
    Reach,
    Sector,
    SectorPerformance,
    Statement,
    StatementKind,
)
from shared.data.figures import compute_fundamentals, index_levels, return_over
from shared.errors import InvalidInput, NoData, NotConfigured
from shared.extras import install_command
from shared.market.bar_source import BarQuery, BarSource
from shared.market.bars import Bar, Timeframe, validate_bars
from shared.market.series import build_series, parse_as_of
from shared.market.yahoo import _to_frame, finished_frame

T = TypeVar("T")


def install_fix() -> str:
    """How to get a yfinance that serves the kind, or do without it."""
    return f"Run `{install_command('online')}`, or route the kind to another vendor."


LIVE_TOLERANCE = timedelta(days=1)
"""How far in the past ``as_of`` may be for a live screener to answer it."""
RECENT = timedelta(days=7)
"""How old an ``as_of`` may be for Yahoo's latest-only answers to stand for it."""

YAHOO_REACH: dict[DataKind, Reach] = {
    DataKind.NEWS: Reach(RECENT, "Yahoo keeps only its latest stories"),
    DataKind.MOVERS: Reach(LIVE_TOLERANCE, "Yahoo's screeners are live"),
    DataKind.STATEMENTS: Reach(
        RECENT, "Yahoo gives its latest (restated) figures, without their filing dates"
    ),
    DataKind.FUNDAMENTALS: Reach(
        RECENT, "computed from Yahoo's latest (restated) statements, without filing dates"
    ),
    DataKind.INSIDER: Reach(RECENT, "Yahoo keeps only recent insider trades"),
}
"""The kinds Yahoo answers only about now. Its bars are dated (sectors and indices come from
them), so they answer for the past; they are adjusted for splits and dividends since, which
issue 37's raw bars will address."""

_EARLIEST = pd.Timestamp("1970-01-01", tz=UTC)  # a read of all history starts here
_NEWS_COUNT = 50  # stories asked for; Yahoo returns its latest, filtered by as_of after
_MARKET_QUERY = "stock market"  # the search for news about no symbol and no topic
_SECTOR_SESSIONS = 300  # daily bars enough for year-to-date and 21-day returns
_PRICE_LOOKBACK = timedelta(days=10)  # searched back from as_of for its close


def _utc_now() -> datetime:
    return datetime.now(UTC)


class YFinanceVendor(DataVendor, NewsSearch):
    """Yahoo Finance for OHLCV, news, statements, fundamentals, insider, sectors, movers, indices.

    ``module`` replaces the ``yfinance`` import (tests pass a fake); otherwise yfinance
    is imported at the first read, and its absence is ``NotConfigured``. ``symbols``
    is the universe (Yahoo has no point-in-time listing of its own), nothing else:
    reads are not limited to it. ``timeout`` (seconds) goes to every call that takes
    one (price history); ``clock`` is "now" for live data.

    The first read sets yfinance's process-wide ``config.debug.hide_exceptions`` to
    False (see ``shapes.surface_errors``): hidden, a rate limit would read as "no data".
    """

    name = "yfinance"

    def __init__(
        self,
        module: Any = None,
        *,
        symbols: Sequence[str] = (),
        timeout: float = 10.0,
        clock: Callable[[], datetime] = _utc_now,
    ) -> None:
        self._module = module
        self._history_options: dict[str, Any] | None = None
        self._symbols = tuple(dict.fromkeys(symbol.upper() for symbol in symbols))
        self._timeout = timeout
        self._clock = clock
        self._bars = _YahooBars(self._history, self._now)
        served = {DataKind.OHLCV, DataKind.NEWS, DataKind.FUNDAMENTALS, DataKind.STATEMENTS}
        served |= {DataKind.INSIDER, DataKind.SECTORS, DataKind.MOVERS, DataKind.INDICES}
        self._kinds = frozenset(served | ({DataKind.UNIVERSE} if self._symbols else set()))

    @property
    def kinds(self) -> frozenset[DataKind]:
        """Bars, news, statements, fundamentals, insider, sectors, movers, indices; the
        universe only when given symbols."""
        return self._kinds

    # --- the DataVendor interface ---------------------------------------------------

    def reach(self, kind: DataKind) -> Reach:
        """``YAHOO_REACH``'s now-only kinds; the others as of any past time."""
        return YAHOO_REACH.get(kind, Reach())

    def universe(self, as_of: datetime) -> list[Listing]:
        """The configured symbols as listings (names and sectors are Yahoo's current ones)."""
        _cutoff(as_of)
        if not self._symbols:
            raise NotConfigured(
                "yfinance has no point-in-time universe",
                fix="Give the vendor a symbol list, or route universe to another vendor.",
            )
        listings = [listing for s in self._symbols if (listing := self._listing(s))]
        if not listings:
            raise NoData(f"Yahoo Finance knows none of {', '.join(self._symbols)}")
        return listings

    def ohlcv(self, symbol: str, timeframe: Timeframe, as_of: datetime, lookback: int) -> list[Bar]:
        """The last ``lookback`` finished bars up to ``as_of``, split- and dividend-adjusted.

        Adjustment carries later splits and dividends into past levels (returns keep);
        ``fundamentals`` therefore prices with unadjusted closes. Stale bars (a symbol
        that stopped trading long before ``as_of``) are ``NoData``, as for every vendor.
        """
        wanted = Timeframe.parse(timeframe)
        return read_bars(self._bars, self.name, symbol.upper(), wanted, as_of, lookback)

    def search_news(self, query: NewsQuery) -> list[NewsItem]:
        """Stories published in ``(as_of - window, as_of]``, newest first: a ticker's news
        for ``symbol`` alone, else a Yahoo search for the topic (and symbol)."""
        cutoff, ticker = _cutoff(query.as_of), query.symbol.upper() if query.symbol else None
        since = _since(cutoff, query.window)
        if ticker and not query.topic:
            raw = self._fetch(
                f"news for {ticker!r}", lambda yf: yf.Ticker(ticker).get_news(count=_NEWS_COUNT)
            )
        else:
            search = " ".join(part for part in (ticker, query.topic) if part) or _MARKET_QUERY
            raw = self._fetch(
                f"news for {search!r}", lambda yf: yf.Search(search, news_count=_NEWS_COUNT).news
            )
        parsed = (shapes.news_item(item, symbol=ticker, topic=query.topic) for item in raw or ())
        unique = {item.id: item for item in parsed if item and since < item.published_at <= cutoff}
        if not unique:
            raise NoData(
                f"Yahoo Finance has no news for {ticker or query.topic or 'the market'} in the window"
            )
        newest = sorted(unique.values(), key=lambda item: item.published_at, reverse=True)
        return newest[: query.limit]

    def fundamentals(self, symbol: str, as_of: datetime) -> Fundamentals:
        """``compute_fundamentals`` of the statements public at ``as_of`` and its as-traded close.

        Yahoo adjusts past prices (and perhaps past share counts) for later splits;
        across a split the close and the statements cannot be put on one basis, so
        after a split since the oldest statement used, the price is None (and so are
        market cap, P/E and P/B). ``info`` only names the company: its ratios are live.
        """
        ticker, cutoff = symbol.upper(), _cutoff(as_of)
        info = self._info(ticker)
        used = [
            *self._statements(ticker, StatementKind.INCOME, cutoff, info)[:4],  # TTM quarters
            *self._statements(ticker, StatementKind.BALANCE, cutoff, info)[:1],
        ]
        if not used:
            raise NoData(f"Yahoo Finance has no statement of {ticker!r} public by {cutoff}")
        since = pd.Timestamp(min(statement.period_end for statement in used), tz=UTC)
        price = self._as_traded_close(ticker, cutoff, since)
        listing = shapes.listing_from_info(ticker, info)
        return compute_fundamentals(ticker, cutoff.to_pydatetime(), used, price, listing)

    def statements(
        self, symbol: str, kind: StatementKind, as_of: datetime, periods: int = 4
    ) -> list[Statement]:
        """The last ``periods`` quarterly statements public at ``as_of``, newest first."""
        ticker, cutoff, wanted = symbol.upper(), _cutoff(as_of), StatementKind(kind)
        if periods < 1:
            raise InvalidInput(
                "periods", f"{periods!r} is not a positive count", fix="Use 1 or more."
            )
        found = self._statements(ticker, wanted, cutoff, self._info(ticker))
        if not found:
            raise NoData(
                f"Yahoo Finance has no {wanted} statement of {ticker!r} public by {cutoff.isoformat()}"
            )
        return found[:periods]

    def insider(self, symbol: str, as_of: datetime, window: timedelta) -> list[InsiderTransaction]:
        """Insider buys and sells whose Form 4 was due in ``(as_of - window, as_of]``, newest first."""
        ticker, cutoff = symbol.upper(), _cutoff(as_of)
        since = _since(cutoff, window)
        frame = self._frame(ticker, "insider_transactions")
        trades = [
            t for t in shapes.insider_from_frame(ticker, frame) if since < t.filed_at <= cutoff
        ]
        if not trades:
            raise NoData(f"Yahoo Finance has no insider trades of {ticker!r} filed in the window")
        return sorted(trades, key=lambda trade: trade.filed_at, reverse=True)

    def sectors(self, as_of: datetime) -> list[SectorPerformance]:
        """The SPDR sector ETFs' returns, as fractions, from their daily bars up to ``as_of``."""
        year = _cutoff(as_of).year
        rows = [self._sector(sector, etf, as_of, year) for sector, etf in SECTOR_ETFS.items()]
        if all(row.return_1d is None and row.return_ytd is None for row in rows):
            raise NoData("Yahoo Finance has no sector ETF bars up to as_of")
        return rows

    def movers(self, as_of: datetime, limit: int = 10) -> MarketMovers:
        """Yahoo's gainers, losers and most active, for an ``as_of`` of about now.

        Yahoo's predefined screeners answer 25 quotes, so ``limit`` is at most 25.
        ``relative_volume`` stays None: Yahoo averages volume over 10 days or 3 months,
        not the 20 days the contract names.
        """
        cutoff = _cutoff(as_of)
        if cutoff < self._now() - LIVE_TOLERANCE:
            raise NotConfigured(
                f"yfinance: a live screener cannot answer as of a past date ({cutoff.isoformat()})",
                fix="Route movers to a vendor that computes them from bars.",
            )
        if not hasattr(self._load(), "screen"):
            raise NotConfigured(
                "yfinance: this version has no screener (yf.screen)", fix=install_fix()
            )
        lists = {
            field: self._screen(name, cutoff, limit) for field, name in shapes.MOVER_SCREENS.items()
        }
        if not any(lists.values()):
            raise NoData(f"Yahoo Finance's screeners have no quote timed by {cutoff.isoformat()}")
        return MarketMovers(as_of=cutoff.to_pydatetime(), **lists)

    def indices(self, as_of: datetime) -> list[IndexLevel]:
        """The main US indices' last close up to ``as_of`` and their 1- and 21-session changes."""
        levels = index_levels(lambda symbol: self._daily(symbol, as_of, 22), INDEX_SYMBOLS)
        if not levels:
            raise NoData("Yahoo Finance has no index bars up to as_of")
        return levels

    # --- reading yfinance -------------------------------------------------------------

    def _load(self) -> Any:
        """The yfinance module, imported once, told to raise its errors rather than log them."""
        if self._module is None:
            try:
                self._module = importlib.import_module("yfinance")
            except ImportError:
                raise NotConfigured(
                    "yfinance: the optional package yfinance is not installed", fix=install_fix()
                ) from None
        if self._history_options is None:
            self._history_options = {
                "timeout": self._timeout,
                **shapes.surface_errors(self._module),
            }
        return self._module

    def _fetch(self, what: str, read: Callable[[Any], T]) -> T:
        """``read(yfinance)``, its failures classified by ``shapes.ERROR_RULES``."""
        yf = self._load()
        try:
            return read(yf)
        except Exception as error:  # yfinance's and its HTTP client's: classified below
            raise shapes.classify(what, error) from error

    def _history(
        self, ticker: str, interval: str, start: pd.Timestamp, end: pd.Timestamp, **options: Any
    ) -> pd.DataFrame:
        """``Ticker.history`` from ``start`` to ``end`` (exclusive), with the timeout."""
        history = self._fetch(
            f"{interval} history of {ticker!r}",
            lambda yf: yf.Ticker(ticker).history(
                interval=interval, start=start, end=end, **options, **(self._history_options or {})
            ),
        )
        return history if history is not None else pd.DataFrame()

    def _frame(self, ticker: str, attribute: str) -> pd.DataFrame:
        """A frame-valued ``Ticker`` attribute; Yahoo's None for "nothing" as an empty frame."""
        frame = self._fetch(
            f"{attribute} of {ticker!r}", lambda yf: getattr(yf.Ticker(ticker), attribute)
        )
        return frame if isinstance(frame, pd.DataFrame) else pd.DataFrame()

    def _info(self, ticker: str) -> dict[str, Any]:
        """``Ticker.info``, read only for static fields (names, sector, fiscal calendar)."""
        info = self._fetch(f"info of {ticker!r}", lambda yf: yf.Ticker(ticker).info)
        return dict(info or {})

    def _now(self) -> pd.Timestamp:
        return pd.Timestamp(self._clock()).tz_convert(UTC)

    # --- building records -------------------------------------------------------------

    def _statements(
        self, ticker: str, kind: StatementKind, cutoff: pd.Timestamp, info: dict[str, Any]
    ) -> list[Statement]:
        """The quarterly statements of ``kind`` public at ``cutoff``, newest first."""
        frame = self._frame(ticker, shapes.STATEMENT_FRAMES[kind])
        found = shapes.statements_from_frame(
            ticker,
            kind,
            frame,
            currency=shapes.currency_of(info),
            fiscal_year_end=shapes.fiscal_year_end(info),
        )
        return [statement for statement in found[::-1] if statement.reported_at <= cutoff]

    def _as_traded_close(
        self, ticker: str, cutoff: pd.Timestamp, since: pd.Timestamp
    ) -> float | None:
        """The unadjusted close at ``cutoff``; None if unknown or a split since ``since``."""
        start = min(since, cutoff) - _PRICE_LOOKBACK
        history = self._history(ticker, "1d", start, self._now(), auto_adjust=False, actions=True)
        if history.empty:
            return None
        splits = pd.to_numeric(history.get("Stock Splits", pd.Series(dtype=float)), errors="coerce")
        if (splits[splits.index >= since].fillna(0) != 0).any():
            return None
        closes = _to_frame(history, Timeframe.D1)["close"]
        closes = closes[closes.index <= cutoff]
        return float(closes.iloc[-1]) if len(closes) else None

    def _listing(self, symbol: str) -> Listing | None:
        """``symbol`` as a listing; None when Yahoo does not know it or lists no such type."""
        try:
            return shapes.listing_from_info(symbol, self._info(symbol))
        except NoData:
            return None

    def _daily(self, symbol: str, as_of: datetime, sessions: int) -> list[Bar]:
        """Up to ``sessions`` daily bars up to ``as_of``; none when Yahoo has none."""
        try:
            return self.ohlcv(symbol, Timeframe.D1, as_of, sessions)
        except NoData:
            return []

    def _sector(self, sector: Sector, etf: str, as_of: datetime, year: int) -> SectorPerformance:
        """One ETF's returns; all None when Yahoo has no bars for it (XLC before 2018)."""
        bars = self._daily(etf, as_of, _SECTOR_SESSIONS)
        before_year = [bar for bar in bars if bar.time.year < year]
        return SectorPerformance(
            sector=sector,
            etf=etf,
            return_1d=return_over(bars, 1),
            return_5d=return_over(bars, 5),
            return_21d=return_over(bars, 21),
            return_ytd=bars[-1].close / before_year[-1].close - 1 if before_year else None,
        )

    def _screen(self, name: str, cutoff: pd.Timestamp, limit: int) -> list[Mover]:
        """A predefined screener's quotes timed at or before ``cutoff``, in Yahoo's order."""
        answer = self._fetch(f"screener {name!r}", lambda yf: yf.screen(name))
        found = map(shapes.mover_from_quote, (answer or {}).get("quotes", ()))
        return [mover for when, mover in filter(None, found) if when <= cutoff][:limit]


@dataclass(frozen=True)
class _YahooBars(BarSource):
    """Yahoo's bars as a ``BarSource``, so ``read_bars`` applies the rules every vendor shares."""

    history: Callable[..., pd.DataFrame]
    now: Callable[[], pd.Timestamp]

    def symbols(self) -> tuple[str, ...]:
        return ()  # any ticker Yahoo knows

    def read_query(self, query: BarQuery) -> list[Bar]:
        """Finished bars labelled at or before the cutoff, fetched just for that window."""
        symbol, wanted, lookback = query.symbol, query.timeframe, query.lookback
        cutoff = _cutoff(query.cutoff)

        def download(base: Timeframe, start: pd.Timestamp | None, end: pd.Timestamp) -> Any:
            start = _EARLIEST if start is None else start
            return self.history(symbol, base.value, start, end, auto_adjust=True, actions=False)

        frame, base, _ = finished_frame(download, wanted, cutoff, lookback, self.now())
        frame = frame[frame.index <= cutoff]  # no bar labelled after as_of
        where = f"{wanted} bars for {symbol!r} up to {cutoff.isoformat()}"
        if frame.empty:
            raise NoData(f"Yahoo Finance has no {where} (unknown or delisted ticker?)")
        try:
            validate_bars(frame, field=f"yfinance {symbol}")
            series = build_series(symbol, frame, base, wanted)
        except InvalidInput as error:
            raise NoData(f"Yahoo Finance's {where} are unusable: {error}") from None
        if series.empty:
            raise NoData(f"Yahoo Finance has no complete {where}")
        return series.window(cutoff, lookback)


# --- helpers --------------------------------------------------------------------------


def _cutoff(as_of: datetime | None) -> pd.Timestamp:
    """``as_of`` as a UTC timestamp; every read needs one, with a timezone."""
    cutoff = parse_as_of(as_of)
    if cutoff is None:
        raise InvalidInput(
            "as_of", "every read needs an as_of", fix="Pass a timezone-aware datetime."
        )
    return cutoff


def _since(cutoff: pd.Timestamp, window: timedelta) -> pd.Timestamp:
    """The exclusive start of a look-back window ending at ``cutoff``."""
    if not isinstance(window, timedelta) or window <= timedelta(0):
        raise InvalidInput(
            "window", f"{window!r} is not a positive duration", fix="Use e.g. timedelta(days=7)."
        )
    return cutoff - window
