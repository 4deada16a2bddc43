"""Price-moving events, drawn before prices: news shocks, and where every event lands.

A shock is published the evening before the session it moves (between the
close and midnight UTC, so before that session's bar label), and the move is
an overnight gap at that session's open: a reader as of the news sees the news
and not yet the move. Earnings reactions (from ``statements``) land the same
way, on the session after the after-close report.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from shared.data.sim.factors import Market, at_utc
from shared.data.sim.statements import Books

_PUBLISH_HOUR, _PUBLISH_MINUTE = 21, 30  # after the New York close, in UTC
_PUBLISH_SPREAD_MINUTES = 120  # shocks break any time in the two hours after that
_SMALLEST_SHOCK = 0.6  # a shock moves at least this share of its typical size (mean: all of it)

_EARNINGS_VOLUME = 2.5  # volume multiple on an earnings reaction session
_EARNINGS_VOLUME_PER_SURPRISE = 15.0  # and more per unit of relative surprise
_SHOCK_VOLUME = 2.0  # volume multiple on a news-shock session
_SHOCK_VOLUME_PER_MOVE = 30.0  # and more per unit of log move
_MAX_VOLUME_BOOST = 10.0


@dataclass(frozen=True)
class Shocks:
    """News that gaps a price at the next open, one row per shock."""

    target: np.ndarray  # company (or sector) index it moves
    session: np.ndarray  # the session whose open it moves
    jump: np.ndarray  # overnight log move
    published_ns: np.ndarray  # when the news broke: the evening before ``session``
    template: np.ndarray  # which headline of its kind and sign


def draw_shocks(
    rng: np.random.Generator,
    market: Market,
    *,
    targets: int,
    per_year: float,
    size: float,
    blocked: np.ndarray | None = None,
) -> Shocks:
    """Shocks at ``per_year`` per target, of typical log size ``size``, up or down alike.

    ``blocked`` (sessions x targets) marks sessions already taken by another
    event, so each move has one cause a reader can find.
    """
    counts = rng.poisson(per_year * market.years, targets)
    target = np.repeat(np.arange(targets), counts)
    session = rng.integers(1, market.size, len(target))
    keep = np.ones(len(target), dtype=bool)
    if blocked is not None:
        keep &= ~blocked[session, target]
    _, first = np.unique(target * market.size + session, return_index=True)
    keep &= np.isin(np.arange(len(target)), first)
    target, session = target[keep], session[keep]
    magnitude = size * (_SMALLEST_SHOCK + rng.exponential(1 - _SMALLEST_SHOCK, len(target)))
    jump = np.where(rng.random(len(target)) < 0.5, magnitude, -magnitude)
    minutes = rng.integers(0, _PUBLISH_SPREAD_MINUTES, len(target)) * 60 * 10**9
    published = at_utc(market.days[session - 1], _PUBLISH_HOUR, _PUBLISH_MINUTE) + minutes
    template = rng.integers(0, 1 << 16, len(target))
    return Shocks(target, session, jump, published, template)


def reaction_sessions(books: Books, sessions: int) -> np.ndarray:
    """(sessions x companies) True where an earnings report is priced."""
    taken = np.zeros((sessions, books.reaction.shape[0]), dtype=bool)
    company, quarter = np.nonzero(books.reaction >= 0)
    taken[books.reaction[company, quarter], company] = True
    return taken


def company_moves(books: Books, shocks: Shocks, sessions: int) -> tuple[np.ndarray, np.ndarray]:
    """Overnight log jumps and volume multiples (sessions x companies) from all events."""
    n = books.reaction.shape[0]
    jumps = np.zeros((sessions, n))
    boost = np.ones((sessions, n))
    company, quarter = np.nonzero(books.reaction >= 0)
    session = books.reaction[company, quarter]
    jumps[session, company] += books.reaction_jump[company, quarter]
    surprise = np.abs(books.surprise[company, quarter])
    boost[session, company] = _EARNINGS_VOLUME + _EARNINGS_VOLUME_PER_SURPRISE * surprise
    jumps[shocks.session, shocks.target] += shocks.jump
    boost[shocks.session, shocks.target] = _SHOCK_VOLUME + _SHOCK_VOLUME_PER_MOVE * np.abs(
        shocks.jump
    )
    return jumps, np.minimum(boost, _MAX_VOLUME_BOOST)
