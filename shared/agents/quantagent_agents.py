"""QuantAgent's four agents: their specs, and their offline rules over the data the prompts
came from.

- indicator agent: reads the five indicator tool results (MACD crossover and its
  recency, RSI and Williams %R zones, ROC sign, Stochastic %K/%D cross) and
  scores momentum from -1 to +1;
- pattern agent: its "eyes" are the geometric detectors run on the same 40 bars
  as the chart (``inputs["patterns"]``);
- trend agent: where the last close sits against the four fitted lines
  (``inputs["trendlines"]``): broken, bounced, rejected or squeezed;
- decision agent: weighs the three (momentum recomputed from the indicator
  values in ``inputs``), momentum first as the original rules ask, and never
  returns HOLD.

Every sentence quotes the number it rests on, so a reader can check the call.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

from pydantic import BaseModel

from shared.agents.quantagent import (
    DECISION_AGENT,
    INDICATOR_AGENT,
    MAX_RISK_REWARD,
    MIN_RISK_REWARD,
    PATTERN_AGENT,
    PATTERN_QUESTION,
    PATTERN_ROLE,
    TREND_AGENT,
    TREND_QUESTION,
    TREND_ROLE,
    ChartInputs,
    DecisionInputs,
    Direction,
    IndicatorInputs,
    PatternReport,
    PriceAction,
    QuantDecision,
    TrendPrediction,
    TrendReport,
    decision_messages,
    indicator_messages,
    pattern_messages,
    pattern_text_messages,
    trend_messages,
    trend_text_messages,
)
from shared.agents.spec import (
    AgentFamily,
    AgentSpec,
    Prose,
    from_inputs,
    prose_text,
    register_agent,
)
from shared.errors import InvalidInput
from shared.llm.contracts import ChatMessage
from shared.llm.offline.reading import OfflineInput
from shared.llm.providers import LlmRole
from shared.storage.objects import ObjectRef
from shared.ta.patterns import Bias
from shared.ta.trend_summary import TrendLines
from shared.tools.indicator_tools import INDICATOR_TOOL_NAMES

# Momentum readings: a crossover within this many bars counts as recent.
RECENT_CROSS_BARS = 3
RSI_OVERBOUGHT, RSI_OVERSOLD = 70.0, 30.0
WILLR_OVERBOUGHT, WILLR_OVERSOLD = -20.0, -80.0
STOCH_OVERBOUGHT, STOCH_OVERSOLD = 80.0, 20.0
# A close within this share of the channel height of a line is "at" the line.
NEAR_LINE_SHARE = 0.15
# Below this pattern confidence the chart is read as showing no pattern.
MIN_PATTERN_CONFIDENCE = 0.35
DEFAULT_HORIZON_BARS = 3


class Signal(BaseModel):
    """One indicator's vote: +1 bullish, -1 bearish, with its weight and the reason."""

    vote: float
    weight: float
    reason: str


def _values(outputs: dict[str, Any], name: str) -> tuple[dict[str, list[float]], dict[str, Any]]:
    data = outputs.get(name) or {}
    series = {k: [v for v in vs if v is not None] for k, vs in data.get("values", {}).items()}
    return series, data.get("latest", {})


def _bars_since_cross(fast: list[float], slow: list[float]) -> int | None:
    """Bars since ``fast`` last crossed ``slow`` (None if it never did in the values shown)."""
    pairs = list(zip(fast, slow, strict=False))
    for back in range(1, len(pairs)):
        now, before = pairs[-back], pairs[-back - 1]
        if (now[0] - now[1]) * (before[0] - before[1]) < 0:
            return back - 1
    return None


def _macd(outputs: dict[str, Any]) -> Signal | None:
    series, latest = _values(outputs, "macd")
    hist = latest.get("macd_hist")
    if hist is None:
        return None
    cross = _bars_since_cross(series.get("macd", []), series.get("macd_signal", []))
    side = "above" if hist > 0 else "below"
    recent = cross is not None and cross <= RECENT_CROSS_BARS
    reason = f"MACD is {side} its signal (histogram {hist:+.4g})"
    if recent:
        reason += f", crossed {cross} bar(s) ago"
    return Signal(vote=1.0 if hist > 0 else -1.0, weight=3.0 if recent else 2.0, reason=reason)


