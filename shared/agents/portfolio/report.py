"""What a Portfolio run produced, and the run as a Markdown report (stored in S3).

The report reads in the graph's order: the book before, its risk, the
candidates and why they rank so, every candidate's fate (planned, or left out and
why: the PM reads only the top of a long ranking in full), the review and the two summaries, the PM's
decision, the plan with every adjustment the limits forced and every refusal
with its reason, the approval, the fills and the book after.
"""

from __future__ import annotations

from pydantic import AwareDatetime, BaseModel, Field

from shared.agents.portfolio.fates import CandidateFate, Fate
from shared.agents.portfolio.prompts import (
    render_macro,
    render_micro,
    render_review,
    render_risk,
)
from shared.agents.portfolio.schemas import (
    AllocationDecision,
    HoldingsReview,
    MacroSummary,
    MicroSummary,
)
from shared.llm.contracts import UsageReport
from shared.portfolio.models import DecisionStatus, Snapshot
from shared.portfolio.orders import ExecutedOrder, OrderPlan, RejectedOrder
from shared.portfolio.prioritize import Prioritized
from shared.portfolio.risk import RiskReport
from shared.portfolio.valuation import Valuation

STATUS_WORDS: dict[DecisionStatus, str] = {
    DecisionStatus.APPROVED_AUTO: "approved automatically (approval: auto)",
    DecisionStatus.APPROVED: "approved",
    DecisionStatus.REJECTED: "rejected: nothing was traded",
    DecisionStatus.EXPIRED: "not approved in time: nothing was traded",
}


class PortfolioOutcome(BaseModel):
    """Everything a Portfolio run decided and did."""

    workflow_id: str
    portfolio: str
    as_of: AwareDatetime
    status: DecisionStatus
    approval_note: str | None = Field(None, description="who approved or rejected, and why")
    book: Valuation = Field(description="the book before the trades, at the as-of closes")
    risk: RiskReport
    candidates: Prioritized
    fates: list[CandidateFate] = Field(
        default_factory=list, description="every candidate: planned, or left out and why"
    )
    review: HoldingsReview
    macro: MacroSummary
    micro: MicroSummary
    decision: AllocationDecision
    plan: OrderPlan
    executed: list[ExecutedOrder]
    rejected: list[RejectedOrder] = Field(description="refused by the limits or at execution")
    snapshot: Snapshot = Field(description="the book after the trades")
    usage: UsageReport


def _book(valuation: Valuation) -> str:
    rows = [
        f"| {p.symbol} | {p.shares:,} | {p.price:,.2f}{'' if p.priced else '*'} | "
        f"{p.value:,.2f} | {p.weight:.1%} | {p.unrealized_pnl:+,.2f} | "
        f"{p.sector.value if p.sector else '-'} |"
        for p in valuation.positions
    ]
    table = "\n".join(
        [
            "| ticker | shares | close | value | weight | P&L | sector |",
            "|---|---|---|---|---|---|---|",
        ]
        + rows
    )
    totals = (
        f"Cash {valuation.cash:,.2f} ({valuation.cash_weight:.1%}), total "
        f"{valuation.total_value:,.2f} {valuation.currency}, return {valuation.total_return:+.2%}."
    )
    return f"{table}\n\n{totals}" if rows else totals


def _plan(plan: OrderPlan) -> str:
    lines = []
    for o in plan.orders:
        line = (
            f"{o.index}. {o.side.value} {o.shares:,} {o.symbol} at ~{o.fill_price:,.4f} "
            f"({o.origin.value}; est. {o.est_cash_change:+,.2f} cash): {o.rationale}"
        )
        lines.append(line + "".join(f"\n   - adjusted: {a}" for a in o.adjustments))
    lines += [f"- note: {n}" for n in plan.notes]
    p = plan.projected
    lines.append(
        f"Projected: cash {p.cash:,.2f} ({p.cash_weight:.1%}), {p.positions} positions, total "
        f"{p.total_value:,.2f}."
    )
    return "\n".join(lines)


def _fates(fates: list[CandidateFate]) -> str:
    """One line per candidate; the left-out ones counted first, so a long list reads at a glance."""
    if not fates:
        return "none"
    left = sum(f.fate is Fate.LEFT_OUT for f in fates)
    rows = [
        f"| {f.rank or '-'} | {f.ticker} | {f.score:g} | "
        f"{f.rating.value if f.rating else 'none'} | {f.fate.value} | {f.reason} |"
        for f in fates
    ]
    header = "| rank | ticker | score | Pipeline | fate | why |\n|---|---|---|---|---|---|"
    return f"{len(fates) - left} planned, {left} left out.\n\n" + "\n".join([header, *rows])


def render_portfolio_report(outcome: PortfolioOutcome) -> str:
    """The whole run as Markdown."""
    d = outcome.decision
    candidates = "\n".join(
        f"- {c.ticker} ({c.sector.value if c.sector else 'no sector'}): score {c.score:g} = "
        + " × ".join(f"{k} {v:g}" for k, v in c.factors.items())
        + f". {'; '.join(c.reasons)}"
        for c in [*outcome.candidates.ranked, *outcome.candidates.dropped]
    )
    rejected = "\n".join(
        f"- {r.side.value} {r.shares:,} {r.symbol}: {r.reason}" for r in outcome.rejected
    )
    fills = "\n".join(
        f"- {e.trade.side.value} {e.trade.shares:,} {e.trade.symbol} at {e.trade.price:,.4f} "
        f"(fees {e.trade.fees:,.2f})" + ("" if e.new else " (already booked by an earlier attempt)")
        for e in outcome.executed
    )
    usage = outcome.usage.total
    parts = [
        f"# Portfolio {outcome.portfolio} as of {outcome.as_of.isoformat()}",
        f"Run `{outcome.workflow_id}`: {STATUS_WORDS[outcome.status]}"
        + (f" ({outcome.approval_note})" if outcome.approval_note else ""),
        f"## The book before\n{_book(outcome.book)}",
        f"## Risk\n{render_risk(outcome.risk)}",
        f"## Candidates\n{candidates or 'none'}",
        f"## Every candidate's fate\n{_fates(outcome.fates)}",
        f"## Holdings review\n{render_review(outcome.review)}",
        f"## Macro\n{render_macro(outcome.macro)}",
        f"## Micro\n{render_micro(outcome.micro)}",
        f"## PM decision\n{d.portfolio_thesis}\n\nRisk: {d.risk_summary}\n\nCash reserve "
        f"{d.cash_reserve:.1%}; holds: {', '.join(d.holds) or 'none'}",
        f"## Plan\n{_plan(outcome.plan)}",
        f"## Refused\n{rejected or 'none'}",
        f"## Executed\n{fills or 'nothing'}",
        f"## The book after\nTotal {outcome.snapshot.total_value:,.2f}, cash "
        f"{outcome.snapshot.cash:,.2f}, {len(outcome.snapshot.positions)} positions.",
        f"---\nLLM calls {usage.calls}, tokens {usage.total_tokens}",
    ]
    return "\n\n".join(parts) + "\n"
