"""The book manager (the Portfolio flow's PM): its spec, and its offline allocation.

Offline: sell what the review exits or trims; buy the ranked candidates rated Buy by
their Pipeline at a target weight by conviction, scaled by the macro stance and the
book's volatility; levels from the close.
"""

from __future__ import annotations

import math

from shared.agents.pipeline.schemas import Rating
from shared.agents.portfolio.inputs import (
    PmInputs,
)
from shared.agents.portfolio.prompts import (
    pm_prompt,
)
from shared.agents.portfolio.roles import (
    BOOK_MANAGER,
    PORTFOLIO_GROUP,
)
from shared.agents.portfolio.schemas import (
    AllocationDecision,
    HoldingAction,
    MarketStance,
)
from shared.agents.scan.schemas import Conviction
from shared.agents.spec import AgentSpec, from_inputs
from shared.llm.providers import LlmRole
from shared.portfolio.market import Quote
from shared.portfolio.orders import BuyOrder, SellOrder

TARGET_WEIGHT = {Conviction.HIGH: 0.10, Conviction.MEDIUM: 0.07, Conviction.LOW: 0.04}
"""The share of the book a new position aims at, by the Scan's conviction."""
STANCE_SCALE = {MarketStance.RISK_ON: 1.2, MarketStance.NEUTRAL: 1.0, MarketStance.RISK_OFF: 0.5}
EXTRA_RESERVE = {MarketStance.RISK_ON: 0.0, MarketStance.NEUTRAL: 0.0, MarketStance.RISK_OFF: 0.1}
HIGH_VOLATILITY = 0.30
"""Annualised volatility above which new positions are taken at three quarters of the size."""
STOP_DISTANCE = 0.08
TAKE_DISTANCE = (0.15, 0.30)
BUY_RATINGS = frozenset({Rating.BUY, Rating.OVERWEIGHT})


def _levels(close: float, target: float | None) -> tuple[float, float]:
    """A stop 8% under the close; a take profit at the target, kept 15-30% above the close."""
    low, high = (close * (1 + d) for d in TAKE_DISTANCE)
    take = min(max(target or low, low), high)
    return round(close * (1 - STOP_DISTANCE), 4), round(take, 4)


def _sells(inputs: PmInputs) -> list[SellOrder]:
    positions = {v.position.symbol: v.position for v in inputs.holdings}
    limit = inputs.book.limits.max_position_weight
    sells = []
    for verdict in inputs.review.verdicts:
        p = positions.get(verdict.ticker)
        if p is None or not p.priced:
            continue
        if verdict.action is HoldingAction.EXIT:
            shares = p.shares
        elif verdict.action is HoldingAction.TRIM:
            # Over the limit: back to 90% of it; a gain banked: a third of the position.
            keep = 0.9 * limit / p.weight if p.weight > limit else 2 / 3
            shares = p.shares - math.floor(p.shares * keep)
        else:
            continue
        if shares > 0:
            sells.append(
                SellOrder(
                    ticker=p.symbol,
                    shares=shares,
                    rationale=f"{verdict.action.value}: {verdict.reason}",
                )
            )
    return sells


def _buys(inputs: PmInputs, scale: float) -> tuple[list[BuyOrder], list[str]]:
    """Orders for the Buy-rated candidates and the holdings to add to, and what was passed over."""
    total = float(inputs.book.total_value)
    adding = {v.ticker for v in inputs.review.verdicts if v.action is HoldingAction.ADD}
    held = {v.position.symbol: v.position for v in inputs.holdings}
    buys, passed = [], []
    for view in inputs.candidates:
        c, d = view.candidate, view.decision
        if d is None or d.rating not in BUY_RATINGS:
            passed.append(f"{c.ticker} ({'no Pipeline decision' if d is None else d.rating.value})")
            continue
        if not isinstance(view.quote, Quote):
            passed.append(f"{c.ticker} (no close)")
            continue
        if c.held and c.ticker not in adding:
            continue
        close = float(view.quote.price)
        have = float(held[c.ticker].value) if c.ticker in held else 0.0
        want = min(TARGET_WEIGHT[c.conviction] * scale, inputs.book.limits.max_position_weight)
        shares = math.floor((want * total - have) / close)
        if shares <= 0:
            continue
        stop, take = _levels(close, d.price_target)
        buys.append(
            BuyOrder(
                ticker=c.ticker,
                shares=shares,
                price_target=d.price_target,
                stop_loss=stop,
                take_profit=take,
                rationale=f"{d.rating.value} by its Pipeline, {c.conviction.value}-conviction "
                f"{c.angle} idea scored {c.score:g}; aiming at {want:.1%} of the book "
                f"at the close {close:.2f}",
            )
        )
    return buys, passed


