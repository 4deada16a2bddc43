"""QuantAgent's four agents: their output schemas and the prompts built from typed inputs.

Indicator agent (tool loop over the five TA-Lib tools) → a Markdown report;
pattern agent (vision, the 40-bar candlestick chart) → ``PatternReport``; trend
agent (vision, the 50-bar chart with four trendlines) → ``TrendReport``;
decision agent (no tools, the three reports) → ``QuantDecision``. Each prompt
is a pure function, so the exact text is unit-testable and visible in the
Temporal Web UI. When the provider cannot take images, the two chart agents get
the same question over the chart as text (``shared.agents.chart_text``).
"""

from __future__ import annotations

from collections.abc import Sequence
from enum import StrEnum
from typing import Any

from pydantic import BaseModel, Field

from shared.agents import chart_text
from shared.agents.schemas import Confidence, register_schema
from shared.llm.contracts import ChatMessage
from shared.market.bars import Bar
from shared.storage.objects import ObjectRef
from shared.ta.patterns import Bias, PatternMatch, PatternName
from shared.ta.trend_summary import TrendLines

INDICATOR_AGENT = "indicator_agent"
PATTERN_AGENT = "pattern_agent"
TREND_AGENT = "trend_agent"
DECISION_AGENT = "decision_agent"
# QuantAgent's chart windows, from the original system.
PATTERN_WINDOW = 40
TREND_WINDOW = 50
MIN_RISK_REWARD = 1.2
MAX_RISK_REWARD = 1.8


class Direction(StrEnum):
    """QuantAgent trades: long or short, never a silent hold."""

    LONG = "LONG"
    SHORT = "SHORT"


class TrendPrediction(StrEnum):
    """Where the trend agent expects price to go next."""

    UP = "up"
    DOWN = "down"
    SIDEWAYS = "sideways"


class PriceAction(StrEnum):
    """How price behaves against the trendlines."""

    BOUNCE = "bounce"
    BREAKOUT = "breakout"
    BREAKDOWN = "breakdown"
    REJECTION = "rejection"
    COMPRESSION = "compression"


@register_schema
class PatternReport(BaseModel):
    """What the pattern agent sees in the candlestick chart."""

    pattern: PatternName | None = Field(description="the best-matching classical pattern, or null")
    bias: Bias
    confidence: Confidence
    analysis: str = Field(min_length=1, description="what in the chart supports it")


@register_schema
class TrendReport(BaseModel):
    """What the trend agent reads from the trendline chart."""

    prediction: TrendPrediction
    price_action: PriceAction
    confidence: Confidence
    analysis: str = Field(min_length=1)


@register_schema
class QuantDecision(BaseModel):
    """The decision agent's validated output."""

    decision: Direction
    forecast_horizon_bars: int = Field(ge=1, le=20, description="bars ahead the call is for")
    justification: str = Field(min_length=20)
    risk_reward_ratio: float = Field(ge=MIN_RISK_REWARD, le=MAX_RISK_REWARD)


def _turns(role: str, content: str, images: Sequence[ObjectRef] = ()) -> list[ChatMessage]:
    """An agent's turns: who it is (system), then what it is shown and asked (user)."""
    system = (
        f"You are {role} in a quantitative trading desk. "
        "Base every statement on the data you are given; never invent values."
    )
    return [
        ChatMessage(role="system", content=system),
        ChatMessage(role="user", content=content, images=list(images)),
    ]


def indicator_messages(
    symbol: str, timeframe: str, bar_count: int, last_time: str
) -> list[ChatMessage]:
    """The indicator agent's opening turns: compute, then interpret, the five indicators."""
    return _turns(
        "a high-frequency technical indicator analyst",
        (
            f"Analyse {symbol} on the {timeframe} timeframe: {bar_count} bars up to {last_time}. "
            "Call the tools to compute MACD, RSI, ROC, Stochastic and Williams %R, then write a "
            "concise report: momentum direction, crossovers and their recency, overbought or "
            "oversold readings, and whether the indicators agree. Values shown as null are "
            "warm-up bars without enough data, not zeros."
        ),
    )


PATTERN_QUESTION = (
    "Which of these classical patterns does it show, if any: "
    + "; ".join(p.value for p in PatternName)
    + "? Name the single best match (or null), its bias, your confidence, and the features "
    "you relied on."
)
TREND_QUESTION = (
    "Does price bounce off a line, break through one, or compress between them? Predict the "
    "next move: up, down or sideways."
)
# The system prompts name the chart agents' roles; the two ways of showing a chart share them.
PATTERN_ROLE = "a chart-pattern recognition specialist"
TREND_ROLE = "a trend and support/resistance analyst"
AS_TEXT = "You read it as a table rather than an image."


