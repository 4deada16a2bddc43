"""The micro summarizer: its spec, and its offline view per holding and candidate.

Offline: the Pipeline rating (else the Scan's conviction) → a view; the close against
the target.
"""

from __future__ import annotations

from shared.agents.pipeline.schemas import TradeSignal
from shared.agents.portfolio.inputs import (
    CandidateView,
    HoldingView,
    MicroInputs,
)
from shared.agents.portfolio.prompts import (
    micro_prompt,
    render_micro,
)
from shared.agents.portfolio.roles import (
    MICRO_SUMMARIZER,
    PORTFOLIO_GROUP,
)
from shared.agents.portfolio.schemas import (
    MicroSummary,
    TickerView,
)
from shared.agents.scan.schemas import Conviction
from shared.agents.schemas import Stance
from shared.agents.spec import AgentSpec, from_inputs
from shared.llm.providers import LlmRole
from shared.portfolio.market import Quote

VIEW_OF_SIGNAL = {
    TradeSignal.BUY: Stance.BULLISH,
    TradeSignal.HOLD: Stance.NEUTRAL,
    TradeSignal.SELL: Stance.BEARISH,
}


def _upside(target: float | None, close: float | None) -> str:
    if target is None or close is None:
        return ""
    return f", target {target:.2f} is {target / close - 1:+.1%} from the close {close:.2f}"


def _holding_view(view: HoldingView) -> TickerView:
    p, d = view.position, view.decision
    pnl = f"P&L {p.pnl_pct:+.1%}"
    if d is None:
        return TickerView(
            ticker=p.symbol, view=Stance.NEUTRAL, note=f"held, no Pipeline decision; {pnl}"
        )
    close = float(p.price) if p.priced else None
    note = f"held, {d.rating.value}{_upside(d.price_target, close)}; {pnl}"
    return TickerView(ticker=p.symbol, view=VIEW_OF_SIGNAL[d.signal], note=note)


def _candidate_view(view: CandidateView) -> TickerView:
    c, d = view.candidate, view.decision
    close = float(view.quote.price) if isinstance(view.quote, Quote) else None
    if d is not None:
        note = f"candidate scored {c.score:g}, {d.rating.value}{_upside(d.price_target, close)}"
        return TickerView(ticker=c.ticker, view=VIEW_OF_SIGNAL[d.signal], note=note)
    leaning = Stance.BULLISH if c.conviction is Conviction.HIGH else Stance.NEUTRAL
    note = (
        f"candidate scored {c.score:g}, no Pipeline decision; Scan conviction {c.conviction.value}"
    )
    return TickerView(ticker=c.ticker, view=leaning, note=note)


def summarize_micro(inputs: MicroInputs) -> MicroSummary:
    """A view per holding and candidate (a ticker that is both is read as a holding)."""
    views = [_holding_view(v) for v in inputs.holdings]
    held = {v.ticker for v in views}
    views += [_candidate_view(v) for v in inputs.candidates if v.candidate.ticker not in held]
    tally = {s: sum(v.view is s for v in views) for s in Stance}
    summary = (
        f"{len(inputs.holdings)} holdings and {len(inputs.candidates)} candidates: "
        + ", ".join(f"{n} {s.value}" for s, n in tally.items())
        + "."
    )
    return MicroSummary(views=views, summary=summary)


SPEC: AgentSpec[MicroInputs, MicroSummary] = AgentSpec(
    name=MICRO_SUMMARIZER,
    group=PORTFOLIO_GROUP,
    llm_role=LlmRole.QUICK,
    inputs=MicroInputs,
    output=MicroSummary,
    title="the equity analyst",
    brief="Give one view per holding and per candidate (bullish, bearish or neutral) with a note "
    "citing its Pipeline rating, its close against the price target and, for holdings, "
    "the P&L. Then summarise.",
    prompt=micro_prompt,
    offline=from_inputs(summarize_micro),
    as_text=render_micro,
)
