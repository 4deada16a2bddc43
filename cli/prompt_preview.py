"""Each flow's agents rehearsed for ``quantdesk prompt show``: which flags a flow takes, and
the QuantAgent's inputs as its workflow builds them.

A flow reads only what its run reads, strictly as of the analysis time: the Pipeline
(``shared.agents.pipeline.rehearsal``) and the Scan (``shared.agents.scan.rehearsal``)
through the configured data routes, QuantAgent through the bar source its run reads
(``activities.market.read_window``, what the ``load_bars`` activity returns). The
QuantAgent's chart agents are shown the chart image by default, as a vision model
is: the PNG a run renders and stores is named by the key it would have; ``text``
shows the bars and measurements a model without vision reads instead.
"""

from __future__ import annotations

import json
from collections.abc import Callable, Mapping
from dataclasses import dataclass
from datetime import datetime
from typing import Any

from activities.market import LoadBarsRequest, PatternScanRequest, read_window, scan_patterns
from cli.prompt_portfolio import rehearse_portfolio
from cli.prompt_reflection import rehearse_reflector
from shared.agents import quantagent as qa
from shared.agents import quantagent_agents as agents
from shared.agents import reflector
from shared.agents.pipeline.rehearsal import rehearse
from shared.agents.pipeline.roles import GROUPS as PIPELINE_GROUPS
from shared.agents.portfolio.roles import PORTFOLIO_GROUP
from shared.agents.rehearsed import Rehearsed, offline_answer, offline_tool_run
from shared.agents.scan.rehearsal import rehearse_scan
from shared.agents.scan.roles import GROUPS as SCAN_GROUPS
from shared.agents.spec import AGENT_SPECS, AgentSpec, agent_spec
from shared.charts.candles import chart_window
from shared.config import load_settings
from shared.data.analysis_time import analysis_time
from shared.errors import InvalidInput
from shared.llm.providers import LlmRole
from shared.market.bars import Timeframe
from shared.memory import MemoryRole
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
from workflows.scan import CLOCK_SYMBOL

TEXT_NOTE = "charts as text: read by the quick model (or the run's vision_model if named)"
CHART_KEY = "quantagent/<workflow id>/<run id>/{}.png"
"""Where a run stores a chart (``run_key_prefix``): the ids exist only once a run starts."""


@dataclass(frozen=True)
class PromptRequest:
    """What ``prompt show`` was asked: the agent and the flags given (None: not given)."""

    agent: str
    as_of: datetime | None = None
    symbol: str | None = None
    timeframe: Timeframe | None = None
    chart_input: ChartInput | None = None
    role: MemoryRole | None = None
    book: str | None = None

    def given(self) -> dict[str, Any]:
        """The flags given, by field name."""
        fields = ("as_of", "symbol", "timeframe", "chart_input", "role", "book")
        return {name: getattr(self, name) for name in fields if getattr(self, name) is not None}


Preview = Callable[[PromptRequest, ToolServices], Rehearsed]


def _when(services: ToolServices, symbol: str, as_of: datetime | None) -> datetime:
    """The analysis time a run resolves: ``as_of`` checked against the data, else the latest."""
    return analysis_time(services.router, symbol, as_of).as_of


def _pipeline(request: PromptRequest, services: ToolServices) -> Rehearsed:
    symbol = (request.symbol or "GOOG").strip().upper()
    return rehearse(request.agent, symbol, _when(services, symbol, request.as_of), services)


def _scan(request: PromptRequest, services: ToolServices) -> Rehearsed:
    # A Scan's clock is its technology ETF's latest daily bar (``ScanWorkflow``).
    return rehearse_scan(request.agent, _when(services, CLOCK_SYMBOL, request.as_of), services)


def _portfolio(request: PromptRequest, services: ToolServices) -> Rehearsed:
    # As of AutoRun's Scan: the Scan's clock.
    when = _when(services, CLOCK_SYMBOL, request.as_of)
    return rehearse_portfolio(request.agent, when, request.book, load_settings(), services)


def _reflector(request: PromptRequest, services: ToolServices) -> Rehearsed:
    symbol = (request.symbol or "GOOG").strip().upper()
    role = request.role or MemoryRole.PORTFOLIO_MANAGER
    return rehearse_reflector(symbol, _when(services, symbol, request.as_of), role, services)


