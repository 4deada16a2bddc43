"""Offline analysts for the Portfolio flow: rules over each agent's typed inputs.

| agent | reads (request context) | rules |
|---|---|---|
| holdings_reviewer | ``ReviewInputs`` | Pipeline SELL → exit; 15% under cost without a Buy → exit; above the position limit → trim; Buy with room to its target → add; +30% on a Hold → trim; else keep |
| macro_summarizer | ``MacroInputs`` | cycle and policy words, geopolitical risks, risk factors and high-conviction themes → a signed score → risk_on / neutral / risk_off |
| micro_summarizer | ``MicroInputs`` | the Pipeline rating (else the Scan's conviction) → a view; the close against the target |
| book_manager | ``PmInputs`` | sell what the review exits or trims; buy the ranked candidates rated Buy by their Pipeline at a target weight by conviction, scaled by the macro stance and the book's volatility; levels from the close |

Every figure in an answer is one of the inputs, quoted.
"""

from __future__ import annotations

import math
import re
from collections.abc import Callable
from typing import Any

from pydantic import BaseModel

from shared.agents.pipeline.schemas import Rating, TradeSignal
from shared.agents.portfolio.inputs import (
    CandidateView,
    HoldingView,
    MacroInputs,
    MicroInputs,
    PmInputs,
    ReviewInputs,
)
from shared.agents.portfolio.prompts import render_macro, render_micro, render_review
from shared.agents.portfolio.roles import (
    AGENTS,
    BOOK_MANAGER,
    HOLDINGS_REVIEWER,
    MACRO_SUMMARIZER,
    MICRO_SUMMARIZER,
)
from shared.agents.portfolio.schemas import (
    AllocationDecision,
    HoldingAction,
    HoldingsReview,
    HoldingVerdict,
    MacroSummary,
    MarketStance,
    MicroSummary,
    TickerView,
)
from shared.agents.scan.schemas import Conviction
from shared.agents.schemas import Stance
from shared.errors import InvalidInput
from shared.llm.offline.engine import OfflineAnswer, register_analyst
from shared.llm.offline.reading import OfflineInput
from shared.portfolio.market import Quote
from shared.portfolio.orders import BuyOrder, SellOrder

# --- holdings reviewer ------------------------------------------------------------------------

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


# --- macro summarizer -------------------------------------------------------------------------

EASY = re.compile(r"\b(expansion|recovery|easing|cut(s|ting)?|accommodative|dovish|growth)\b", re.I)
TIGHT = re.compile(
    r"\b(contraction|recession|slowdown|tightening|hik(e|es|ing)|hawkish|late[- ]cycle)\b", re.I
)
STANCE_BANDS = ((-1.0, MarketStance.RISK_OFF), (1.0, MarketStance.NEUTRAL))
"""Below -1 risk off, below +1 neutral, else risk on."""


def summarize_macro(inputs: MacroInputs) -> MacroSummary:
    """The stance from the Scan's cycle, policy, risks and themes; neutral without a Scan."""
    scan = inputs.scan
    if scan is None:
        return MacroSummary(
            stance=MarketStance.NEUTRAL,
            regime="unknown: no Scan summary",
            key_points=["no Scan summary was given, so no macro view is taken"],
            summary="Without a Scan the book is managed on its holdings and their decisions alone.",
        )
    context = scan.macro_context
    words = f"{context.economic_cycle} {context.central_bank_stance}"
    easy, tight = len(EASY.findall(words)), len(TIGHT.findall(words))
    strong = [t for t in scan.key_themes if t.conviction is Conviction.HIGH]
    geo, risks = len(context.geopolitical_risks), len(scan.risk_factors)
    score = easy - tight + 0.5 * min(len(strong), 3) - 0.5 * max(0, geo - 1) - 0.25 * risks
    stance = next((s for bound, s in STANCE_BANDS if score < bound), MarketStance.RISK_ON)
    points = [
        f"cycle: {context.economic_cycle}",
        f"central bank: {context.central_bank_stance}",
        f"{easy} supportive and {tight} restrictive signals in cycle and policy",
        f"{len(strong)} high-conviction themes of {len(scan.key_themes)}"
        + (f" ({', '.join(t.theme for t in strong)})" if strong else ""),
        f"{geo} geopolitical risks and {risks} risk factors named",
    ]
    return MacroSummary(
        stance=stance,
        regime=f"{context.economic_cycle}; {context.central_bank_stance}",
        key_points=points,
        summary=f"Score {score:+.2f}: {stance.value.replace('_', ' ')}. {scan.executive_summary}",
    )


# --- micro summarizer -------------------------------------------------------------------------

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


# --- book manager -----------------------------------------------------------------------------

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
                f"{c.thesis_angle.value} idea scored {c.score:g}; aiming at {want:.1%} of the book "
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


# --- registration -----------------------------------------------------------------------------

BUILDERS: dict[str, tuple[type[BaseModel], Callable[[Any], BaseModel], Callable[[Any], str]]] = {
    HOLDINGS_REVIEWER: (ReviewInputs, review_holdings, render_review),
    MACRO_SUMMARIZER: (MacroInputs, summarize_macro, render_macro),
    MICRO_SUMMARIZER: (MicroInputs, summarize_micro, render_micro),
    BOOK_MANAGER: (
        PmInputs,
        allocate,
        lambda d: f"{d.portfolio_thesis}\n\n{d.risk_summary}",
    ),
}
"""Per agent: the inputs its context holds, the rules that answer, the answer as text."""


def _analyst(agent: str) -> Callable[[OfflineInput, str | None], OfflineAnswer]:
    inputs, decide, text = BUILDERS[agent]
    expected = AGENTS[agent].schema_name

    def answer(offline: OfflineInput, schema: str | None) -> OfflineAnswer:
        if schema not in (None, expected):
            raise InvalidInput(
                "response_schema",
                f"the offline {agent} writes {expected}, not {schema!r}",
                fix=f"Ask {agent} for {expected}.",
            )
        result = decide(inputs.model_validate(offline.inputs))
        return OfflineAnswer(text=text(result), structured=result)

    return answer


for _agent in BUILDERS:
    register_analyst(_agent, _analyst(_agent))
