"""``SimVendor``: every data kind, read as of a time from one seed's simulated world.

Each read finds the last session at or before ``as_of`` (bars are labelled at
00:00 UTC of their day, as everywhere in quantdesk) or the event rows visible in
its window, by binary search; nothing dated after ``as_of`` is returned, and
figures derived from bars (sectors, industry, movers, indices, fundamentals'
price) use only bars up to that session. Lists of events come newest first,
bars and macro points oldest first.

An ``as_of`` before the world's first session, or more than ``STALE_AFTER``
past its last, is ``NoData`` naming the world's range: the sim has nothing to
say then, and an analysis of 2024 must not stand on 2018 prices.
"""

from __future__ import annotations

import functools
from collections.abc import Hashable
from datetime import date, datetime, timedelta

import numpy as np
import pandas as pd

from shared.data.contracts import (
    INDEX_SYMBOLS,
    SECTOR_ETFS,
    TBILL_ETF,
    DataKind,
    DataVendor,
    Fundamentals,
    IndexLevel,
    IndustryCompany,
    InsiderTransaction,
    Listing,
    MacroSeries,
    MarketMovers,
    Mover,
    NewsItem,
    NewsQuery,
    NewsSearch,
    Sector,
    SectorPerformance,
    SocialPost,
    Statement,
    StatementKind,
)
from shared.data.sim.headlines import ALL_TOPICS, news_item
from shared.data.sim.insiders import insider_record
from shared.data.sim.macro import SERIES, series_record
from shared.data.sim.prices import REAL_INDICES
from shared.data.sim.series import Series
from shared.data.sim.social import post_record
from shared.data.sim.statements import statement
from shared.data.sim.tables import ALL
from shared.data.sim.universe import COMPANIES, INDEX_ORDER, SYMBOLS, listings
from shared.data.sim.world import DEFAULT_END, DEFAULT_START, World, world
from shared.errors import InvalidInput, NoData, NotConfigured, lookup
from shared.market.bars import Bar, Timeframe
from shared.market.series import check_lookback, parse_as_of

STALE_AFTER = timedelta(days=7)
"""How far past the world's last session an ``as_of`` still reads it (weekends, holidays)."""

SERVED_TIMEFRAMES = (Timeframe.D1, Timeframe.W1, Timeframe.MO1)
"""Daily bars, and the weeks and months made from them."""

_COLUMN = {symbol: column for column, symbol in enumerate(SYMBOLS)}
_COMPANIES = len(COMPANIES)
_INDEX_COLUMNS = [_COLUMN[symbol] for symbol in INDEX_ORDER]
_RELATIVE_VOLUME_SESSIONS = 20
_MONTH_SESSIONS = 21
_WEEK_SESSIONS = 5


@functools.cache
def _listings() -> tuple[Listing, ...]:
    return tuple(listings(frozenset(REAL_INDICES)))


