"""The ``QuantAgent`` workflow: indicators ∥ pattern chart ∥ trend chart → decision.

After the window is loaded, three branches run at once: the indicator agent's
tool loop; the pattern chart render and the geometric pattern scan, then the
pattern agent; the trend chart render (which fits the trendlines), then the
trend agent. Each vision agent starts as soon as its own chart is stored. The
decision agent runs when all three reports exist. Only object keys and small
models cross Temporal; charts live in S3.

A provider that cannot take images (its row says ``vision`` False) still gets both
charts rendered, for the result and for people, but its pattern and trend agents
read them as text: the bars as a table, the scan's patterns and the fitted lines as
numbers. Either way the run issues the same commands; only the messages differ.
"""

from __future__ import annotations

import json
from collections.abc import Awaitable
from datetime import datetime, timedelta
from typing import Any, Literal

from pydantic import BaseModel, Field
from temporalio import workflow

with workflow.unsafe.imports_passed_through():
    from activities.charts import ChartActivities, ChartRequest, ChartResult
    from activities.market import (
        MAX_LOOKBACK,
        LoadBarsRequest,
        LoadedBars,
        PatternScanRequest,
        detect_chart_patterns,
        load_bars,
    )
    from shared.agents import quantagent as qa
    from shared.agents import quantagent_agents as agents
    from shared.agents.spec import AgentSpec, InputsT, OutputT
    from shared.llm.contracts import LlmChoice, UsageReport
    from shared.llm.providers import LlmRole, ProviderSpec
    from shared.market.bars import Bar, Timeframe
    from shared.observability.metrics import decided
    from shared.queues import TOOLS_QUEUE
    from shared.storage.buckets import CHARTS_BUCKET
    from shared.storage.objects import ObjectRef
    from shared.ta.patterns import PatternMatch
    from shared.ta.trend_summary import TrendLines
    from workflows.activity_calls import GroupActivity, run_activity
    from workflows.concurrency import gather_all
    from workflows.inputs import RunInput, ZonedTime, scheduled_time
    from workflows.llm_calls import ToolUse, call_agent, call_agent_tools
    from workflows.progress import RunProgress
    from workflows.provider_check import check_provider
    from workflows.retries import HEARTBEAT, durable
    from workflows.run_keys import run_key_prefix
    from workflows.tracked import TrackedRun
    from workflows.visibility import tag_run


DATA_START_TO_CLOSE = timedelta(minutes=1)
CHART_START_TO_CLOSE = timedelta(minutes=2)
# The trend chart (50 bars) needs the most; MACD's signal line needs 34.
MIN_BARS = qa.TREND_WINDOW
DEFAULT_LOOKBACK = 100
ChartInput = Literal["image", "text"]


class QuantAgentInput(RunInput):
    """What to analyse. ``{"symbol": "GOOG", "timeframe": "1d"}`` alone is enough."""

    symbol: str = Field(min_length=1, max_length=32)
    timeframe: Timeframe
    as_of: ZonedTime | None = Field(None, description="analysis time (UTC); default: latest bar")
    bars: list[Bar] | None = Field(None, description="bars to analyse; no source is read")
    lookback: int = Field(DEFAULT_LOOKBACK, ge=MIN_BARS, le=MAX_LOOKBACK)
    llm: LlmChoice = LlmChoice()
    source: Literal["bundled", "csv", "yfinance"] = "bundled"
    csv_path: str | None = None


class ChartReader(BaseModel):
    """How the pattern and trend agents read the charts, decided once from the provider row."""

    input: ChartInput
    role: LlmRole

    @classmethod
    def of(cls, spec: ProviderSpec, llm: LlmChoice) -> ChartReader:
        """Images for a vision provider; text otherwise, read by the provider's quick (text)
        model, or by the run's ``vision_model`` when it names one (the model chosen to read
        charts, whatever form they take)."""
        if spec.capabilities.vision:
            return cls(input="image", role=LlmRole.VISION)
        return cls(input="text", role=LlmRole.VISION if llm.vision_model else LlmRole.QUICK)


def indicator_inputs(loaded: LoadedBars, timeframe: Timeframe) -> qa.IndicatorInputs:
    """The indicator agent's brief over the loaded window."""
    return qa.IndicatorInputs(
        symbol=loaded.symbol,
        timeframe=timeframe.value,
        bar_count=len(loaded.bars),
        last_time=loaded.bars[-1].time.isoformat(),
    )


