"""Massive (formerly Polygon): daily bars, movers, the universe and news, each as of ``as_of``.

- **Bars** (daily only): the raw bars of ``/v2/aggs/ticker/{t}/range/1/day/{from}/{to}`` with
  the ticker's splits and dividends, adjusted as known at ``as_of`` (``massive_adjust``: a
  split executed after ``as_of`` never changes the bars a run sees). Visibility is
  quantdesk's rule for bars: a daily bar is labelled 00:00 UTC of its date and read for any
  ``as_of`` at or after that label (the analysis stands at its close), and never while its
  session may still be forming: not until 00:00 UTC of the next day (as the yfinance vendor
  drops the bar still forming now), though Massive serves the day's bar during the session.
  Two requests a read (the bars, the ticker's dividends; the whole market's splits of the
  window once), one for a close, none for a window read already.
- **Movers**: the grouped daily file (every US stock on one date, one request) of the last
  complete session by ``as_of`` and of the session before it, walking back over weekends
  without a request and over holidays (their file is empty); with the splits executed
  between the two, so a 4-for-1 split is not a 75% loser. Ranked among tickers that closed
  at $1 or more on 100,000 shares or more: penny stocks, warrants and units traded by the
  hundred otherwise fill the lists. The file names no company (the ticker stands for the
  name) and one day holds no average volume (``relative_volume`` is None).
- **Universe**: the ticker list as of ``as_of``'s date with ``active=true``, which the
  OpenAPI document defines as "actively traded on the queried date": a company delisted
  since is in it, one delisted before is not (``active=false`` would list the names already
  gone that day, which that day's universe must not hold). Common stocks and ADRs are
  equities, ETFs etfs; warrants, units, rights, preferreds and funds are left out.
- **News**: by publication time in ``(as_of - window, as_of]``, newest first, about a symbol
  or the whole market. Massive has no topic search: a topic reads the window's newest 1,000
  articles (one request) and keeps those whose keywords or title name it. The sentiment is
  Massive's label about the symbol asked (positive 1, neutral 0, negative -1).

The key (``MASSIVE_API_KEY``) and the wire's faults are ``massive_wire``'s. The free tier
allows 5 requests a minute: every request first passes the desk's quota (``gate``).
"""

from __future__ import annotations

import re
import threading
from collections import OrderedDict
from collections.abc import Callable
from datetime import UTC, date, datetime, timedelta

import httpx
from pydantic import ValidationError

from shared.config import DEFAULT_QUOTAS, MassiveSettings
from shared.data.bundled import STALE_GRACE, check_as_of
from shared.data.contracts import (
    DataKind,
    DataVendor,
    Listing,
    MarketMovers,
    NewsItem,
    NewsQuery,
    NewsSearch,
)
from shared.data.figures import market_movers
from shared.data.massive_adjust import adjusted_bars, day_label, scaled, session_day
from shared.data.massive_wire import (
    PAGE,
    VENDOR,
    Agg,
    Article,
    Dividend,
    GroupedAgg,
    MassiveClient,
    Split,
    Ticker,
)
from shared.data.quota import Gate, LocalQuota
from shared.errors import InvalidInput, NoData, NotConfigured, NotCovered
from shared.market.bars import Bar, Timeframe, validate_bars
from shared.market.series import check_lookback

NAME = "massive"
MIN_PRICE = 1.0
"""A mover's least close, in dollars."""
MIN_VOLUME = 100_000
"""A mover's least volume on its session, in shares."""
WALK_BACK_DAYS = 7
"""Calendar days searched back for a session: a weekend and the longest run of holidays."""
TOPIC_SCAN = 1000
"""Articles read for a topic: one page, the most Massive gives (the quota counts requests)."""
ASSET_TYPES = {"CS": "equity", "ADRC": "equity", "ETF": "etf"}
"""The ticker types of the universe, as Massive names them, and what quantdesk calls them."""
SENTIMENT = {"positive": 1.0, "neutral": 0.0, "negative": -1.0}
SPLITS, DIVIDENDS = "v3/reference/splits", "v3/reference/dividends"
_STOCK_TICKER = re.compile(r"[A-Z][A-Z0-9.]*")
"""Massive's US stock tickers: upper case, a class after a dot (BRK.B)."""