def _zone(value: float, low: float, high: float, label: str) -> Signal:
    reading = f"{label} {value:.1f}"
    if value >= high:
        return Signal(vote=-0.5, weight=1.0, reason=f"{reading} is overbought (≥ {high:g})")
    if value <= low:
        return Signal(vote=0.5, weight=1.0, reason=f"{reading} is oversold (≤ {low:g})")
    vote = 0.5 if value > (low + high) / 2 else -0.5
    side = "above" if vote > 0 else "below"
    return Signal(vote=vote, weight=0.5, reason=f"{reading} is {side} mid-range")


def _rsi(outputs: dict[str, Any]) -> Signal | None:
    value = _values(outputs, "rsi")[1].get("rsi")
    return None if value is None else _zone(value, RSI_OVERSOLD, RSI_OVERBOUGHT, "RSI")


def _willr(outputs: dict[str, Any]) -> Signal | None:
    value = _values(outputs, "willr")[1].get("willr")
    return None if value is None else _zone(value, WILLR_OVERSOLD, WILLR_OVERBOUGHT, "Williams %R")


def _roc(outputs: dict[str, Any]) -> Signal | None:
    value = _values(outputs, "roc")[1].get("roc")
    if value is None:
        return None
    return Signal(
        vote=1.0 if value > 0 else -1.0,
        weight=1.0,
        reason=f"ROC {value:+.2f}% says price is {'above' if value > 0 else 'below'} "
        "its level of 10 bars ago",
    )


def _stoch(outputs: dict[str, Any]) -> Signal | None:
    _, latest = _values(outputs, "stoch")
    k, d = latest.get("stoch_k"), latest.get("stoch_d")
    if k is None or d is None:
        return None
    zone = _zone(k, STOCH_OVERSOLD, STOCH_OVERBOUGHT, "Stochastic %K")
    cross = 0.5 if k > d else -0.5
    return Signal(
        vote=(zone.vote + cross) / 2,
        weight=1.0,
        reason=f"{zone.reason}; %K {'above' if k > d else 'below'} %D ({d:.1f})",
    )


SIGNALS = (_macd, _rsi, _roc, _stoch, _willr)


def momentum_score(outputs: dict[str, Any]) -> tuple[float, list[str]]:
    """Weighted vote of the indicators in [-1, 1], and the reasons behind it."""
    signals = [s for s in (reader(outputs) for reader in SIGNALS) if s is not None]
    if not signals:
        return 0.0, ["No indicator had enough bars to give a value."]
    total = sum(s.weight for s in signals)
    return sum(s.vote * s.weight for s in signals) / total, [s.reason for s in signals]


def indicator_outputs(payloads: list[Any]) -> dict[str, Any]:
    """Indicator tool results keyed by indicator name (other payloads are ignored)."""
    return {p["indicator"]: p for p in payloads if isinstance(p, dict) and "indicator" in p}


def indicator_analyst(
    spec: AgentSpec[IndicatorInputs, Prose], inputs: IndicatorInputs, offline: OfflineInput
) -> Prose:
    """The indicator report: each reading with its value, then the balance of momentum."""
    outputs = indicator_outputs([o.data for o in offline.tool_outputs if o.ok])
    failed = [o.data for o in offline.tool_outputs if not o.ok]
    score, reasons = momentum_score(outputs)
    tone = "bullish" if score > 0.15 else "bearish" if score < -0.15 else "mixed"
    lines = [f"- {reason}" for reason in reasons] + [f"- tool error: {e}" for e in failed]
    text = (
        f"**Momentum: {tone}** (score {score:+.2f} on a -1..+1 scale, "
        f"{len(outputs)} of 5 indicators read)\n\n" + "\n".join(lines)
    )
    return Prose(text=text)


def read_patterns(inputs: ChartInputs) -> PatternReport:
    """The best detected pattern on the 40-bar window, or none if nothing is convincing."""
    matches = inputs.patterns
    best = max(matches, key=lambda m: m.confidence, default=None)
    if best is None or best.confidence < MIN_PATTERN_CONFIDENCE:
        seen = f" (best was {best.name.value} at {best.confidence:.2f})" if best else ""
        report = PatternReport(
            pattern=None,
            bias=Bias.NEUTRAL,
            confidence=0.2,
            analysis=f"No classical pattern is clear in the window{seen}.",
        )
    else:
        others = ", ".join(
            f"{m.name.value} {m.confidence:.2f}"
            for m in matches
            if m is not best and m.confidence >= MIN_PATTERN_CONFIDENCE
        )
        report = PatternReport(
            pattern=best.name,
            bias=best.bias,
            confidence=best.confidence,
            analysis=f"{best.description} Spans bars {best.start_index}-{best.end_index}."
            + (f" Also seen: {others}." if others else ""),
        )
    return report