def chart_inputs(
    loaded: LoadedBars,
    timeframe: Timeframe,
    reader: ChartReader,
    chart: ObjectRef,
    window: list[Bar],
    **measured: Any,
) -> qa.ChartInputs:
    """What a chart agent is shown: the stored ``chart`` for a model that sees, else its
    ``window`` as text; with what the code ``measured`` on it (patterns or trendlines)."""
    image = reader.input == "image"
    return qa.ChartInputs(
        symbol=loaded.symbol,
        timeframe=timeframe.value,
        chart=chart if image else None,
        window=[] if image else window,
        **measured,
    )


STEPS = (
    "load_bars",
    "indicator_agent",
    "pattern_chart",
    "pattern_scan",
    "pattern_agent",
    "trend_chart",
    "trend_agent",
    "decision_agent",
)


class QuantAgentProgress(RunProgress):
    """The answer of the ``progress`` query."""


class QuantAgentResult(BaseModel):
    """The decision with everything it was based on."""

    symbol: str
    timeframe: Timeframe
    as_of: datetime = Field(description="time of the last bar analysed")
    bars_analysed: int
    decision: qa.QuantDecision
    forecast_horizon: str = Field(description="the horizon in words, from bars and timeframe")
    indicator_report: str
    pattern_report: qa.PatternReport
    trend_report: qa.TrendReport
    latest_indicators: dict[str, dict[str, float | None]]
    trendlines: TrendLines
    patterns: list[PatternMatch]
    pattern_chart: ChartResult
    trend_chart: ChartResult
    chart_input: ChartInput = Field(
        "image",
        description="how the pattern and trend agents read the charts: as images, or as text "
        "(bars, patterns and trendlines) because the provider has no vision",
    )
    usage: UsageReport