def _utc_now() -> datetime:
    return datetime.now(UTC)


class _RawBars:
    """A ticker's bars as traded, per (API root, ticker, last session), for this process: the
    close a ratio needs (another vendor's read, through another router) comes from the year
    of bars the market analyst just read, for no request. Bars of past sessions do not
    change, and ``last`` bounds them, so no entry can answer for a later time; the least
    recently used entries go past ``most``."""

    def __init__(self, most: int = 4096) -> None:
        self._kept: OrderedDict[tuple[str, str, date], tuple[date, list[Agg]]] = OrderedDict()
        self._most = most
        self._lock = threading.Lock()

    def get(self, key: tuple[str, str, date]) -> tuple[date, list[Agg]] | None:
        with self._lock:
            found = self._kept.get(key)
            if found is not None:
                self._kept.move_to_end(key)
            return found

    def put(self, key: tuple[str, str, date], value: tuple[date, list[Agg]]) -> None:
        with self._lock:
            kept = self._kept.get(key)
            if kept is None or value[0] < kept[0]:  # keep the longer window
                self._kept[key] = value
            self._kept.move_to_end(key)
            while len(self._kept) > self._most:
                self._kept.popitem(last=False)


RAW_BARS = _RawBars()


class MassiveVendor(DataVendor, NewsSearch):
    """Massive's REST API; ``clock`` is "now", which decides the bar still forming."""

    name = NAME
    kinds = frozenset({DataKind.OHLCV, DataKind.MOVERS, DataKind.UNIVERSE, DataKind.NEWS})

    def __init__(
        self,
        settings: MassiveSettings,
        gate: Gate | None = None,
        transport: httpx.BaseTransport | None = None,
        clock: Callable[[], datetime] = _utc_now,
    ) -> None:
        self._client = MassiveClient(
            settings, gate or LocalQuota(NAME, DEFAULT_QUOTAS[NAME]), transport
        )
        self._clock = clock
        self._splits: dict[tuple[date, date], list[Split]] = {}
        self._splits_lock = threading.Lock()

    def ohlcv(self, symbol: str, timeframe: Timeframe, as_of: datetime, lookback: int) -> list[Bar]:
        """The last ``lookback`` daily bars complete at ``as_of``, adjusted as known then."""
        wanted = Timeframe.parse(timeframe)
        if wanted is not Timeframe.D1:
            raise NotConfigured(
                f"{NAME} serves daily bars, not {wanted}",
                fix=f"Ask for {Timeframe.D1} bars, or route {wanted} bars to another vendor.",
            )
        check_lookback(lookback)
        ticker = _ticker(symbol)
        cutoff = check_as_of(as_of)
        last = self._last_complete(cutoff.date())
        first = last - timedelta(days=lookback * 3 // 2 + 10)  # weekends and holidays
        aggs = self._raw_bars(ticker, first, last, cutoff)
        known = cutoff.date()
        if lookback == 1:
            # The last close as traded: an action moves only the bars before its day, so this
            # is the adjusted one too, unless an action falls between the last session and
            # as_of's date (then it is the price the share counts filed until then go with).
            splits, dividends = [], []
        else:
            splits = [s for s in self._market_splits(first, known) if s.ticker == ticker]
            dividends = self._client.rows(
                Dividend, DIVIDENDS, _dated("ex_dividend_date", first, known, ticker)
            )
        try:
            bars = adjusted_bars(aggs, splits, dividends, known)[-lookback:]
            validate_bars(bars, field=f"{NAME} {ticker}")
        except (ValidationError, InvalidInput) as error:
            raise NoData(f"{VENDOR}'s daily bars of {ticker} are unusable: {error}") from None
        return bars

    def movers(self, as_of: datetime, limit: int = 10) -> MarketMovers:
        """Gainers, losers and most active of the last complete session by ``as_of``."""
        cutoff = check_as_of(as_of)
        day, session = self._session(self._last_complete(cutoff.date()))
        before, previous = self._session(day - timedelta(days=1))
        splits = self._market_splits(before, day)
        since: dict[str, float] = {}  # what a share before the splits is now
        for split in splits:
            since[split.ticker] = since.get(split.ticker, 1.0) * split.split_to / split.split_from
        prior = {row.ticker: row for row in previous if _priced(row)}
        histories: list[tuple[Listing, list[Bar]]] = []
        for row in session:
            was = prior.get(row.ticker)
            if was is None or not _priced(row) or row.c < MIN_PRICE or row.v < MIN_VOLUME:
                continue
            ratio = since.get(row.ticker, 1.0)
            bars = [scaled(was, before, 1 / ratio, ratio), scaled(row, day)]
            histories.append((Listing(symbol=row.ticker, name=row.ticker), bars))
        found = market_movers(histories, cutoff, limit)
        if found is None:
            raise NoData(
                f"{VENDOR}'s grouped daily files of {before} and {day} hold no ticker traded "
                f"both days at ${MIN_PRICE:g} or more on {MIN_VOLUME:,} shares or more"
            )
        return found

    def universe(self, as_of: datetime) -> list[Listing]:
        """The common stocks, ADRs and ETFs actively traded on ``as_of``'s date."""
        day = check_as_of(as_of).date()
        rows = self._client.rows(
            Ticker,
            "v3/reference/tickers",
            {"market": "stocks", "date": day.isoformat(), "active": "true", "limit": PAGE},
        )
        listings = [
            Listing(symbol=row.ticker, name=row.name, asset_type=kind)
            for row in rows
            if (kind := ASSET_TYPES.get(row.type or ""))
        ]
        if not listings:
            raise NoData(f"{VENDOR} lists no common stock, ADR or ETF trading on {day}")
        return listings

    def search_news(self, query: NewsQuery) -> list[NewsItem]:
        """News published in ``(as_of - window, as_of]``, newest first."""
        end = check_as_of(query.as_of)
        if query.window <= timedelta(0):
            raise InvalidInput(
                "window", f"{query.window} is not a positive duration", fix="Use e.g. 7 days."
            )
        if query.limit < 1:
            raise InvalidInput(
                "limit", f"{query.limit} is not a positive number", fix="Use 1 or more."
            )
        start = end - query.window
        wanted = TOPIC_SCAN if query.topic else query.limit
        params = {
            "published_utc.gt": _stamp(start),
            "published_utc.lte": _stamp(end),
            "order": "desc",
            "sort": "published_utc",
            "limit": str(min(wanted, int(PAGE))),
        }
        ticker = None if query.symbol is None else _ticker(query.symbol)
        if ticker is not None:
            params["ticker"] = ticker
        articles = self._client.rows(Article, "v2/reference/news", params, every_page=False)
        items = sorted(
            (
                _item(article, ticker)
                for article in articles
                if start < article.published_utc <= end
                and (query.topic is None or _mentions(article, query.topic))
            ),
            key=lambda item: item.published_at,
            reverse=True,
        )
        if not items:
            about = (f" about {ticker}" if ticker else "") + (
                f" on {query.topic}" if query.topic else ""
            )
            raise NoData(f"{VENDOR} has no news{about} published from {start} to {end}")
        return items[: query.limit]

    def _market_splits(self, after: date, by: date) -> list[Split]:
        """Every ticker's splits executed in ``(after, by]``: one request or two for the whole
        market (US stocks split a few hundred times a year), kept for the window, instead of
        one per ticker: at 5 requests a minute a bar read then costs two requests, not three."""
        with self._splits_lock:
            if (after, by) not in self._splits:
                rows = self._client.rows(Split, SPLITS, _dated("execution_date", after, by))
                self._splits[(after, by)] = rows
            return self._splits[(after, by)]

    def _raw_bars(self, ticker: str, first: date, last: date, cutoff: datetime) -> list[Agg]:
        """The ticker's bars from ``first`` to ``last`` as traded; ``NoData`` without any, or
        when they ended long before ``cutoff`` (a company since delisted). Bars read already
        for a window ending at ``last`` answer any shorter one (``RAW_BARS``)."""
        key = (self._client.base_url, ticker, last)
        kept = RAW_BARS.get(key)
        if kept is not None and kept[0] <= first:
            aggs = [agg for agg in kept[1] if session_day(agg.t) >= first]
        else:
            aggs = self._client.rows(
                Agg,
                f"v2/aggs/ticker/{ticker}/range/1/day/{first}/{last}",
                {"adjusted": "false", "sort": "asc", "limit": "50000"},
            )
            aggs = [agg for agg in aggs if session_day(agg.t) <= last]
            RAW_BARS.put(key, (first, aggs))
        where = f"daily bars of {ticker} from {first} to {last}"
        if not aggs:
            raise NoData(f"{VENDOR} has no {where} (a ticker it does not know, or not trading)")
        newest = day_label(session_day(aggs[-1].t))
        if cutoff - newest > 2 * Timeframe.D1.duration + STALE_GRACE:
            raise NoData(f"{VENDOR}'s {where} end at {newest.date()} (delisted, or halted)")
        return aggs

    def _last_complete(self, day: date) -> date:
        """``day``, or the last day whose session is over by now (its bar may still be forming
        until 00:00 UTC of the next day)."""
        return min(day, self._clock().astimezone(UTC).date() - timedelta(days=1))

    def _session(self, latest: date) -> tuple[date, list[GroupedAgg]]:
        """The last session at or before ``latest`` and its grouped daily file."""
        for back in range(WALK_BACK_DAYS):
            day = latest - timedelta(days=back)
            if day.weekday() >= 5:  # no US session on a weekend: no request
                continue
            rows = self._client.rows(
                GroupedAgg, f"v2/aggs/grouped/locale/us/market/stocks/{day}", {"adjusted": "false"}
            )
            if rows:
                return day, rows
        raise NoData(
            f"{VENDOR}'s grouped daily files are empty for every day from "
            f"{latest - timedelta(days=WALK_BACK_DAYS - 1)} to {latest}"
        )


def _ticker(symbol: str) -> str:
    """``symbol`` as Massive's stock ticker; an index, currency or crypto symbol is not one."""
    ticker = symbol.strip().upper()
    if not _STOCK_TICKER.fullmatch(ticker):
        raise NotCovered(
            f"{NAME} serves US stocks and ETFs here, and {symbol!r} is not a stock ticker",
            fix="Route indices, currencies and crypto to another vendor.",
        )
    return ticker


def _dated(field: str, after: date, by: date, ticker: str | None = None) -> dict[str, str]:
    """The query of the splits (``field``: ``execution_date``) or dividends
    (``ex_dividend_date``) dated in ``(after, by]``, of one ticker or of all: those that can
    change a bar after ``after``, known by ``by``."""
    query = {f"{field}.gt": after.isoformat(), f"{field}.lte": by.isoformat(), "limit": PAGE}
    return query if ticker is None else {"ticker": ticker, **query}


def _priced(row: Agg) -> bool:
    """Whether every price of a grouped row is positive: only then is it a bar."""
    return min(row.o, row.h, row.l, row.c) > 0


def _stamp(moment: datetime) -> str:
    return moment.astimezone(UTC).strftime("%Y-%m-%dT%H:%M:%SZ")


def _mentions(article: Article, topic: str) -> bool:
    wanted = topic.strip().lower()
    return wanted in {k.lower() for k in article.keywords} or wanted in article.title.lower()


def _item(article: Article, ticker: str | None) -> NewsItem:
    sentiment = next(
        (SENTIMENT.get(i.sentiment.lower()) for i in article.insights if i.ticker == ticker), None
    )
    return NewsItem(
        id=article.id,
        published_at=article.published_utc,
        title=article.title,
        summary=article.description or "",
        source=article.publisher.name,
        url=article.article_url,
        symbols=article.tickers,
        topics=article.keywords,
        sentiment=sentiment,
    )
