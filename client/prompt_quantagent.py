"""QuantAgent's agents rehearsed for ``quantdesk prompt show``, as its workflow builds them.

The window is read as the ``load_bars`` activity reads it (``read_window``: the
bundled bars by default, no bar after T), the pattern scan as ``detect_chart_patterns``
runs it, the trendlines as the trend chart fits them, and the inputs by the
workflow's own builders. The chart agents are shown the chart image by default, as
a vision model is: the PNG a run renders and stores is named by the key it would
have; ``text`` shows the bars and measurements a model without vision reads instead.
The decision agent reads the three reports as the offline rules write them.
"""

from __future__ import annotations

import json
from datetime import datetime

from activities.market import LoadBarsRequest, PatternScanRequest, read_window, scan_patterns
from shared.agents import quantagent as qa
from shared.agents import quantagent_agents as agents
from shared.agents.rehearsed import Rehearsed, offline_answer, offline_tool_run
from shared.charts.candles import chart_window
from shared.llm.providers import LlmRole
from shared.market.bars import Timeframe
from shared.storage.buckets import CHARTS_BUCKET
from shared.storage.objects import ObjectRef
from shared.ta.trend_summary import summarize_trendlines
from shared.tools.registry import ToolServices
from workflows.quantagent import (
    DEFAULT_LOOKBACK,
    MIN_BARS,
    ChartInput,
    ChartReader,
    chart_inputs,
    indicator_inputs,
)

TEXT_NOTE = "charts as text: read by the quick model (or the run's vision_model if named)"
CHART_KEY = "quantagent/<workflow id>/<run id>/{}.png"
"""Where a run stores a chart (``run_key_prefix``): the ids exist only once a run starts."""


def _chart(name: str) -> ObjectRef:
    return ObjectRef(bucket=CHARTS_BUCKET, key=CHART_KEY.format(name), content_type="image/png")


def rehearse_quantagent(
    agent: str,
    symbol: str,
    timeframe: Timeframe,
    as_of: datetime | None,
    chart_input: ChartInput,
    services: ToolServices,
) -> Rehearsed:
    """``agent``'s inputs in a QuantAgent run of ``symbol`` on ``timeframe`` bars up to
    ``as_of`` (default: the latest), its charts shown as ``chart_input``."""
    loaded = read_window(
        LoadBarsRequest(
            symbol=symbol,
            timeframe=timeframe,
            as_of=as_of,
            lookback=DEFAULT_LOOKBACK,
            min_bars=MIN_BARS,
        )
    )
    vision = chart_input == "image"
    reader = ChartReader(
        input="image" if vision else "text", role=LlmRole.VISION if vision else LlmRole.QUICK
    )
    notes = (
        f"bars: {len(loaded.bars)} {timeframe.value} bars of {loaded.symbol} "
        f"up to {loaded.bars[-1].time.isoformat()} (bundled source)",
        *([] if vision else [TEXT_NOTE]),
    )
    window = loaded.bars[-qa.PATTERN_WINDOW :]
    pattern = chart_inputs(
        loaded,
        timeframe,
        reader,
        _chart("pattern_chart"),
        window,
        patterns=scan_patterns(PatternScanRequest(bars=window)).matches,
    )
    if agent == agents.PATTERN.name:
        return Rehearsed(agents.PATTERN, pattern, (), notes)
    window = loaded.bars[-qa.TREND_WINDOW :]
    frame = chart_window(window, qa.TREND_WINDOW)
    lines = summarize_trendlines(frame["high"], frame["low"], frame["close"])
    trend = chart_inputs(loaded, timeframe, reader, _chart("trend_chart"), window, trendlines=lines)
    if agent == agents.TREND.name:
        return Rehearsed(agents.TREND, trend, (), notes)
    indicator = indicator_inputs(loaded, timeframe)
    if agent == agents.INDICATOR.name:
        return Rehearsed(agents.INDICATOR, indicator, (), notes)
    bars = [bar.model_dump(mode="json") for bar in loaded.bars]
    report, results = offline_tool_run(
        agents.INDICATOR, indicator, services, {"bars": bars}, hidden=("bars",)
    )
    decision = qa.DecisionInputs(
        symbol=loaded.symbol,
        timeframe=timeframe.value,
        indicator_report=agents.INDICATOR.as_text(report),
        pattern_report=offline_answer(agents.PATTERN, pattern),
        trend_report=offline_answer(agents.TREND, trend),
        indicator_outputs={
            p["indicator"]: p for p in (json.loads(r.content) for r in results if r.ok)
        },
    )
    upstream = tuple(spec.name for spec in agents.QUANTAGENT if spec is not agents.DECISION)
    return Rehearsed(agents.DECISION, decision, upstream, notes)