def pattern_messages(symbol: str, timeframe: str, chart: ObjectRef) -> list[ChatMessage]:
    """The pattern agent's turns: the 40-bar chart and the 16 patterns to choose from."""
    return _turns(
        PATTERN_ROLE,
        (
            f"This candlestick chart shows the last {PATTERN_WINDOW} {timeframe} bars of {symbol}. "
            + PATTERN_QUESTION
        ),
        images=[chart],
    )


def pattern_text_messages(
    symbol: str, timeframe: str, bars: Sequence[Bar], matches: Sequence[PatternMatch]
) -> list[ChatMessage]:
    """The pattern agent's turns for a model without vision: the same question over the
    chart's bars as a table and the geometric scan's matches."""
    return _turns(
        PATTERN_ROLE,
        (
            f"The candlestick chart of the last {len(bars)} {timeframe} bars of {symbol} "
            f"follows as text. {AS_TEXT} {PATTERN_QUESTION}\n\n"
            f"{chart_text.pattern_scan_text(matches)}\n\n{chart_text.bar_table(bars)}"
        ),
    )


def trend_messages(symbol: str, timeframe: str, chart: ObjectRef) -> list[ChatMessage]:
    """The trend agent's turns: the 50-bar chart with its four fitted trendlines."""
    return _turns(
        TREND_ROLE,
        (
            f"This chart shows the last {TREND_WINDOW} {timeframe} bars of {symbol} with four "
            "fitted trendlines: close-based support (blue) and resistance (red), and "
            "high/low-based support (green, dashed) and resistance (orange, dashed). "
            + TREND_QUESTION
        ),
        images=[chart],
    )


def trend_text_messages(
    symbol: str, timeframe: str, bars: Sequence[Bar], lines: TrendLines
) -> list[ChatMessage]:
    """The trend agent's turns for a model without vision: the same question over the four
    fitted lines as numbers and the bars they were fitted on as a table."""
    return _turns(
        TREND_ROLE,
        (
            f"The chart of the last {len(bars)} {timeframe} bars of {symbol} with four fitted "
            f"trendlines follows as text. {AS_TEXT} {TREND_QUESTION}\n\n"
            f"{chart_text.trendlines_text(lines, bars)}\n\n{chart_text.bar_table(bars)}"
        ),
    )


def decision_messages(
    symbol: str, timeframe: str, indicator_report: str, pattern: PatternReport, trend: TrendReport
) -> list[ChatMessage]:
    """The decision agent's turns: the three reports and the rules of the call."""
    return _turns(
        "the decision maker of a quantitative trading desk",
        (
            f"Decide LONG or SHORT for {symbol} ({timeframe}) over the next few bars.\n\n"
            f"## Indicator report\n{indicator_report}\n\n"
            f"## Pattern report\n{pattern.model_dump_json()}\n\n"
            f"## Trend report\n{trend.model_dump_json()}\n\n"
            "Rules: act on confirmed signals; prefer agreement of all three reports; weight "
            "strong recent momentum (a MACD crossover, an RSI breakout) above weak oscillator "
            "hints; HOLD is not allowed. Give a risk/reward ratio between "
            f"{MIN_RISK_REWARD} and {MAX_RISK_REWARD}, the horizon in bars, and a justification "
            "that cites the reports."
        ),
    )


class IndicatorInputs(BaseModel):
    """The indicator agent's brief; its data comes from its tools, over the loaded bars."""

    symbol: str = Field(min_length=1)
    timeframe: str = Field(min_length=1)
    bar_count: int = Field(ge=1)
    last_time: str = Field(description="the last bar's time, ISO 8601")


class ChartInputs(BaseModel):
    """What a chart agent is shown: the chart (a model that sees) or its bars as a table
    (one that does not), and what the code measured on it, which the offline agent reads."""

    symbol: str = Field(min_length=1)
    timeframe: str = Field(min_length=1)
    chart: ObjectRef | None = Field(None, description="the chart image; null: read as text")
    window: list[Bar] = Field(default_factory=list, description="the charted bars, as text")
    patterns: list[PatternMatch] = Field(
        default_factory=list, description="pattern agent: the geometric scan's matches"
    )
    trendlines: TrendLines | None = Field(None, description="trend agent: the four fitted lines")


class DecisionInputs(BaseModel):
    """The decision agent's material: the three reports (and the indicator values behind the
    first, which the offline agent recomputes momentum from)."""

    symbol: str = Field(min_length=1)
    timeframe: str = Field(min_length=1)
    indicator_report: str
    pattern_report: PatternReport
    trend_report: TrendReport
    indicator_outputs: dict[str, Any] = Field(default_factory=dict)


def horizon_text(bars: int, timeframe_label: str, bar_hours: float) -> str:
    """The horizon in words, derived from bars and timeframe so the two always agree."""
    hours = bars * bar_hours
    span = f"{hours / 24:g} days" if hours >= 24 else f"{hours:g} hours"
    return f"next {bars} {timeframe_label} bars (about {span})"