def read_trend(inputs: ChartInputs) -> TrendReport:
    """Price against the four fitted lines of the 50-bar window."""
    if inputs.trendlines is None:
        raise InvalidInput("trendlines", "the trend agent reads the fitted lines; none were given")
    return _read_trend(inputs.trendlines)


def _read_trend(lines: TrendLines) -> TrendReport:
    close = lines.last_close
    support = max(lines.close_support.last_value, lines.high_low_support.last_value)
    resistance = min(lines.close_resistance.last_value, lines.high_low_resistance.last_value)
    height = max(resistance - support, 1e-12)
    slope = (lines.close_support.slope + lines.close_resistance.slope) / 2
    per_bar = slope / close * 100
    upper_gap = (lines.close_resistance.slope - lines.close_support.slope) / close * 100
    where = f"close {close:.4g} between support {support:.4g} and resistance {resistance:.4g}"
    if close > resistance:
        action, prediction = PriceAction.BREAKOUT, TrendPrediction.UP
    elif close < support:
        action, prediction = PriceAction.BREAKDOWN, TrendPrediction.DOWN
    elif close - support <= NEAR_LINE_SHARE * height:
        action, prediction = PriceAction.BOUNCE, TrendPrediction.UP
    elif resistance - close <= NEAR_LINE_SHARE * height:
        action, prediction = PriceAction.REJECTION, TrendPrediction.DOWN
    elif upper_gap < 0:
        action = PriceAction.COMPRESSION
        prediction = TrendPrediction.UP if per_bar > 0 else TrendPrediction.DOWN
    else:
        action = PriceAction.COMPRESSION
        prediction = (
            TrendPrediction.SIDEWAYS
            if abs(per_bar) < 0.05
            else (TrendPrediction.UP if per_bar > 0 else TrendPrediction.DOWN)
        )
    position = (close - support) / height
    shape = "converge" if upper_gap < 0 else "diverge"
    confidence = {PriceAction.BREAKOUT: 0.7, PriceAction.BREAKDOWN: 0.7}.get(action, 0.55)
    return TrendReport(
        prediction=prediction,
        price_action=action,
        confidence=confidence,
        analysis=(
            f"{where} ({position:.0%} of the channel); the channel drifts "
            f"{per_bar:+.3f}% per bar and its lines {shape} "
            f"({upper_gap:+.3f}% per bar): {action.value}, expecting {prediction.value}."
        ),
    )


_BIAS_VOTE = {Bias.BULLISH: 1.0, Bias.BEARISH: -1.0, Bias.NEUTRAL: 0.0}
_TREND_VOTE = {TrendPrediction.UP: 1.0, TrendPrediction.DOWN: -1.0, TrendPrediction.SIDEWAYS: 0.0}


def decide(momentum: float, pattern: PatternReport, trend: TrendReport) -> QuantDecision:
    """Momentum first (weight 2), then pattern and trend weighted by their confidence."""
    votes = {
        "momentum": (momentum, 2.0),
        "pattern": (_BIAS_VOTE[pattern.bias], pattern.confidence),
        "trend": (_TREND_VOTE[trend.prediction], trend.confidence),
    }
    score = sum(v * w for v, w in votes.values()) / sum(w for _, w in votes.values())
    # A tie goes with momentum, then the trend: HOLD is not an answer.
    leaning = score or momentum or _TREND_VOTE[trend.prediction] or 1.0
    direction = Direction.LONG if leaning > 0 else Direction.SHORT
    sign = 1 if direction is Direction.LONG else -1
    agreeing = [name for name, (v, _) in votes.items() if v * sign > 0]
    ratio = MIN_RISK_REWARD + (MAX_RISK_REWARD - MIN_RISK_REWARD) * len(agreeing) / len(votes)
    return QuantDecision(
        decision=direction,
        forecast_horizon_bars=DEFAULT_HORIZON_BARS,
        justification=(
            f"{direction.value}: weighted score {score:+.2f}; agreeing: "
            f"{', '.join(agreeing) or 'none (tie broken by momentum)'}. Momentum {momentum:+.2f}; "
            f"pattern {pattern.pattern.value if pattern.pattern else 'none'} "
            f"({pattern.bias.value}, {pattern.confidence:.2f}); trend {trend.price_action.value} "
            f"→ {trend.prediction.value} ({trend.confidence:.2f})."
        ),
        risk_reward_ratio=round(ratio, 2),
    )