class SimVendor(DataVendor, NewsSearch):
    """The simulated market of ``seed`` over ``start``..``end`` (real S&P 500 sessions).

    Generated on first read and shared by every vendor of the same arguments in
    the process. Every record says ``simulated=True``, except index levels and
    macro series whose values are real (``^GSPC``, ``^IXIC``, the real part of
    ``^VIX``, core CPI).
    """

    name = "sim"
    kinds = frozenset(DataKind)

    def __init__(self, seed: int = 7, start: date = DEFAULT_START, end: date = DEFAULT_END) -> None:
        if isinstance(seed, bool) or not isinstance(seed, int) or seed < 0:
            raise InvalidInput("seed", f"{seed!r} is not a whole number >= 0", fix="Use e.g. 7.")
        self.seed, self.start, self.end = seed, start, end

    @property
    def world(self) -> World:
        """The generated world (built on first access, then cached per process)."""
        return world(self.seed, self.start, self.end)

    # --- the DataVendor interface -----------------------------------------------------

    def universe(self, as_of: datetime) -> list[Listing]:
        """Every symbol: the fictional companies, the sector ETFs, SGOV, the indices."""
        self._session(as_of)
        return list(_listings())

    def ohlcv(self, symbol: str, timeframe: Timeframe, as_of: datetime, lookback: int) -> list[Bar]:
        """The last ``lookback`` bars complete at ``as_of``, oldest first."""
        key = self._symbol(symbol)
        wanted = Timeframe.parse(timeframe)
        if wanted not in SERVED_TIMEFRAMES:
            raise NotConfigured(
                f"sim serves daily bars and the {Timeframe.W1}/{Timeframe.MO1} bars made from "
                f"them, not {wanted}"
            )
        check_lookback(lookback)
        self._session(as_of)
        series = self._series(key, wanted)
        cutoff = _ns(as_of)
        first = series.first_complete()
        if first is None or cutoff < first:
            raise NoData(f"sim has no complete {wanted} bar of {key} by {as_of.isoformat()}")
        return series.window(cutoff, lookback)

    def search_news(self, query: NewsQuery) -> list[NewsItem]:
        """News published in (as_of - window, as_of], about ``symbol`` and/or ``topic``."""
        keys: list[Hashable] = []
        what = "news"
        if query.symbol is not None:
            keys.append(("symbol", _COLUMN[self._symbol(query.symbol)]))
            what += f" about {query.symbol.upper()}"
        if query.topic is not None:
            if query.topic not in ALL_TOPICS:
                raise InvalidInput(
                    "topic",
                    f"unknown topic {query.topic!r}",
                    fix=f"Use one of: {', '.join(ALL_TOPICS)}.",
                )
            keys.append(("topic", query.topic))
            what += f" on {query.topic}"
        upto, after = self._window(query.as_of, query.window)
        table = self.world.news
        found = [table.rows(key, upto, after) for key in keys or [ALL]]
        matching = functools.reduce(np.intersect1d, found)
        picked = self._newest(matching, query.limit, what, query.as_of, query.window)
        return [news_item(table, row, self.world.books, self.seed) for row in picked]

    def social(
        self, symbol: str, as_of: datetime, window: timedelta, limit: int = 50
    ) -> list[SocialPost]:
        """Posts about a company in (as_of - window, as_of]."""
        company = self._company(symbol, DataKind.SOCIAL)
        upto, after = self._window(as_of, window)
        rows = self.world.posts.rows(("company", company), upto, after)
        picked = self._newest(rows, limit, f"posts about {SYMBOLS[company]}", as_of, window)
        return [post_record(self.world.posts, row, self.seed) for row in picked]

    def fundamentals(self, symbol: str, as_of: datetime) -> Fundamentals:
        """Ratios from the statements reported by ``as_of`` and the last close at or before it."""
        company = self._company(symbol, DataKind.FUNDAMENTALS)
        session = self._session(as_of)
        quarters = self._reported(company, as_of)
        books, latest = self.world.books, quarters[-1]
        price = float(self.world.bars.close[session, company])
        market_cap = price * float(books.shares[company])
        equity = float(books.items["total_equity"][company, latest])
        debt = float(books.items["total_debt"][company, latest])
        trailing = quarters[-4:] if len(quarters) >= 4 else None

        def ttm(item: str) -> float | None:
            if trailing is None:
                return None
            return float(books.items[item][company, trailing].sum())

        eps = ttm("eps_diluted")
        info = COMPANIES[company]
        return Fundamentals(
            symbol=info.symbol,
            as_of=_timestamp(as_of).to_pydatetime(),
            name=info.name,
            sector=info.sector,
            industry=info.industry,
            price=price,
            market_cap=market_cap,
            pe_ratio=price / eps if eps is not None and eps > 0 else None,
            price_to_book=market_cap / equity if equity > 0 else None,
            revenue_ttm=ttm("revenue"),
            net_income_ttm=ttm("net_income"),
            eps_ttm=None if eps is None else round(eps, 2),
            debt_to_equity=debt / equity if equity > 0 else None,
            latest_period=books.fiscal[latest],
            simulated=True,
        )

    def statements(
        self, symbol: str, kind: StatementKind, as_of: datetime, periods: int = 4
    ) -> list[Statement]:
        """The last ``periods`` statements of ``kind`` reported by ``as_of``, newest first."""
        company = self._company(symbol, DataKind.STATEMENTS)
        try:
            wanted = StatementKind(kind)
        except ValueError:
            raise InvalidInput(
                "kind",
                f"unknown statement {kind!r}",
                fix=f"Use one of: {', '.join(StatementKind)}.",
            ) from None
        _positive(periods, "periods")
        quarters = self._reported(company, as_of)[-periods:]
        return [statement(self.world.books, company, int(q), wanted) for q in quarters[::-1]]

    def insider(self, symbol: str, as_of: datetime, window: timedelta) -> list[InsiderTransaction]:
        """Insider trades filed in (as_of - window, as_of], newest first."""
        company = self._company(symbol, DataKind.INSIDER)
        upto, after = self._window(as_of, window)
        table = self.world.insiders
        rows = table.rows(("company", company), upto, after)
        picked = self._newest(rows, None, f"insider filings of {SYMBOLS[company]}", as_of, window)
        return [insider_record(table, row, self.world.rosters) for row in picked]

    def sectors(self, as_of: datetime) -> list[SectorPerformance]:
        """Each sector ETF's 1-, 5-, 21-session and year-to-date return at the last session."""
        session = self._session(as_of)
        year_start = np.datetime64(f"{self.world.market.days[session].item().year}-01-01")
        last_year_end = int(np.searchsorted(self.world.market.days, year_start)) - 1
        close = self.world.bars.close
        result = []
        for sector, etf in SECTOR_ETFS.items():
            prices = close[: session + 1, _COLUMN[etf]]
            result.append(
                SectorPerformance(
                    sector=sector,
                    etf=etf,
                    return_1d=_change(prices, 1),
                    return_5d=_change(prices, _WEEK_SESSIONS),
                    return_21d=_change(prices, _MONTH_SESSIONS),
                    # None in the world's first year: its prior close is not in the world.
                    return_ytd=_change(prices, session - last_year_end),
                    simulated=True,
                )
            )
        return result

    def industry(self, sector: Sector, as_of: datetime, limit: int = 10) -> list[IndustryCompany]:
        """The sector's companies by market cap at the last session, with their 21-session return."""
        try:
            wanted = Sector(sector)
        except ValueError:
            raise InvalidInput(
                "sector", f"unknown sector {sector!r}", fix=f"Use one of: {', '.join(Sector)}."
            ) from None
        _positive(limit, "limit")
        session = self._session(as_of)
        members = [k for k, c in enumerate(COMPANIES) if c.sector is wanted]
        close = self.world.bars.close[: session + 1]
        caps = close[session, members] * self.world.books.shares[members]
        ranked = [members[k] for k in np.argsort(-caps, kind="stable")[:limit]]
        return [
            IndustryCompany(
                symbol=COMPANIES[k].symbol,
                name=COMPANIES[k].name,
                sector=wanted,
                industry=COMPANIES[k].industry,
                market_cap=float(close[session, k] * self.world.books.shares[k]),
                return_21d=_change(close[:, k], _MONTH_SESSIONS),
                simulated=True,
            )
            for k in ranked
        ]

    def movers(self, as_of: datetime, limit: int = 10) -> MarketMovers:
        """Gainers, losers and most active companies of the last session at or before ``as_of``."""
        _positive(limit, "limit")
        session = self._session(as_of)
        if session < 1:
            raise NoData(f"sim movers need two sessions; {as_of.isoformat()} is the world's first")
        bars = self.world.bars
        close, volume = (
            bars.close[: session + 1, :_COMPANIES],
            bars.volume[: session + 1, :_COMPANIES],
        )
        change = (close[-1] / close[-2] - 1) * 100
        history = volume[-1 - _RELATIVE_VOLUME_SESSIONS : -1]
        relative = (
            volume[-1] / history.mean(axis=0) if session >= _RELATIVE_VOLUME_SESSIONS else None
        )

        def movers(order: np.ndarray, keep: np.ndarray) -> list[Mover]:
            return [
                Mover(
                    symbol=COMPANIES[k].symbol,
                    name=COMPANIES[k].name,
                    last=float(close[-1, k]),
                    change_pct=float(change[k]),
                    volume=float(volume[-1, k]),
                    relative_volume=None if relative is None else float(relative[k]),
                    simulated=True,
                )
                for k in order
                if keep[k]
            ][:limit]

        everyone = np.ones(_COMPANIES, dtype=bool)
        return MarketMovers(
            as_of=_timestamp(as_of).to_pydatetime(),
            gainers=movers(np.argsort(-change, kind="stable"), change > 0),
            losers=movers(np.argsort(change, kind="stable"), change < 0),
            most_active=movers(np.argsort(-volume[-1], kind="stable"), everyone),
            simulated=True,
        )

    def indices(self, as_of: datetime) -> list[IndexLevel]:
        """Each index's level at the last session and its 1- and 21-session change in percent."""
        session = self._session(as_of)
        close = self.world.bars.close[: session + 1]
        levels = []
        for position, (symbol, column) in enumerate(zip(INDEX_ORDER, _INDEX_COLUMNS, strict=True)):
            one, month = _change(close[:, column], 1), _change(close[:, column], _MONTH_SESSIONS)
            levels.append(
                IndexLevel(
                    symbol=symbol,
                    name=INDEX_SYMBOLS[symbol],
                    level=float(close[session, column]),
                    change_1d_pct=None if one is None else one * 100,
                    change_21d_pct=None if month is None else month * 100,
                    simulated=bool(self.world.index_simulated[session, position]),
                )
            )
        return levels

    def macro(self, series: str, as_of: datetime, lookback: int = 24) -> MacroSeries:
        """The last ``lookback`` points of ``series`` released by ``as_of``, oldest first."""
        name = series.upper()
        lookup(SERIES, name, field="series", what="macro series")
        _positive(lookback, "lookback")
        self._session(as_of)
        table = self.world.macro[name]
        rows = table.rows(ALL, _ns(as_of))[-lookback:]
        if not len(rows):
            raise NoData(f"sim has no {name} point released by {as_of.isoformat()}")
        return series_record(name, table, rows)

    # --- helpers ----------------------------------------------------------------------

    def _session(self, as_of: datetime) -> int:
        """The last session at or before ``as_of``; NoData outside the world's range."""
        market = self.world.market
        cutoff = _ns(as_of)
        first, last = market.sessions[0], market.sessions[-1]
        if cutoff < market.ns[0] or cutoff > market.ns[-1] + _duration_ns(STALE_AFTER):
            raise NoData(
                f"as_of {as_of.isoformat()} is outside the simulated market "
                f"({first.date()} to {last.date()}, seed {self.seed}); use an as_of in that range"
            )
        return int(np.searchsorted(market.ns, cutoff, side="right")) - 1

    def _window(self, as_of: datetime, window: timedelta) -> tuple[int, int]:
        """(upto, after) in ns for the window (as_of - window, as_of]."""
        if not isinstance(window, timedelta) or window <= timedelta(0):
            raise InvalidInput(
                "window",
                f"{window!r} is not a positive duration",
                fix="Use e.g. timedelta(days=7).",
            )
        self._session(as_of)
        upto = _ns(as_of)
        return upto, upto - _duration_ns(window)

    def _newest(
        self,
        rows: np.ndarray,
        limit: int | None,
        what: str,
        as_of: datetime,
        window: timedelta,
    ) -> np.ndarray:
        """The newest ``limit`` rows (all if None), newest first; NoData if there are none."""
        if limit is not None:
            _positive(limit, "limit")
        if not len(rows):
            raise NoData(f"sim has no {what} in the {window} before {as_of.isoformat()}")
        return rows[::-1][:limit]

    def _symbol(self, symbol: str) -> str:
        key = symbol.upper() if isinstance(symbol, str) else symbol
        if key not in _COLUMN:
            examples = ", ".join([c.symbol for c in COMPANIES[:3]] + ["XLK", TBILL_ETF, "^GSPC"])
            # "No data", not a wrong input: sim ends every chain, so a real name that no real
            # vendor had anything for reaches it, and their answers must stand.
            raise NoData(
                f"sim has no {symbol!r}: the simulated market's {_COMPANIES} companies are "
                "fictional.",
                fix=f"Its symbols (e.g. {examples}) are listed by the universe read.",
            )
        return key

    def _company(self, symbol: str, kind: DataKind) -> int:
        """The company index of ``symbol``; NoData for the sim's ETFs and indices."""
        column = _COLUMN[self._symbol(symbol)]
        if column >= _COMPANIES:
            raise NoData(f"sim has no {kind.value} for {SYMBOLS[column]}: it is not a company")
        return column

    def _reported(self, company: int, as_of: datetime) -> np.ndarray:
        """Quarters of ``company`` reported by ``as_of``, oldest first; NoData if none."""
        self._session(as_of)
        rows = self.world.reports.rows(("company", company), _ns(as_of))
        if not len(rows):
            raise NoData(f"sim: {SYMBOLS[company]} has reported nothing by {as_of.isoformat()}")
        return self.world.reports.columns["quarter"][rows]

    def _series(self, symbol: str, timeframe: Timeframe) -> Series:
        key = (symbol, timeframe)
        cached = self.world.series.get(key)
        if cached is None:
            daily = self.world.bars.frame(_COLUMN[symbol], self.world.market.sessions)
            cached = self.world.series[key] = Series.of(daily, timeframe)
        return cached


def _timestamp(as_of: datetime) -> pd.Timestamp:
    """``as_of`` in UTC; a naive or missing one is refused rather than guessed."""
    cutoff = parse_as_of(as_of)
    if cutoff is None:
        raise InvalidInput("as_of", "is required", fix="Pass a timezone-aware datetime.")
    return cutoff


def _ns(as_of: datetime) -> int:
    """``as_of`` as int64 ns since the epoch (refusing a naive one)."""
    return int(_timestamp(as_of).as_unit("ns").value)


def _change(prices: np.ndarray, sessions: int) -> float | None:
    """The return over the last ``sessions`` of ``prices``; None if the history is too short."""
    if sessions < 1 or len(prices) <= sessions:
        return None
    return float(prices[-1] / prices[-1 - sessions] - 1)


def _positive(value: int, field: str) -> None:
    if isinstance(value, bool) or not isinstance(value, int) or value < 1:
        raise InvalidInput(field, f"{value!r} is not a positive whole number", fix="Use 1 or more.")


def _duration_ns(duration: timedelta) -> int:
    return duration // timedelta(microseconds=1) * 1000