@workflow.defn(name="QuantAgent")
class QuantAgentWorkflow(TrackedRun):
    """QuantAgent's four agents as one durable run."""

    def __init__(self) -> None:
        super().__init__(*STEPS, phase="")

    @workflow.query(name="progress")
    def progress(self) -> QuantAgentProgress:
        """Each step's state and the tokens spent so far."""
        return self.progress_as(QuantAgentProgress)

    def _key(self, step: str, suffix: str) -> str:
        return f"{run_key_prefix('quantagent')}/{step}.{suffix}"

    async def _ask(
        self,
        args: QuantAgentInput,
        spec: AgentSpec[InputsT, OutputT],
        inputs: InputsT,
        role: LlmRole | None = None,
    ) -> OutputT:
        """One agent's call from its spec and typed inputs, shown as its own step."""
        answer = call_agent(
            spec,
            inputs,
            llm=args.llm,
            raw_key=self._key(spec.name, "raw.txt"),
            usage=self.usage,
            role=role,
        )
        output: OutputT = await self._step(spec.name, answer)
        return output

    @workflow.run
    async def run(self, args: QuantAgentInput) -> QuantAgentResult:
        """Load the window, run the three branches, then decide."""
        self.open_gate()
        spec = check_provider(args.llm)
        reader = ChartReader.of(spec, args.llm)
        loaded = await self._step(
            "load_bars",
            run_activity(
                load_bars,
                LoadBarsRequest(
                    symbol=args.symbol,
                    timeframe=args.timeframe,
                    as_of=args.as_of or scheduled_time(),
                    lookback=args.lookback,
                    min_bars=MIN_BARS,
                    bars=args.bars,
                    source=args.source,
                    csv_path=args.csv_path,
                ),
                **durable(DATA_START_TO_CLOSE),
            ),
        )
        tag_run("QuantAgent", symbol=args.symbol.upper(), as_of=loaded.bars[-1].time)
        (report, tool_payloads), pattern, trend = await gather_all(
            self._indicators(args, loaded),
            self._patterns(args, loaded, reader),
            self._trend(args, loaded, reader),
        )
        (pattern_report, pattern_chart, matches), (trend_report, trend_chart) = pattern, trend
        indicator_outputs = {p["indicator"]: p for p in tool_payloads}
        decision: qa.QuantDecision = await self._ask(
            args,
            agents.DECISION,
            qa.DecisionInputs(
                symbol=loaded.symbol,
                timeframe=args.timeframe.value,
                indicator_report=report,
                pattern_report=pattern_report,
                trend_report=trend_report,
                indicator_outputs=indicator_outputs,
            ),
        )
        assert trend_chart.trendlines is not None
        decided(workflow.metric_meter(), "quantagent", decision.decision.value)
        return QuantAgentResult(
            symbol=loaded.symbol,
            timeframe=args.timeframe,
            as_of=loaded.bars[-1].time,
            bars_analysed=len(loaded.bars),
            decision=decision,
            forecast_horizon=qa.horizon_text(
                decision.forecast_horizon_bars,
                args.timeframe.value,
                args.timeframe.duration.total_seconds() / 3600,
            ),
            indicator_report=report,
            pattern_report=pattern_report,
            trend_report=trend_report,
            latest_indicators={name: p["latest"] for name, p in indicator_outputs.items()},
            trendlines=trend_chart.trendlines,
            patterns=matches,
            pattern_chart=pattern_chart,
            trend_chart=trend_chart,
            chart_input=reader.input,
            usage=self.usage,
        )

    async def _indicators(
        self, args: QuantAgentInput, loaded: LoadedBars
    ) -> tuple[str, list[dict[str, Any]]]:
        """The indicator agent's tool loop; returns its report and the parsed tool results."""
        inputs = indicator_inputs(loaded, args.timeframe)
        bars = [bar.model_dump(mode="json") for bar in loaded.bars]
        run = await self._step(
            agents.INDICATOR.name,
            call_agent_tools(
                agents.INDICATOR,
                inputs,
                llm=args.llm,
                raw_key=self._key(agents.INDICATOR.name, "raw.txt"),
                usage=self.usage,
                tools=ToolUse(queue=TOOLS_QUEUE, context={"bars": bars}, hidden=("bars",)),
            ),
        )
        loop = run.loop
        payloads = []
        for result in loop.tool_results:
            if result.ok:
                payloads.append(json.loads(result.content))
        return loop.text, payloads

    def _chart(
        self,
        step: str,
        render: GroupActivity[ChartRequest, ChartResult],
        args: QuantAgentInput,
        bars: list[Bar],
    ) -> Awaitable[ChartResult]:
        """Render ``bars`` with ``render`` and store the chart under this run's ``step`` key."""
        return self._step(
            step,
            run_activity(
                render,
                ChartRequest(
                    symbol=args.symbol.upper(),
                    timeframe=args.timeframe.value,
                    bars=bars,
                    target=ObjectRef(
                        bucket=CHARTS_BUCKET, key=self._key(step, "png"), content_type="image/png"
                    ),
                ),
                **durable(CHART_START_TO_CLOSE, heartbeat=HEARTBEAT),
                summary=step,
            ),
        )

    async def _patterns(
        self, args: QuantAgentInput, loaded: LoadedBars, reader: ChartReader
    ) -> tuple[qa.PatternReport, ChartResult, list[PatternMatch]]:
        """Pattern chart ∥ pattern scan on the same 40 bars, then the pattern agent."""
        window = loaded.bars[-qa.PATTERN_WINDOW :]
        chart, scan = await gather_all(
            self._chart("pattern_chart", ChartActivities.render_pattern_chart, args, window),
            self._step(
                "pattern_scan",
                run_activity(
                    detect_chart_patterns,
                    PatternScanRequest(bars=window),
                    **durable(DATA_START_TO_CLOSE),
                ),
            ),
        )
        inputs = chart_inputs(
            loaded, args.timeframe, reader, chart.chart, window, patterns=scan.matches
        )
        report = await self._ask(args, agents.PATTERN, inputs, reader.role)
        return report, chart, scan.matches

    async def _trend(
        self, args: QuantAgentInput, loaded: LoadedBars, reader: ChartReader
    ) -> tuple[qa.TrendReport, ChartResult]:
        """Trend chart (with its fitted lines), then the trend agent."""
        window = loaded.bars[-qa.TREND_WINDOW :]
        chart = await self._chart("trend_chart", ChartActivities.render_trend_chart, args, window)
        assert chart.trendlines is not None
        inputs = chart_inputs(
            loaded, args.timeframe, reader, chart.chart, window, trendlines=chart.trendlines
        )
        return await self._ask(args, agents.TREND, inputs, reader.role), chart