def _chart(name: str) -> ObjectRef:
    return ObjectRef(bucket=CHARTS_BUCKET, key=CHART_KEY.format(name), content_type="image/png")


def _quantagent(request: PromptRequest, services: ToolServices) -> Rehearsed:
    """QuantAgent's agent over the window its run loads (the bundled bars by default): the
    three branches as its workflow builds them, the decision over their offline reports."""
    timeframe = request.timeframe or Timeframe.D1
    loaded = read_window(
        LoadBarsRequest(
            symbol=(request.symbol or "GOOG").strip(),
            timeframe=timeframe,
            as_of=request.as_of,
            lookback=DEFAULT_LOOKBACK,
            min_bars=MIN_BARS,
        )
    )
    vision = request.chart_input != "text"
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
    if request.agent == agents.PATTERN.name:
        return Rehearsed(agents.PATTERN, pattern, (), notes)
    window = loaded.bars[-qa.TREND_WINDOW :]
    frame = chart_window(window, qa.TREND_WINDOW)
    lines = summarize_trendlines(frame["high"], frame["low"], frame["close"])
    trend = chart_inputs(loaded, timeframe, reader, _chart("trend_chart"), window, trendlines=lines)
    if request.agent == agents.TREND.name:
        return Rehearsed(agents.TREND, trend, (), notes)
    indicator = indicator_inputs(loaded, timeframe)
    if request.agent == agents.INDICATOR.name:
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


@dataclass(frozen=True)
class Flow:
    """How ``prompt show`` rehearses a flow's agents, and the flags they take."""

    name: str
    preview: Preview
    flags: frozenset[str]
    only: Mapping[str, frozenset[str]] | None = None
    """Flags only some of the flow's agents take: flag -> those agents."""


FLOWS: tuple[tuple[tuple[str, ...], Flow], ...] = (
    (PIPELINE_GROUPS, Flow("Pipeline", _pipeline, frozenset({"as_of", "symbol"}))),
    (SCAN_GROUPS, Flow("Scan", _scan, frozenset({"as_of"}))),
    (
        (agents.QUANTAGENT_GROUP,),
        Flow(
            "QuantAgent",
            _quantagent,
            frozenset({"as_of", "symbol", "timeframe", "chart_input"}),
            {"chart_input": frozenset({agents.PATTERN.name, agents.TREND.name})},
        ),
    ),
    ((PORTFOLIO_GROUP,), Flow("Portfolio", _portfolio, frozenset({"as_of", "book"}))),
    (
        (reflector.SPEC.group,),
        Flow("Reflect", _reflector, frozenset({"as_of", "symbol", "role"})),
    ),
)


def _flag(name: str) -> str:
    return "--" + name.replace("_", "-")


def flow_of(spec: AgentSpec[Any, Any]) -> Flow:
    """The flow ``spec``'s agent runs in, or an error naming the agents that can be shown."""
    for groups, flow in FLOWS:
        if spec.group in groups:
            return flow
    shown_groups = {group for groups, _ in FLOWS for group in groups}
    shown = [name for name, known in AGENT_SPECS.items() if known.group in shown_groups]
    raise InvalidInput(
        "agent",
        f"prompt show cannot rehearse {spec.name} (group {spec.group}) yet",
        fix=f"Show one of: {', '.join(shown)}.",
    )


def preview(request: PromptRequest, services: ToolServices) -> Rehearsed:
    """``request.agent``'s inputs as its flow's run builds them; a flag the agent does not
    take is refused, naming it and the flags it does take."""
    flow = flow_of(agent_spec(request.agent))
    for name in request.given():
        takers = (flow.only or {}).get(name)
        if name not in flow.flags or (takers is not None and request.agent not in takers):
            takes = sorted(
                _flag(f)
                for f in flow.flags
                if request.agent in (flow.only or {}).get(f, frozenset({request.agent}))
            )
            raise InvalidInput(
                _flag(name),
                f"{request.agent} ({flow.name}) takes no {_flag(name)}",
                fix=f"Drop {_flag(name)}; {request.agent} takes {', '.join(takes)}.",
            )
    return flow.preview(request, services)