def decide_from(inputs: DecisionInputs) -> QuantDecision:
    """The call from the three reports (momentum recomputed from the indicator values)."""
    momentum, _ = momentum_score(inputs.indicator_outputs)
    return decide(momentum, inputs.pattern_report, inputs.trend_report)


def _indicator_prompt(
    spec: AgentSpec[IndicatorInputs, Prose], inputs: IndicatorInputs
) -> list[ChatMessage]:
    return indicator_messages(inputs.symbol, inputs.timeframe, inputs.bar_count, inputs.last_time)


def _patterns_as_text(inputs: ChartInputs) -> list[ChatMessage]:
    """The bars and the scan's matches."""
    return pattern_text_messages(inputs.symbol, inputs.timeframe, inputs.window, inputs.patterns)


def _trend_as_text(inputs: ChartInputs) -> list[ChatMessage]:
    """The fitted lines and their bars."""
    if inputs.trendlines is None:
        raise InvalidInput("trendlines", "the trend agent reads the fitted lines; none were given")
    return trend_text_messages(inputs.symbol, inputs.timeframe, inputs.window, inputs.trendlines)


_CHART_PROMPTS: dict[
    str,
    tuple[
        Callable[[str, str, ObjectRef], list[ChatMessage]],
        Callable[[ChartInputs], list[ChatMessage]],
    ],
] = {
    PATTERN_AGENT: (pattern_messages, _patterns_as_text),
    TREND_AGENT: (trend_messages, _trend_as_text),
}
"""Chart agent -> its turns with the chart, and its turns as text for a model without vision."""


def _chart_prompt(spec: AgentSpec[ChartInputs, Any], inputs: ChartInputs) -> list[ChatMessage]:
    """The chart when the model sees, else what the chart was drawn from, as text."""
    with_chart, as_text = _CHART_PROMPTS[spec.name]
    if inputs.chart is not None:
        return with_chart(inputs.symbol, inputs.timeframe, inputs.chart)
    return as_text(inputs)


def _decision_prompt(
    spec: AgentSpec[DecisionInputs, QuantDecision], inputs: DecisionInputs
) -> list[ChatMessage]:
    return decision_messages(
        inputs.symbol,
        inputs.timeframe,
        inputs.indicator_report,
        inputs.pattern_report,
        inputs.trend_report,
    )


QUANTAGENT_GROUP = "quantagent"

INDICATOR: AgentSpec[IndicatorInputs, Prose] = AgentSpec(
    name=INDICATOR_AGENT,
    group=QUANTAGENT_GROUP,
    llm_role=LlmRole.QUICK,
    inputs=IndicatorInputs,
    output=None,
    title="a high-frequency technical indicator analyst",
    brief="compute MACD, RSI, ROC, Stochastic and Williams %R, then interpret them",
    prompt=_indicator_prompt,
    offline=indicator_analyst,
    as_text=prose_text,
    tools=INDICATOR_TOOL_NAMES,
)
CHART_AGENTS = AgentFamily(QUANTAGENT_GROUP, LlmRole.VISION, ChartInputs, _chart_prompt)
"""The pattern and trend agents: each reads its chart (or, without vision, its source)."""

PATTERN = CHART_AGENTS.spec(
    PATTERN_AGENT,
    PATTERN_ROLE,
    PATTERN_QUESTION,
    output=PatternReport,
    offline=from_inputs(read_patterns),
    as_text=lambda report: report.analysis,
)
TREND = CHART_AGENTS.spec(
    TREND_AGENT,
    TREND_ROLE,
    TREND_QUESTION,
    output=TrendReport,
    offline=from_inputs(read_trend),
    as_text=lambda report: report.analysis,
)
DECISION: AgentSpec[DecisionInputs, QuantDecision] = AgentSpec(
    name=DECISION_AGENT,
    group=QUANTAGENT_GROUP,
    llm_role=LlmRole.DEEP,
    inputs=DecisionInputs,
    output=QuantDecision,
    title="the decision maker of a quantitative trading desk",
    brief="decide LONG or SHORT from the three reports; HOLD is not allowed",
    prompt=_decision_prompt,
    offline=from_inputs(decide_from),
    as_text=lambda decision: decision.justification,
)

QUANTAGENT: tuple[AgentSpec[Any, Any], ...] = (INDICATOR, PATTERN, TREND, DECISION)
"""The indicator agent ∥ the two chart agents, then the decision agent."""

for _spec in QUANTAGENT:
    register_agent(_spec)
