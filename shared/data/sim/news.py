"""News: company, earnings and world headlines, each published before what it causes.

Earnings reports come out after the close and the move follows at the next
open; a recap of the move is published after the reaction session's close.
Shocks (``events``) break the evening before the gap they cause. World news:
market recaps on the real S&P 500's big days (after its close), rate
decisions, CPI and jobs releases at their release time, geopolitics, and
energy-market news that moves the Energy sector at the next open.

The table stores numbers; ``headlines`` renders them when read, so generating
ten years of news costs a few arrays.
"""

from __future__ import annotations

from collections.abc import Hashable
from dataclasses import dataclass

import numpy as np

from shared.data.contracts import SECTOR_ETFS, Sector
from shared.data.sim.events import Shocks
from shared.data.sim.factors import Market, at_utc, seconds_between
from shared.data.sim.headlines import ALL_TOPICS, GEOPOLITICS_TONES, ROUTINE_HEADLINES, TOPICS, Kind
from shared.data.sim.prices import Bars
from shared.data.sim.statements import Books
from shared.data.sim.tables import EventTable
from shared.data.sim.universe import COMPANIES, SYMBOLS

_PREVIEW_SESSIONS = 5  # previews run this many sessions before the report
_RECAP_TIME = (21, 30)  # after the reaction session's close, UTC
_MARKET_RECAP_TIME = (21, 15)
_BIG_MARKET_MOVE = 0.02  # a real S&P 500 day beyond +/-2% gets a recap
_FOMC_TIME = (19, 0)  # 14:00 New York (EST)
_RATE_STEP = 0.15  # percent: a smaller change in the funds rate reads as "holds"
_ROUTINE_PER_YEAR = 18.0  # ordinary headlines per company
_GEOPOLITICS_PER_YEAR = 50.0
_PREVIEW_TIME = (12, 0)
_DAYTIME_HOURS = (11, 23)  # routine and world news land between these UTC hours
# Sentiment (tone) of each kind, in [-1, 1]:
_TONE_PER_SURPRISE = 4.0  # a 25% earnings beat reads fully positive
_TONE_PER_MOVE = 10.0  # a 10% move of a stock reads fully positive or negative
_TONE_PER_MARKET_MOVE = 20.0  # a 5% day of the S&P 500 does
_SHOCK_TONE = 0.4  # a shock reads at least this strong, plus half a move's tone: always > 0.5...
_ROUTINE_TONE, _ROUTINE_TONE_MAX = (0.1, 0.2), 0.5  # ...while routine news never does
_HIKE_TONE, _CUT_TONE = -0.3, 0.2  # rate rises read badly for stocks, cuts well
_INFLATION_TARGET = 2.0  # percent a year; core inflation above it reads badly...
_TONE_PER_INFLATION_POINT = 0.3  # ...by this much a point
_TONE_PER_JOBLESS_POINT = 2.0  # a 0.5-point rise in unemployment reads fully negative
_TONE_NOISE = 0.1  # spread of a world headline's tone around its template's
_ENERGY_TONE = 0.6  # oil news, for the Energy sector it moves
_ENERGY_ETF = SYMBOLS.index(SECTOR_ETFS[Sector.ENERGY])  # energy news is about its sector


@dataclass(frozen=True)
class NewsInputs:
    """What the news is about: everything drawn before it."""

    market: Market
    books: Books
    shocks: Shocks
    energy: Shocks
    stocks: Bars
    funds: EventTable
    cpi: EventTable
    unemployment: EventTable
    fomc: np.ndarray  # decision days, datetime64[D]


def build_news(rng: np.random.Generator, inputs: NewsInputs) -> EventTable:
    """Every news row of the world from its start, by publication time, grouped by symbol
    and topic."""
    parts = [
        *_earnings(inputs),
        _shocks(inputs.shocks),
        _routine(rng, inputs.market),
        _markets(inputs.market),
        _rate_decisions(inputs),
        _releases(Kind.INFLATION, inputs.cpi, yearly=True),
        _releases(Kind.JOBS, inputs.unemployment, yearly=False),
        _geopolitics(rng, inputs.market),
        _energy(inputs.energy),
    ]
    columns = {name: np.concatenate([p[name] for p in parts]) for name in _COLUMNS}
    keep = columns["time"] >= inputs.market.ns[0]
    table = EventTable.build(
        {name: values[keep] for name, values in columns.items()},
        time="time",
        keys={"symbol": "symbol"},
    )
    kinds = table.columns["kind"]
    by_topic: dict[Hashable, np.ndarray] = {
        ("topic", topic): np.flatnonzero(np.isin(kinds, [k for k in Kind if topic in TOPICS[k]]))
        for topic in ALL_TOPICS
    }
    return table.with_groups(by_topic)


_COLUMNS = ("time", "symbol", "kind", "template", "sentiment", "a", "b", "quarter", "period")


def _part(kind: Kind, time: np.ndarray, **values: object) -> dict[str, np.ndarray]:
    """Columns of one kind's rows; what a kind does not use is -1 / NaN / NaT."""
    size = len(time)
    defaults: dict[str, object] = {"symbol": -1, "template": 0, "sentiment": 0.0}
    defaults |= {"a": np.nan, "b": np.nan, "quarter": -1, "period": np.datetime64("NaT", "D")}
    columns = {"time": np.asarray(time, dtype=np.int64), "kind": np.full(size, int(kind))}
    for name, default in defaults.items():
        value = values.get(name, default)
        columns[name] = np.broadcast_to(np.asarray(value), size).copy()
    return columns


