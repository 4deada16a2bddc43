"""The trader: its spec, and the offline rule that turns the research plan into an order."""

from __future__ import annotations

from shared.agents.pipeline.evidence import ACTION_SIGN, VOTE_OF_STANCE
from shared.agents.pipeline.inputs import (
    TraderInputs,
)
from shared.agents.pipeline.prompts import render_proposal, trader_prompt
from shared.agents.pipeline.roles import TRADER, TRADING
from shared.agents.pipeline.schemas import (
    Action,
    TraderProposal,
)
from shared.agents.spec import AgentSpec, from_inputs
from shared.llm.providers import LlmRole

STOP_RISK_MULTIPLE = 2.0
"""The stop sits this many ATRs (or daily moves) from the entry."""
REWARD_RISK = 1.5
"""The target sits this many stop distances away: within QuantAgent's 1.2-1.8."""
MAX_STOP_SHARE = 0.5
"""A stop is never further than half the price away, however wild the volatility."""
MAX_TRADE_SIZE = 0.10
MIN_TRADE_SIZE = 0.01
"""A Buy or Sell the reports do not back still trades, at a token size."""


def _levels(action: Action, price: float | None, risk: float | None) -> dict[str, float | None]:
    sign = ACTION_SIGN[action]
    if price is None or risk is None or not sign:
        return {"entry_price": price, "stop_loss": None, "take_profit": None}
    distance = min(risk, MAX_STOP_SHARE * price)
    return {
        "entry_price": price,
        "stop_loss": float(f"{price - sign * distance:.6g}"),
        "take_profit": float(f"{price + sign * REWARD_RISK * distance:.6g}"),
    }


def _risk(inputs: TraderInputs) -> tuple[float | None, str]:
    """The stop distance in price units and what it was measured from: ATR, else volatility."""
    if inputs.atr is not None:
        return STOP_RISK_MULTIPLE * inputs.atr, f"{STOP_RISK_MULTIPLE:g} × ATR {inputs.atr:.4g}"
    if inputs.volatility is not None and inputs.last_price is not None:
        return (
            STOP_RISK_MULTIPLE * inputs.volatility * inputs.last_price,
            f"{STOP_RISK_MULTIPLE:g} daily moves ({inputs.volatility:.2%})",
        )
    return None, "no ATR or volatility was given, so no stop or target is set"


def trader_proposal(inputs: TraderInputs) -> TraderProposal:
    """The plan as an order: entry at the last price, stop and target from ATR or volatility,
    size from the confidence of the reports that agree."""
    action = inputs.research_plan.recommendation
    sign = ACTION_SIGN[action]
    risk, basis = _risk(inputs)
    reports = list(inputs.reports.by_kind().values())
    agreeing = [r for r in reports if sign and VOTE_OF_STANCE[r.stance] == sign]
    conviction = sum(r.confidence for r in agreeing) / len(reports) if reports else 0.0
    sizing = round(max(MIN_TRADE_SIZE, MAX_TRADE_SIZE * conviction), 4) if sign else 0.0
    price = inputs.last_price
    return TraderProposal(
        action=action,
        reasoning=(
            f"{action.value} {inputs.symbol} as the research plan recommends. Entry at the last "
            f"price {price if price is not None else 'unknown'}; risk distance from {basis}; "
            f"target at {REWARD_RISK:g}× the risk. {len(agreeing)} of {len(reports)} reports agree, "
            f"so {sizing:.1%} of the portfolio."
        ),
        position_sizing=sizing,
        **_levels(action, price, risk),
    )


SPEC: AgentSpec[TraderInputs, TraderProposal] = AgentSpec(
    name=TRADER,
    group=TRADING,
    llm_role=LlmRole.QUICK,
    inputs=TraderInputs,
    output=TraderProposal,
    title="the trader",
    brief="Turn the research plan into an order for {symbol}: Buy, Hold or Sell, an entry "
    "near the last price, a stop loss and a take profit set from the ATR or volatility "
    "(for a Buy stop < entry < take profit; for a Sell take profit < entry < stop), and a "
    "position size as a fraction of the portfolio. Explain the reasoning.",
    prompt=trader_prompt,
    offline=from_inputs(trader_proposal),
    as_text=render_proposal,
)
