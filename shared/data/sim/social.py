"""Social posts about the sim's companies, whose mood follows what posters could know.

A post on a session is written after that session's open (13:30 UTC, 09:30 New
York) and reacts to the open's gap, the five sessions before it, and the news
published before the session began; posters get louder on event days. It
never reacts to the close it has not seen or to news published after it.
"""

from __future__ import annotations

import numpy as np

from shared.data.contracts import SocialPost
from shared.data.sim.factors import Market, at_utc, seconds_between, utc_datetime
from shared.data.sim.names import AUTHORS, handle
from shared.data.sim.prices import Bars
from shared.data.sim.tables import EventTable
from shared.data.sim.universe import COMPANIES, CompanyParams

_POSTS_PER_DAY = (0.3, 1.5)  # range of a company's ordinary daily post rate, by size
_LOUDER_PER_SIGMA = 0.8  # extra posting per daily-vol unit of the opening gap
_LOUDER_PER_NEWS = 2.0  # extra posting per unit of absolute news sentiment
_POSTING_HOURS = (13.5, 23.5)  # UTC: from the New York open to late evening
_NEWS_MEMORY = 3  # sessions of news a post still reacts to
_MOOD_PER_GAP = 0.5  # sentiment per daily-vol unit of the gap
_WEEK = 5  # sessions
_MOOD_PER_WEEK = 0.4  # per weekly-vol unit of the prior week's return
_MOOD_PER_NEWS = 0.8  # per unit of recent news sentiment
_MOOD_NOISE = 0.6
_MOOD_BAND = 0.25  # |sentiment| below this reads as neutral
_LIKES = (1.5, 1.2)  # log-normal mu, sigma of likes


def build_posts(
    rng: np.random.Generator,
    market: Market,
    params: CompanyParams,
    stocks: Bars,
    news_mood: np.ndarray,
) -> EventTable:
    """Every post, by time. ``news_mood`` (sessions x companies) sums the sentiment of
    company news published before each session's bar label."""
    previous = np.vstack([params.price[None, :], stocks.close[:-1]])
    gap = np.log(stocks.open / previous)
    daily = np.log(stocks.close / previous)
    vol = daily.std(axis=0)
    week = np.vstack([np.zeros((1, len(COMPANIES))), np.cumsum(daily, axis=0)])
    prior = week[:-1] - week[np.maximum(np.arange(market.size) - _WEEK, 0)]
    memory = _rolling_sum(news_mood, _NEWS_MEMORY)
    size_rank = np.argsort(np.argsort(params.revenue)) / (len(COMPANIES) - 1)
    base = _POSTS_PER_DAY[0] + size_rank * (_POSTS_PER_DAY[1] - _POSTS_PER_DAY[0])
    rate = base * (1 + _LOUDER_PER_SIGMA * np.abs(gap) / vol + _LOUDER_PER_NEWS * np.abs(memory))
    session, company = np.nonzero(np.ones_like(rate, dtype=bool))
    counts = rng.poisson(rate.ravel())
    session, company = np.repeat(session, counts), np.repeat(company, counts)
    total = len(session)
    mood = (
        _MOOD_PER_GAP * gap[session, company] / vol[company]
        + _MOOD_PER_WEEK * prior[session, company] / (vol[company] * np.sqrt(_WEEK))
        + _MOOD_PER_NEWS * memory[session, company]
        + rng.normal(0, _MOOD_NOISE, total)
    )
    sentiment = np.tanh(mood)
    columns = {
        "time": at_utc(market.days[session], 0) + seconds_between(rng, _POSTING_HOURS, total),
        "company": company,
        "author": rng.integers(0, AUTHORS, total),
        "template": rng.integers(0, 1 << 16, total),
        "sentiment": sentiment,
        "gap": gap[session, company],
        "likes": np.floor(np.exp(rng.normal(*_LIKES, total)) * (1 + 2 * np.abs(sentiment))),
    }
    return EventTable.build(columns, time="time", keys={"company": "company"})


def _rolling_sum(values: np.ndarray, window: int) -> np.ndarray:
    """Sum over the last ``window`` rows, this one included."""
    total = np.cumsum(values, axis=0)
    shifted = np.vstack([np.zeros((window, values.shape[1])), total[:-window]])
    return total - shifted


_BULLISH = (
    "${symbol} opened {gap:+.1%} and I'm still adding. This one has legs.",
    "Loaded more ${symbol} this morning. Long and strong.",
    "${symbol} looking great here, breakout incoming",
    "Everyone sleeping on ${symbol}. Not for long.",
)
_BEARISH = (
    "${symbol} {gap:+.1%} at the open. Not buying this story.",
    "Trimmed my ${symbol}. Something feels off.",
    "${symbol} chart is ugly. Staying away.",
    "Shorting ${symbol} into any bounce.",
)
_NEUTRAL = (
    "Watching ${symbol} today, no position yet.",
    "Anyone have a view on ${symbol} into the next report?",
    "${symbol} going sideways. Waiting for a signal.",
    "Holding my ${symbol}, nothing to do here.",
)


def post_record(table: EventTable, row: int, seed: int) -> SocialPost:
    """One row of the posts table as a record."""
    c = table.columns
    sentiment = float(c["sentiment"][row])
    pool = _BULLISH if sentiment > _MOOD_BAND else _BEARISH if sentiment < -_MOOD_BAND else _NEUTRAL
    symbol = COMPANIES[int(c["company"][row])].symbol
    text = pool[int(c["template"][row]) % len(pool)].format(symbol=symbol, gap=float(c["gap"][row]))
    return SocialPost(
        id=f"sim{seed}-post-{row}",
        posted_at=utc_datetime(c["time"][row]),
        author=handle(int(c["author"][row])),
        text=text,
        symbol=symbol,
        likes=int(c["likes"][row]),
        sentiment=round(sentiment, 3),
        simulated=True,
    )