def _earnings(inputs: NewsInputs) -> list[dict[str, np.ndarray]]:
    books, market, close = inputs.books, inputs.market, inputs.stocks.close
    company, quarter = np.nonzero(books.report_session >= 0)
    report = books.report_session[company, quarter]
    ahead = report >= _PREVIEW_SESSIONS
    surprise = books.surprise[company, quarter]
    preview = _part(
        Kind.PREVIEW,
        at_utc(market.days[report[ahead] - _PREVIEW_SESSIONS], *_PREVIEW_TIME),
        symbol=company[ahead],
        quarter=quarter[ahead],
    )
    reported = _part(
        Kind.EARNINGS,
        books.reported_ns[company, quarter],
        symbol=company,
        quarter=quarter,
        sentiment=_tone(surprise, _TONE_PER_SURPRISE),
    )
    moved = books.reaction[company, quarter] >= 0
    session = books.reaction[company, quarter][moved]
    change = close[session, company[moved]] / close[session - 1, company[moved]] - 1
    recap = _part(
        Kind.RECAP,
        at_utc(market.days[session], *_RECAP_TIME),
        symbol=company[moved],
        quarter=quarter[moved],
        a=change,
        sentiment=_tone(change, _TONE_PER_MOVE),
    )
    return [preview, reported, recap]


def _shocks(shocks: Shocks) -> dict[str, np.ndarray]:
    return _part(
        Kind.SHOCK,
        shocks.published_ns,
        symbol=shocks.target,
        template=shocks.template,
        sentiment=np.sign(shocks.jump)
        * np.minimum(_SHOCK_TONE + _TONE_PER_MOVE / 2 * np.abs(shocks.jump), 1.0),
        a=shocks.jump,
    )


def _tone(value: np.ndarray, per_unit: float) -> np.ndarray:
    return np.clip(per_unit * value, -1.0, 1.0)


def _daytime(rng: np.random.Generator, market: Market, count: int) -> np.ndarray:
    """Random instants in the world's sessions, in the news hours."""
    days = market.days[rng.integers(0, market.size, count)]
    return at_utc(days, 0) + seconds_between(rng, _DAYTIME_HOURS, count)


def _routine(rng: np.random.Generator, market: Market) -> dict[str, np.ndarray]:
    n = len(COMPANIES)
    company = np.repeat(np.arange(n), rng.poisson(_ROUTINE_PER_YEAR * market.years, n))
    count = len(company)
    return _part(
        Kind.ROUTINE,
        _daytime(rng, market, count),
        symbol=company,
        template=rng.integers(0, ROUTINE_HEADLINES, count),
        sentiment=np.clip(rng.normal(*_ROUTINE_TONE, count), -_ROUTINE_TONE_MAX, _ROUTINE_TONE_MAX),
    )


def _markets(market: Market) -> dict[str, np.ndarray]:
    change = np.expm1(market.log_return)
    big = np.abs(change) >= _BIG_MARKET_MOVE
    return _part(
        Kind.MARKETS,
        at_utc(market.days[big], *_MARKET_RECAP_TIME),
        a=change[big],
        b=market.spx["close"].to_numpy()[big],
        sentiment=_tone(change[big], _TONE_PER_MARKET_MOVE),
    )


def _rate_decisions(inputs: NewsInputs) -> dict[str, np.ndarray]:
    """Each decision announces the funds rate of its month (the target it sets, which the
    monthly average published next month then shows) and the change since the last one."""
    funds = inputs.funds.columns
    month = inputs.fomc.astype("datetime64[M]").astype("datetime64[D]")
    found = np.searchsorted(funds["observed"], month, side="right") - 1
    level = funds["value"][np.maximum(found, 0)]
    change = np.diff(level, prepend=level[:1])
    step = np.where(change >= _RATE_STEP, 1, np.where(change <= -_RATE_STEP, -1, 0))
    return _part(
        Kind.CENTRAL_BANK,
        at_utc(inputs.fomc, *_FOMC_TIME),
        template=step + 1,
        a=level,
        b=change,
        sentiment=np.select([step > 0, step < 0], [_HIKE_TONE, _CUT_TONE], 0.0),
    )


def _releases(kind: Kind, table: EventTable, *, yearly: bool) -> dict[str, np.ndarray]:
    """A headline per release: CPI's year-on-year and monthly change, or the rate and its change."""
    value = table.columns["value"]
    if yearly:
        a = np.full(len(value), np.nan)
        a[12:] = (value[12:] / value[:-12] - 1) * 100
        b = np.concatenate([[np.nan], (value[1:] / value[:-1] - 1) * 100])
        sentiment = _tone(a - _INFLATION_TARGET, -_TONE_PER_INFLATION_POINT)
    else:
        a = value
        b = np.concatenate([[0.0], np.diff(value)])
        sentiment = _tone(b, -_TONE_PER_JOBLESS_POINT)
    known = ~np.isnan(a) & ~np.isnan(b)
    return _part(
        kind,
        table.times[known],
        a=a[known],
        b=b[known],
        period=table.columns["observed"][known],
        sentiment=np.nan_to_num(sentiment[known]),
    )


def _geopolitics(rng: np.random.Generator, market: Market) -> dict[str, np.ndarray]:
    count = rng.poisson(_GEOPOLITICS_PER_YEAR * market.years)
    template = rng.integers(0, len(GEOPOLITICS_TONES), count)
    tone = np.array(GEOPOLITICS_TONES)
    return _part(
        Kind.GEOPOLITICS,
        _daytime(rng, market, count),
        template=template,
        sentiment=_tone(tone[template] + rng.normal(0, _TONE_NOISE, count), 1.0),
    )


def _energy(energy: Shocks) -> dict[str, np.ndarray]:
    return _part(
        Kind.ENERGY,
        energy.published_ns,
        symbol=_ENERGY_ETF,
        template=energy.template,
        a=energy.jump,
        sentiment=np.sign(energy.jump) * _ENERGY_TONE,
    )
