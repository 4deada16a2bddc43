"""One seed's whole simulated market: generated once per process, then only read.

Generation runs in causal order: company parameters, books and earnings
surprises, news shocks, then prices (which those events move), then what
depends on prices (insider trade prices, earnings recaps, social mood).
``world`` caches the result per (seed, start, end); ``generate`` always builds.
"""

from __future__ import annotations

import functools
from dataclasses import dataclass, field
from datetime import date

import numpy as np

from shared.data.contracts import Sector
from shared.data.sim.events import company_moves, draw_shocks, reaction_sessions
from shared.data.sim.factors import Market, real_market, sector_factors, stream
from shared.data.sim.insiders import build_insiders
from shared.data.sim.macro import build_macro, fomc_days
from shared.data.sim.names import rosters
from shared.data.sim.news import NewsInputs, build_news
from shared.data.sim.prices import Bars, etf_bars, index_bars, stock_bars, tbill_bars
from shared.data.sim.series import Series
from shared.data.sim.social import build_posts
from shared.data.sim.statements import Books, build_books
from shared.data.sim.tables import EventTable
from shared.data.sim.universe import COMPANIES, PROFILES, SECTORS, CompanyParams, draw_params
from shared.market.bars import Timeframe

DEFAULT_START = date(2009, 1, 2)
DEFAULT_END = date(2018, 12, 31)
"""Ten years, the last decade of the vendored S&P 500 file."""

_WORLDS_CACHED = 4  # a test suite uses a few seeds; a ten-year world holds ~35 MB

_SHOCKS_PER_YEAR = 4.0  # company news shocks per company
_SHOCK_SIZE = 0.04  # their typical overnight log move
_ENERGY_SHOCKS_PER_YEAR = 12.0  # oil-market news that moves the whole Energy sector
_ENERGY_SHOCK_SIZE = 0.012
_ENERGY = SECTORS.index(Sector.ENERGY)


@dataclass(frozen=True)
class World:
    """Everything the sim serves, indexed for as-of reads."""

    seed: int
    market: Market
    params: CompanyParams
    books: Books
    bars: Bars  # sessions x ``universe.SYMBOLS``
    index_simulated: np.ndarray  # sessions x indices: True where the level is modelled
    news: EventTable
    posts: EventTable
    insiders: EventTable
    reports: EventTable  # one row per (company, quarter) report, by reported_at
    macro: dict[str, EventTable]
    rosters: list[tuple[str, ...]]
    series: dict[tuple[str, Timeframe], Series] = field(default_factory=dict)
    """Bar frames built on first read, per (symbol, timeframe)."""


@functools.lru_cache(maxsize=_WORLDS_CACHED)
def world(seed: int, start: date = DEFAULT_START, end: date = DEFAULT_END) -> World:
    """The world of ``seed`` over ``start``..``end``, generated on first use in the process."""
    return generate(seed, start, end)


def generate(seed: int, start: date, end: date) -> World:
    """Build the world of ``seed``: the same arguments always give the same world."""
    market = real_market(start, end)
    params = draw_params(stream(seed, "companies"))
    books = build_books(stream(seed, "books"), params, market)
    shocks = draw_shocks(
        stream(seed, "shocks"),
        market,
        targets=len(COMPANIES),
        per_year=_SHOCKS_PER_YEAR,
        size=_SHOCK_SIZE,
        blocked=reaction_sessions(books, market.size),
    )
    energy = draw_shocks(
        stream(seed, "energy"),
        market,
        targets=1,
        per_year=_ENERGY_SHOCKS_PER_YEAR,
        size=_ENERGY_SHOCK_SIZE,
    )
    jumps, boost = company_moves(books, shocks, market.size)
    jumps[np.ix_(energy.session, params.sector == _ENERGY)] += energy.jump[:, None]
    factor_vols = np.array([PROFILES[sector].factor_vol for sector in SECTORS])
    factors = sector_factors(stream(seed, "sectors"), market.size, factor_vols)
    stocks = stock_bars(
        stream(seed, "stocks"), market, factors, params, books.shares, jumps, boost
    ).rounded()
    indices, index_simulated = index_bars(stream(seed, "indices"), market)
    bars = Bars.stack(
        [
            stocks,
            etf_bars(stream(seed, "etfs"), stocks, books.shares, params).rounded(),
            tbill_bars(stream(seed, "tbill"), market).rounded(),
            indices,
        ]
    )
    macro = build_macro(stream(seed, "macro"), market)
    news = build_news(
        stream(seed, "news"),
        NewsInputs(
            market=market,
            books=books,
            shocks=shocks,
            energy=energy,
            stocks=stocks,
            funds=macro["FEDFUNDS"],
            cpi=macro["CPI"],
            unemployment=macro["UNRATE"],
            fomc=fomc_days(market),
        ),
    )
    return World(
        seed=seed,
        market=market,
        params=params,
        books=books,
        bars=bars,
        index_simulated=index_simulated,
        news=news,
        posts=build_posts(stream(seed, "posts"), market, params, stocks, _news_mood(news, market)),
        insiders=build_insiders(stream(seed, "insiders"), market, books, stocks),
        reports=_reports(books),
        macro=macro,
        rosters=rosters(stream(seed, "rosters"), len(COMPANIES)),
    )


def _news_mood(news: EventTable, market: Market) -> np.ndarray:
    """(sessions x companies) summed sentiment of company news published before each session
    began (before its bar label), the news a poster on that session has seen."""
    symbol = news.columns["symbol"]
    session = np.searchsorted(market.ns, news.times, side="right")
    about = (symbol >= 0) & (symbol < len(COMPANIES)) & (session < market.size)
    mood = np.zeros((market.size, len(COMPANIES)))
    np.add.at(mood, (session[about], symbol[about]), news.columns["sentiment"][about])
    return mood


def _reports(books: Books) -> EventTable:
    company, quarter = np.nonzero(books.in_world)
    columns = {
        "company": company,
        "quarter": quarter,
        "reported": books.reported_ns[company, quarter],
    }
    return EventTable.build(columns, time="reported", keys={"company": "company"})
