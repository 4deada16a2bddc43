"""The holdings reviewer: its spec, and its offline verdict per holding.

Offline: Pipeline SELL → exit; 15% under cost without a Buy → exit; above the position
limit → trim; Buy with room to its target → add; +30% on a Hold → trim; else keep.
Every figure in an answer is one of the inputs, quoted.
"""

from __future__ import annotations

from shared.agents.pipeline.schemas import TradeSignal
from shared.agents.portfolio.inputs import (
    HoldingView,
    ReviewInputs,
)
from shared.agents.portfolio.prompts import (
    render_review,
    review_prompt,
)
from shared.agents.portfolio.roles import (
    HOLDINGS_REVIEWER,
    PORTFOLIO_GROUP,
)
from shared.agents.portfolio.schemas import (
    HoldingAction,
    HoldingsReview,
    HoldingVerdict,
)
from shared.agents.spec import AgentSpec, from_inputs
from shared.llm.providers import LlmRole

STOP_OUT = -0.15
"""A holding this far under its cost, without a Buy behind it, is cut."""
TAKE_PROFIT = 0.30
"""A Hold this far above its cost is trimmed to bank part of the gain."""


def _verdict(view: HoldingView, limit: float, cash_equivalent: str) -> HoldingVerdict:
    p, d = view.position, view.decision
    pnl = f"{p.pnl_pct:+.1%} against cost {p.avg_cost:.2f}"

    def say(action: HoldingAction, reason: str) -> HoldingVerdict:
        return HoldingVerdict(ticker=p.symbol, action=action, reason=reason)

    if p.symbol == cash_equivalent:
        return say(HoldingAction.KEEP, f"cash equivalent at {p.weight:.1%}: the sweep manages it")
    if not p.priced:
        return say(HoldingAction.KEEP, f"no close to judge it by ({p.price_note})")
    rated = f"the Pipeline rates it {d.rating.value}" if d else "no fresh Pipeline decision"
    if d is not None and d.signal is TradeSignal.SELL:
        return say(HoldingAction.EXIT, f"{rated}; {pnl}")
    if p.pnl_pct <= STOP_OUT and (d is None or d.signal is not TradeSignal.BUY):
        return say(HoldingAction.EXIT, f"{pnl}, past the {STOP_OUT:.0%} stop, and {rated}")
    if p.weight > limit:
        return say(HoldingAction.TRIM, f"{p.weight:.1%} of the book, above the {limit:.0%} limit")
    if d is not None and d.signal is TradeSignal.BUY and p.weight < limit / 2:
        target = d.price_target
        if target and target > float(p.price):
            upside = target / float(p.price) - 1
            return say(
                HoldingAction.ADD,
                f"{rated} with target {target:.2f}, {upside:+.1%} above the close {p.price:.2f}; "
                f"only {p.weight:.1%} of the book",
            )
    if p.pnl_pct >= TAKE_PROFIT and d is not None and d.signal is TradeSignal.HOLD:
        return say(HoldingAction.TRIM, f"{pnl} on a Hold: bank part of the gain")
    return say(HoldingAction.KEEP, f"{rated}; {pnl}; {p.weight:.1%} of the book")


def review_holdings(inputs: ReviewInputs) -> HoldingsReview:
    """A verdict per holding from its P&L, weight and Pipeline decision."""
    limit = inputs.book.limits.max_position_weight
    verdicts = [_verdict(v, limit, inputs.book.cash_equivalent) for v in inputs.holdings]
    counts = {a: sum(v.action is a for v in verdicts) for a in HoldingAction}
    if not verdicts:
        summary = "The book holds no positions: nothing to review."
    else:
        parts = [f"{n} {a.value}" for a, n in counts.items() if n]
        summary = f"{len(verdicts)} holdings reviewed: {', '.join(parts)}."
    return HoldingsReview(verdicts=verdicts, summary=summary)


SPEC: AgentSpec[ReviewInputs, HoldingsReview] = AgentSpec(
    name=HOLDINGS_REVIEWER,
    group=PORTFOLIO_GROUP,
    llm_role=LlmRole.QUICK,
    inputs=ReviewInputs,
    output=HoldingsReview,
    title="the holdings reviewer",
    brief="Review every holding: keep, add, trim or exit, each with the figure it rests on (its "
    "P&L against cost, its weight against the position limit, its Pipeline rating and "
    "price target). Leave {cash_equivalent} to the cash sweep (keep). "
    "Finish with a one-paragraph summary.",
    prompt=review_prompt,
    offline=from_inputs(review_holdings),
    as_text=render_review,
)