def _risk_words(inputs: PmInputs) -> tuple[float, str]:
    """How much the book's own risk shrinks new positions, and the risk summary."""
    risk = inputs.risk
    vol = risk.annualised_volatility.value
    parts = []
    for name, metric, pattern in (
        ("volatility", risk.annualised_volatility, "{:.1%}"),
        ("Sharpe", risk.sharpe, "{:.2f}"),
        ("1-day VaR 95%", risk.var_95_1d, "{:.2%}"),
        ("max drawdown", risk.max_drawdown, "{:.1%}"),
        (f"beta to {risk.benchmark}", risk.beta, "{:.2f}"),
    ):
        shown = pattern.format(metric.value) if metric.value is not None else "n/a"
        parts.append(f"{name} {shown}")
    summary = "Book risk as it stands: " + ", ".join(parts) + "."
    if risk.largest_sector:
        summary += f" Largest sector {risk.largest_sector} at {risk.sector_weights[risk.largest_sector]:.1%}."
    if risk.sharpe.reason:
        summary += f" Sharpe not measured: {risk.sharpe.reason}."
    if vol is not None and vol > HIGH_VOLATILITY:
        return (
            0.75,
            summary + f" Volatility above {HIGH_VOLATILITY:.0%}: new positions at 3/4 size.",
        )
    return 1.0, summary


def allocate(inputs: PmInputs) -> AllocationDecision:
    """The book manager's decision from the review, the ranked candidates, macro and risk."""
    stance = inputs.macro.stance
    risk_scale, risk_summary = _risk_words(inputs)
    sells = _sells(inputs)
    buys, passed = _buys(inputs, STANCE_SCALE[stance] * risk_scale)
    sold = {s.ticker for s in sells}
    holds = [v.position.symbol for v in inputs.holdings if v.position.symbol not in sold]
    reserve = inputs.book.limits.min_cash_weight + EXTRA_RESERVE[stance]
    thesis = (
        f"Macro {stance.value.replace('_', ' ')} ({inputs.macro.regime}). "
        f"Selling {len(sells)}, buying {len(buys)}, holding {len(holds)}."
    )
    if buys:
        thesis += f" First pick {buys[0].ticker}: {buys[0].rationale}."
    if passed:
        thesis += f" Passed over: {', '.join(passed)}."
    return AllocationDecision(
        sells=sells,
        buys=buys,
        holds=holds,
        cash_reserve=round(reserve, 4),
        portfolio_thesis=thesis,
        risk_summary=risk_summary,
    )


def _decision_text(decision: AllocationDecision) -> str:
    return f"{decision.portfolio_thesis}\n\n{decision.risk_summary}"


SPEC: AgentSpec[PmInputs, AllocationDecision] = AgentSpec(
    name=BOOK_MANAGER,
    group=PORTFOLIO_GROUP,
    llm_role=LlmRole.DEEP,
    inputs=PmInputs,
    output=AllocationDecision,
    title="the portfolio manager",
    brief="Decide for the whole book. Sells: holdings to sell, with whole share counts. Buys: "
    "whole share counts at about the close shown (cost = shares x close), most wanted "
    "first, each with a price target, a stop loss 5-15% below the close and a take profit "
    "10-30% above it, and the rationale. Holds: the holdings kept. A cash reserve (the "
    "fraction kept in cash and T-bills, at least {min_cash}), the "
    "portfolio thesis and a risk summary that cites the metrics above. Stay within the "
    "limits: what breaks them is scaled down.",
    prompt=pm_prompt,
    offline=from_inputs(allocate),
    as_text=_decision_text,
)
