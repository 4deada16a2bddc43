"""What became of every candidate: bought in the plan, or left out with the reason.

The PM reads only the top of the ranking in full (``view``), so the report cannot
leave the rest to silence: each candidate gets one line saying where it ranked and
why it is not in the plan, in the order the reasons apply: scored out, below the
cut, refused by the limits or the cash, no Pipeline decision or not a buy, no close
to buy at, already held, or passed over by the PM.
"""

from __future__ import annotations

from collections.abc import Mapping
from enum import StrEnum

from pydantic import BaseModel, Field

from shared.agents.pipeline.schemas import Rating
from shared.agents.portfolio.book_manager import BUY_RATINGS
from shared.agents.portfolio.inputs import TickerDecision
from shared.agents.portfolio.schemas import AllocationDecision
from shared.agents.portfolio.view import ViewSize
from shared.portfolio.market import Quote, QuoteMissing
from shared.portfolio.models import Side
from shared.portfolio.orders import OrderPlan
from shared.portfolio.prioritize import Prioritized, ScoredCandidate


class Fate(StrEnum):
    """Whether a candidate made the plan."""

    PLANNED = "planned"
    LEFT_OUT = "left out"


class CandidateFate(BaseModel):
    """One candidate's rank and what became of it, in words."""

    ticker: str
    rank: int | None = Field(description="1 = best; None: scored out")
    score: float
    rating: Rating | None = Field(description="its Pipeline rating; None: no decision")
    fate: Fate
    reason: str = Field(min_length=1)


def _ordinal(n: int) -> str:
    suffix = "th" if 10 <= n % 100 <= 20 else {1: "st", 2: "nd", 3: "rd"}.get(n % 10, "th")
    return f"{n}{suffix}"


def _left_out(
    rank: int,
    total: int,
    candidate: ScoredCandidate,
    decision: TickerDecision | None,
    quote: Quote | QuoteMissing | None,
    size: ViewSize,
    refused: Mapping[str, str],
    wanted: set[str],
) -> str:
    """Why a ranked candidate is not in the plan."""
    placed = f"ranked {_ordinal(rank)} of {total}"
    if rank > size.detail:
        shown = "in one line" if rank <= size.detail + size.bench else "counted only"
        return f"{placed}; below the top-{size.detail} cut the PM reads in full ({shown})"
    if candidate.ticker in refused:
        return f"{placed}; the PM's buy was refused: {refused[candidate.ticker]}"
    if candidate.ticker in wanted:
        return f"{placed}; the PM's buy was sized to nothing by the limits"
    if decision is None:
        return f"{placed}; no Pipeline decision"
    if decision.rating not in BUY_RATINGS:
        return f"{placed}; rated {decision.rating.value} by its Pipeline, not a buy"
    if not isinstance(quote, Quote):
        why = quote.reason if quote else "not quoted"
        return f"{placed}; no close to buy at ({why})"
    if candidate.held:
        return f"{placed}; already held: the holdings review decides on adding"
    return f"{placed}; passed over by the PM (see the thesis)"


def candidate_fates(
    candidates: Prioritized,
    decisions: Mapping[str, TickerDecision],
    quotes: Mapping[str, Quote | QuoteMissing],
    size: ViewSize,
    decision: AllocationDecision,
    plan: OrderPlan,
) -> list[CandidateFate]:
    """Every candidate, best first, then those scored out: planned, or left out and why."""
    bought = {o.symbol: o for o in plan.orders if o.side is Side.BUY}
    refused = {r.symbol: r.reason for r in plan.rejected if r.side is Side.BUY}
    wanted = {b.ticker for b in decision.buys}
    total = len(candidates.ranked)
    fates = []
    for rank, c in enumerate(candidates.ranked, start=1):
        d = decisions.get(c.ticker)
        if c.ticker in bought:
            order = bought[c.ticker]
            fate, reason = Fate.PLANNED, f"ranked {_ordinal(rank)} of {total}; buy {order.shares:,}"
        else:
            fate = Fate.LEFT_OUT
            reason = _left_out(rank, total, c, d, quotes.get(c.ticker), size, refused, wanted)
        fates.append(
            CandidateFate(
                ticker=c.ticker,
                rank=rank,
                score=c.score,
                rating=d.rating if d else None,
                fate=fate,
                reason=reason,
            )
        )
    fates += [
        CandidateFate(
            ticker=c.ticker,
            rank=None,
            score=c.score,
            rating=decisions[c.ticker].rating if c.ticker in decisions else None,
            fate=Fate.LEFT_OUT,
            reason="scored 0: " + "; ".join(c.reasons),
        )
        for c in candidates.dropped
    ]
    return fates
