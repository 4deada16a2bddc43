"""The portfolio manager: its spec, and the offline rule for the Pipeline's final word."""

from __future__ import annotations

import statistics

from shared.agents.pipeline.evidence import ACTION_SIGN, INF, Bands, banded
from shared.agents.pipeline.inputs import (
    ManagerInputs,
)
from shared.agents.pipeline.prompts import manager_prompt, render_plan, render_proposal
from shared.agents.pipeline.research_manager import report_score
from shared.agents.pipeline.roles import MANAGER, PORTFOLIO_MANAGER
from shared.agents.pipeline.schemas import (
    SIGNAL_OF_RATING,
    AnalystReport,
    PortfolioDecision,
    Rating,
    Speaker,
    TradeSignal,
)
from shared.agents.spec import AgentSpec, from_inputs
from shared.errors import InvalidInput
from shared.llm.providers import LlmRole

RATING_BANDS: Bands[Rating] = (
    (-0.6, Rating.SELL),
    (-0.2, Rating.UNDERWEIGHT),
    (0.2, Rating.HOLD),
    (0.6, Rating.OVERWEIGHT),
    (INF, Rating.BUY),
)
DECISION_WEIGHTS = {"proposal": 0.5, "plan": 0.3, "reports": 0.2}
"""How much the trader's action, the research plan and the reports' stance count."""
TIME_HORIZON = "1-3 months"
SIGN_OF_SIGNAL: dict[TradeSignal, int] = {
    TradeSignal.BUY: 1,
    TradeSignal.HOLD: 0,
    TradeSignal.SELL: -1,
}


def _risk_consensus(inputs: ManagerInputs) -> float | None:
    """The size the risk debate settled on: the neutral debater's last, else the mean."""
    sizes = [
        (t.speaker, t.position_sizing) for t in inputs.transcript if t.position_sizing is not None
    ]
    neutral = [size for speaker, size in sizes if speaker is Speaker.NEUTRAL]
    if neutral:
        return neutral[-1]
    return statistics.fmean(size for _, size in sizes) if sizes else None


def _aborted(report: AnalystReport, symbol: str) -> PortfolioDecision:
    reason = report.critical_abort.reason or "unstated"
    return PortfolioDecision(
        rating=Rating.SELL,
        executive_summary=f"Sell {symbol}: the {report.analyst.value} analyst raised a critical "
        f"abort: {reason}.",
        investment_thesis="A catastrophic condition overrides every other signal; the debates "
        "and the trader were skipped and no position is held through it.",
        time_horizon="immediate",
        abort_reason=reason,
    )


def portfolio_decision(inputs: ManagerInputs) -> PortfolioDecision:
    """Sell on a critical abort; else the weighted call of proposal, plan and reports, scaled by
    how the risk debate resized the position."""
    aborted = inputs.reports.critical_abort()
    if aborted is not None:
        return _aborted(aborted, inputs.symbol)
    plan, proposal = inputs.research_plan, inputs.proposal
    if plan is None or proposal is None:
        raise InvalidInput("context", "the portfolio manager needs research_plan and proposal")
    parts = {
        "proposal": ACTION_SIGN[proposal.action],
        "plan": ACTION_SIGN[plan.recommendation],
        "reports": report_score(inputs.reports),
    }
    score = sum(DECISION_WEIGHTS[name] * value for name, value in parts.items())
    consensus = _risk_consensus(inputs)
    scale = 1.0
    if consensus is not None and proposal.position_sizing > 0:
        scale = max(0.5, min(1.5, consensus / proposal.position_sizing))
    rating = banded(max(-1.0, min(1.0, score * scale)), RATING_BANDS)
    signal = SIGNAL_OF_RATING[rating]
    agrees = SIGN_OF_SIGNAL[signal] != 0 and SIGN_OF_SIGNAL[signal] == ACTION_SIGN[proposal.action]
    size = f"{consensus:.1%}" if consensus is not None else f"{proposal.position_sizing:.1%}"
    return PortfolioDecision(
        rating=rating,
        executive_summary=f"{rating.value} {inputs.symbol} at a {size} position: weighted score "
        f"{score:+.2f} × risk-debate sizing {scale:.2f}.",
        investment_thesis=f"Plan: {render_plan(plan)}\nProposal: {render_proposal(proposal)}",
        price_target=proposal.take_profit if agrees else None,
        time_horizon=TIME_HORIZON,
    )


def _decision_text(decision: PortfolioDecision) -> str:
    return f"{decision.executive_summary}\n\n{decision.investment_thesis}"


SPEC: AgentSpec[ManagerInputs, PortfolioDecision] = AgentSpec(
    name=PORTFOLIO_MANAGER,
    group=MANAGER,
    llm_role=LlmRole.DEEP,
    inputs=ManagerInputs,
    output=PortfolioDecision,
    title="the portfolio manager",
    brief="Judge the risk debate and decide: rate the stock Buy, Overweight, Hold, Underweight or "
    "Sell (the BUY/HOLD/SELL signal follows from the rating), with an executive summary, the "
    "investment thesis, a price target and the time horizon; leave abort_reason null. Learn "
    "from the lessons of past decisions.",
    prompt=manager_prompt,
    offline=from_inputs(portfolio_decision),
    as_text=_decision_text,
    needs=("research_plan", "proposal"),
)
