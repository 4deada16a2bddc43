"""The QuantAgent workflow against OpenAI and Anthropic wire formats, through the real SDKs.

Everything is real except the vendor: the time-skipping Temporal server, the
chat activity on ``llm-openai`` / ``llm-anthropic``, the tools, charts and
market activities, and S3. The vendor is ``FakeLlmServer``, subclassed in
``tests.fakes.agent_routed`` to answer by *who is asking* rather than in arrival
order, because the indicator, pattern and trend agents call at the same time.

The OpenAI key comes from ``OPENAI_API_KEY`` at call time (the worker's own
settings hold none), so one test can take it away and give it back.

A provider without vision (DeepSeek's row) goes through ``llm-openai-compatible``
to the same fake on the OpenAI wire: its chart agents must get the charts as text.
"""

from __future__ import annotations

import asyncio
import json
import uuid
from collections.abc import AsyncIterator, Iterator
from typing import Any

import pytest
import pytest_asyncio
from rich.console import Console
from temporalio.api.enums.v1 import EventType
from temporalio.testing import WorkflowEnvironment

from activities.charts import ChartActivities
from activities.evaluation import EvaluationActivities
from activities.llm import LlmActivities
from activities.market import MARKET_ACTIVITIES
from activities.tools import TOOL_ACTIVITIES
from cli import run as cli_run
from shared.agents.chart_text import bar_table, pattern_scan_text, trendlines_text
from shared.agents.quantagent import PatternReport, QuantDecision, TrendReport
from shared.config import Settings, load_settings
from shared.llm.providers import QUEUE_ANTHROPIC, QUEUE_COMPATIBLE, QUEUE_OPENAI, provider_spec
from shared.llm.strict_schema import strict_json_schema
from shared.market.sources import BundledSource
from shared.queues import CHARTS_QUEUE, TOOLS_QUEUE
from shared.storage.objects import ObjectStore
from shared.tools.indicator_tools import INDICATOR_TOOL_NAMES
from tests.fakes.agent_routed import (
    DECISION,
    DECISION_REPAIR,
    DECISION_REPLY,
    INDICATOR,
    INDICATOR_REPORT,
    INDICATOR_RESULTS,
    PATTERN,
    PATTERN_REPLY,
    TREND,
    TREND_REPLY,
    AgentRoutedFake,
    assistant_texts,
    blocks,
    call_id,
    images,
    offered_tools,
    script_happy_path,
    tool_results,
    user_text,
)
from tests.fakes.agent_routed import route as route  # test_langchain_provider takes it from here
from tests.fakes.llm_server import FakeToolCall, Scripted, Wire
from tests.servers import running_workers, tools_reading
from workers.main import WorkerPlan
from workflows.evaluate import EvaluateResult, EvaluateWorkflow
from workflows.quantagent import QuantAgentProgress, QuantAgentResult, QuantAgentWorkflow

pytestmark = pytest.mark.asyncio(loop_scope="session")
QUEUE = "test-quantagent-vendors"
KEY = "sk-test-quantagent-vendors-7"
PNG_SIGNATURE = b"\x89PNG\r\n\x1a\n"
MAX_CHART_BYTES = 250 * 1024
PROVIDERS = ("openai", "anthropic")
TEXT_ONLY = "deepseek"
"""A provider whose row says it takes no images; served here by the OpenAI-wire fake."""
FIVE_TOOLS = {"compute_macd", "compute_rsi", "compute_roc", "compute_stoch", "compute_willr"}

TREND_PROSE = (
    "Price bounced off the close-based support line twice and now holds above it, so I "
    "expect it to keep rising."
)
# What a model sometimes writes as a call's arguments: JSON cut short.
BROKEN_ARGUMENTS = '{"timeperiod": 14'


async def _until_waiting(handle: Any, calls: int) -> QuantAgentProgress:
    """The run's progress once ``calls`` calls wait for ``resume``."""
    for _ in range(300):
        progress = await handle.query("progress", result_type=QuantAgentProgress)
        if len(progress.waiting) >= calls:
            return progress
        await asyncio.sleep(0.05)
    raise AssertionError(f"fewer than {calls} calls ever waited")


# -- fixtures ------------------------------------------------------------------


@pytest.fixture(scope="module")
def vendor() -> Iterator[AgentRoutedFake]:
    with AgentRoutedFake() as server:
        yield server


@pytest_asyncio.fixture(scope="module", loop_scope="session")
async def workers(
    ts_env: WorkflowEnvironment, s3_settings: Settings, vendor: AgentRoutedFake
) -> AsyncIterator[None]:
    settings = load_settings(
        # No key in settings: the OpenAI worker reads OPENAI_API_KEY at call time.
        openai={"api_key": None, "base_url": vendor.base_url_openai},
        anthropic={"api_key": KEY, "base_url": vendor.base_url_anthropic},
        deepseek={"api_key": KEY, "base_url": vendor.base_url_openai},
        data_dir=s3_settings.data_dir,
        s3=s3_settings.s3.model_dump(),
    )
    charts = ChartActivities(settings=s3_settings)
    evaluation = EvaluationActivities(s3_settings)
    plans = [
        WorkerPlan(queue=QUEUE, workflows=[QuantAgentWorkflow, EvaluateWorkflow]),
        WorkerPlan(
            queue=TOOLS_QUEUE,
            activities=[
                *TOOL_ACTIVITIES,
                *MARKET_ACTIVITIES,
                *evaluation.activities(TOOLS_QUEUE),
            ],
            threads=True,
        ),
        WorkerPlan(
            queue=CHARTS_QUEUE,
            activities=[
                charts.render_pattern_chart,
                charts.render_trend_chart,
                *evaluation.activities(CHARTS_QUEUE),
            ],
            threads=True,
        ),
        WorkerPlan(queue=QUEUE_OPENAI, activities=[LlmActivities(settings, QUEUE_OPENAI).chat]),
        WorkerPlan(
            queue=QUEUE_ANTHROPIC, activities=[LlmActivities(settings, QUEUE_ANTHROPIC).chat]
        ),
        WorkerPlan(
            queue=QUEUE_COMPATIBLE, activities=[LlmActivities(settings, QUEUE_COMPATIBLE).chat]
        ),
    ]
    # run_tool reads through the worker's own settings; here, the test's S3 (a tool answer
    # over the claim check's threshold is stored there).
    with tools_reading(s3_settings):
        async with running_workers(ts_env.client, plans):
            yield


@pytest.fixture
def fake(
    vendor: AgentRoutedFake, workers: None, monkeypatch: pytest.MonkeyPatch
) -> AgentRoutedFake:
    """The vendor, emptied, with the OpenAI key in the worker's environment."""
    monkeypatch.setenv("OPENAI_API_KEY", KEY)
    monkeypatch.delenv("QUANTDESK_OPENAI__API_KEY", raising=False)
    vendor.reset()
    return vendor


# -- runs ----------------------------------------------------------------------


async def run(env: WorkflowEnvironment, provider: str, **fields: Any) -> QuantAgentResult:
    return await env.client.execute_workflow(
        "QuantAgent",
        {"symbol": "GOOG", "timeframe": "1d", "llm": {"provider": provider}, **fields},
        id=f"qa-vendor-{uuid.uuid4()}",
        task_queue=QUEUE,
        result_type=QuantAgentResult,
    )


def wire_of(provider: str) -> Wire:
    return Wire(provider)


# -- tests ---------------------------------------------------------------------


@pytest.mark.parametrize("provider", PROVIDERS)
async def test_indicator_agent_is_offered_the_five_tools_without_bars(
    ts_env: WorkflowEnvironment, fake: AgentRoutedFake, provider: str
) -> None:
    script_happy_path(fake, provider)

    await run(ts_env, provider)

    first = fake.only(INDICATOR)
    tools = offered_tools(first.body, wire_of(provider))
    assert set(tools) == FIVE_TOOLS == set(INDICATOR_TOOL_NAMES)
    assert len(first.body["tools"]) == 5
    for schema in tools.values():
        assert schema["type"] == "object"
        assert "bars" not in schema["properties"]
        assert "bars" not in schema.get("required", [])
        assert "$defs" not in schema  # no Bar schema leaks in with the hidden field
    assert first.api_key == KEY


@pytest.mark.parametrize("provider", PROVIDERS)
async def test_tool_results_go_back_in_the_vendor_format_with_real_values(
    ts_env: WorkflowEnvironment, fake: AgentRoutedFake, provider: str
) -> None:
    script_happy_path(fake, provider)

    result = await run(ts_env, provider)

    second = fake.only(INDICATOR_RESULTS)
    returned = tool_results(second.body, wire_of(provider))
    assert set(returned) == {call_id(provider, "rsi"), call_id(provider, "macd")}
    rsi = json.loads(returned[call_id(provider, "rsi")])
    macd = json.loads(returned[call_id(provider, "macd")])
    assert rsi["indicator"] == "rsi" and rsi["parameters"] == {"timeperiod": 14}
    assert macd["indicator"] == "macd"
    assert set(macd["latest"]) == {"macd", "macd_signal", "macd_hist"}
    assert set(rsi["latest"]) == {"rsi"}
    assert all(isinstance(value, float) for value in rsi["latest"].values())
    assert 0 <= rsi["latest"]["rsi"] <= 100
    assert all(isinstance(value, float) for value in macd["latest"].values())
    assert result.latest_indicators == {"rsi": rsi["latest"], "macd": macd["latest"]}
    assert result.indicator_report == INDICATOR_REPORT
    assert result.usage.by_agent["indicator_agent"].calls == 2
    if provider == "openai":
        assistant = next(m for m in second.body["messages"] if m["role"] == "assistant")
        assert [c["id"] for c in assistant["tool_calls"]] == [
            call_id(provider, "rsi"),
            call_id(provider, "macd"),
        ]
    else:
        uses = [b["id"] for b in blocks(second.body) if b["type"] == "tool_use"]
        assert uses == [call_id(provider, "rsi"), call_id(provider, "macd")]
        # Both results answer one assistant turn, so they share one user turn.
        assert second.body["messages"][-1]["role"] == "user"
        assert [b["type"] for b in second.body["messages"][-1]["content"]] == [
            "tool_result",
            "tool_result",
        ]


@pytest.mark.parametrize("provider", PROVIDERS)
async def test_charts_reach_the_vision_agents_as_png_images(
    ts_env: WorkflowEnvironment, fake: AgentRoutedFake, provider: str
) -> None:
    script_happy_path(fake, provider)

    result = await run(ts_env, provider)

    for name in (PATTERN, TREND):
        [(media_type, png)] = images(fake.only(name).body, wire_of(provider))
        assert media_type == "image/png"
        assert png.startswith(PNG_SIGNATURE)
        assert len(png) < MAX_CHART_BYTES
    if provider == "openai":
        for name, schema in ((PATTERN, "PatternReport"), (TREND, "TrendReport")):
            response_format = fake.only(name).body["response_format"]
            assert response_format["type"] == "json_schema"
            assert response_format["json_schema"]["name"] == schema
    assert result.pattern_report == PatternReport.model_validate(PATTERN_REPLY)
    assert result.trend_report == TrendReport.model_validate(TREND_REPLY)
    assert result.chart_input == "image"


async def test_a_provider_without_vision_gets_the_charts_as_text_and_decides(
    ts_env: WorkflowEnvironment, fake: AgentRoutedFake
) -> None:
    spec = provider_spec(TEXT_ONLY)
    assert not spec.capabilities.vision
    script_happy_path(fake, "openai")

    result = await run(ts_env, TEXT_ONLY)

    bars = BundledSource().read("GOOG", "1d", lookback=100)
    pattern, trend = fake.only(PATTERN).body, fake.only(TREND).body
    for body in (pattern, trend):
        assert images(body, Wire.OPENAI) == []
        assert all(isinstance(message["content"], str) for message in body["messages"])
        assert "as a table rather than an image" in user_text(body)
        assert body["model"] == spec.quick_model  # the row has no vision model to pick
    assert pattern_scan_text(result.patterns) in user_text(pattern)
    assert bar_table(bars[-40:]) in user_text(pattern)
    assert trendlines_text(result.trendlines, bars[-50:]) in user_text(trend)
    assert bar_table(bars[-50:]) in user_text(trend)
    assert result.chart_input == "text"
    assert result.decision == QuantDecision.model_validate(DECISION_REPLY)
    assert result.pattern_report == PatternReport.model_validate(PATTERN_REPLY)
    assert result.trend_report == TrendReport.model_validate(TREND_REPLY)
    for chart in (result.pattern_chart, result.trend_chart):  # still rendered, for people
        assert chart.chart.key.startswith("quantagent/") and chart.size_bytes > 0


async def test_the_run_summary_says_the_charts_were_read_as_text(
    ts_env: WorkflowEnvironment, fake: AgentRoutedFake
) -> None:
    script_happy_path(fake, "openai")
    result = await run(ts_env, TEXT_ONLY)

    console = Console(width=200, record=True)
    console.print(cli_run.quantagent_summary(result, TEXT_ONLY))

    assert "read the charts as text (provider deepseek has no vision)" in console.export_text()


@pytest.mark.parametrize("provider", PROVIDERS)
async def test_decision_request_carries_the_three_reports_and_becomes_the_result(
    ts_env: WorkflowEnvironment, fake: AgentRoutedFake, provider: str
) -> None:
    script_happy_path(fake, provider)

    result = await run(ts_env, provider)

    body = fake.only(DECISION).body
    text = user_text(body)
    assert "Decide LONG or SHORT for GOOG" in text
    assert INDICATOR_REPORT in text
    assert PatternReport.model_validate(PATTERN_REPLY).model_dump_json() in text
    assert TrendReport.model_validate(TREND_REPLY).model_dump_json() in text
    schema = QuantDecision.model_json_schema()
    if provider == "openai":
        assert "tools" not in body
        assert body["response_format"] == {
            "type": "json_schema",
            "json_schema": {
                "name": "QuantDecision",
                "schema": strict_json_schema(schema),
                "strict": True,
            },
        }
    else:
        # The schema is the only tool, and the model must call it: Claude cannot answer prose.
        assert [(tool["name"], tool["input_schema"]) for tool in body["tools"]] == [
            ("QuantDecision", schema)
        ]
        assert body["tool_choice"] == {"type": "tool", "name": "QuantDecision"}
        assert "QuantDecision" in body["system"]
    assert result.decision == QuantDecision.model_validate(DECISION_REPLY)
    assert set(fake.routed) == {INDICATOR, INDICATOR_RESULTS, PATTERN, TREND, DECISION}
    assert len(fake.requests) == 5
    assert result.usage.total.calls == 5
    spec = provider_spec(provider)
    assert {name: fake.only(name).body["model"] for name in fake.routed} == {
        INDICATOR: spec.quick_model,
        INDICATOR_RESULTS: spec.quick_model,
        PATTERN: spec.vision_model,
        TREND: spec.vision_model,
        DECISION: spec.deep_model,
    }


@pytest.mark.parametrize("provider", PROVIDERS)
async def test_a_decision_the_schema_cannot_refuse_gets_one_repair_and_the_repair_is_used(
    ts_env: WorkflowEnvironment, fake: AgentRoutedFake, provider: str
) -> None:
    # Too short a justification: strict mode drops minLength, so only validation catches it.
    bad = {**DECISION_REPLY, "justification": "MACD says up."}
    repaired = {**DECISION_REPLY, "decision": "SHORT", "risk_reward_ratio": 1.7}
    script_happy_path(fake, provider, decision=bad)
    fake.on(DECISION_REPAIR, Scripted(text=json.dumps(repaired)))

    result = await run(ts_env, provider)

    assert len(fake.routed[DECISION]) == 1
    repair = fake.only(DECISION_REPAIR).body
    assert "justification" in user_text(repair)
    assert "at least 20 characters" in user_text(repair)
    assert json.dumps(bad) in assistant_texts(repair)  # the bad reply goes back as its turn
    assert result.decision == QuantDecision.model_validate(repaired)
    assert result.usage.by_agent["decision_agent"].calls == 2


async def test_claude_answering_the_trend_in_prose_no_longer_fails_the_run(
    ts_env: WorkflowEnvironment, fake: AgentRoutedFake
) -> None:
    # Unforced, the fake answers this in prose, as Claude does (see test_fake_llm_server);
    # the forced answer tool makes it fill a TrendReport instead.
    script_happy_path(fake, "anthropic")
    fake.instead(TREND, Scripted(text=TREND_PROSE))

    result = await run(ts_env, "anthropic")

    trend = fake.only(TREND).body
    assert trend["tool_choice"] == {"type": "tool", "name": "TrendReport"}
    assert result.trend_report.analysis == TREND_PROSE
    assert TREND_PROSE in user_text(fake.only(DECISION).body)
    assert result.decision == QuantDecision.model_validate(DECISION_REPLY)
    assert result.usage.by_agent["trend_agent"].calls == 1  # no repair turn was needed


@pytest.mark.parametrize("provider", PROVIDERS)
async def test_tool_arguments_that_are_not_json_go_back_as_an_error_the_model_fixes(
    ts_env: WorkflowEnvironment, fake: AgentRoutedFake, provider: str
) -> None:
    broken, fixed = call_id(provider, "broken"), call_id(provider, "rsi")
    script_happy_path(fake, provider)
    fake.instead(
        INDICATOR, Scripted(tool_calls=(FakeToolCall("compute_rsi", BROKEN_ARGUMENTS, broken),))
    )
    fake.instead(
        INDICATOR_RESULTS,
        Scripted(tool_calls=(FakeToolCall("compute_rsi", {"timeperiod": 14}, fixed),)),
        Scripted(text=INDICATOR_REPORT),
    )

    result = await run(ts_env, provider)

    first, second = fake.routed[INDICATOR_RESULTS]
    error = tool_results(first.body, wire_of(provider))[broken]
    assert error.startswith("error: the arguments of compute_rsi are not a JSON object: ")
    assert repr(BROKEN_ARGUMENTS) in error
    assert "Call compute_rsi again with its arguments as one JSON object." in error
    assert json.loads(tool_results(second.body, wire_of(provider))[fixed])["indicator"] == "rsi"
    assert set(result.latest_indicators) == {"rsi"}
    assert result.indicator_report == INDICATOR_REPORT
    assert result.usage.by_agent["indicator_agent"].calls == 3


async def test_a_missing_key_parks_the_run_until_resumed_after_the_fix(
    ts_env: WorkflowEnvironment, fake: AgentRoutedFake, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.delenv("OPENAI_API_KEY")
    monkeypatch.delenv("QUANTDESK_OPENAI__API_KEY", raising=False)
    workflow_id = f"qa-vendor-nokey-{uuid.uuid4()}"
    handle = await ts_env.client.start_workflow(
        "QuantAgent",
        {"symbol": "GOOG", "timeframe": "1d", "llm": {"provider": "openai"}},
        id=workflow_id,
        task_queue=QUEUE,
        result_type=QuantAgentResult,
    )

    progress = await _until_waiting(handle, 3)
    assert set(progress.waiting) == {"indicator_agent round 1", "pattern_agent", "trend_agent"}
    for reason in progress.waiting.values():
        assert "OPENAI_API_KEY" in reason and KEY not in reason
    assert fake.requests == []
    history = await handle.fetch_history()
    attempts = [
        event.activity_task_started_event_attributes.attempt
        for event in history.events
        if event.event_type == EventType.EVENT_TYPE_ACTIVITY_TASK_STARTED
    ]
    assert attempts and set(attempts) == {1}  # nothing was retried: a key is not a glitch

    monkeypatch.setenv("OPENAI_API_KEY", KEY)
    script_happy_path(fake, "openai")
    await handle.signal("resume")
    result = await handle.result()

    assert result.decision == QuantDecision.model_validate(DECISION_REPLY)
    assert {request.api_key for request in fake.requests} == {KEY}


async def test_an_evaluation_window_whose_decision_stays_off_schema_fails_alone(
    ts_env: WorkflowEnvironment, fake: AgentRoutedFake, s3_settings: Settings
) -> None:
    # Two windows, one at a time: the first answers well, the second's decision agent
    # answers prose, then prose to both repair turns.
    script_happy_path(fake, "openai")
    script_happy_path(fake, "openai", decision="no JSON here, just my view: go long")
    fake.on(DECISION_REPAIR, Scripted(text="still prose"), Scripted(text="prose again"))

    result = await ts_env.client.execute_workflow(
        "Evaluate",
        {
            "windows": {"kind": "cut", "symbols": ["GOOG"], "timeframe": "1d", "count": 2},
            "llm": {"provider": "openai"},
            "concurrency": 1,
        },
        id=f"eval-vendor-{uuid.uuid4()}",
        task_queue=QUEUE,
        result_type=EvaluateResult,
    )

    assert (result.summary.windows, result.summary.failed, result.summary.overall.n) == (2, 1, 1)
    stored = json.loads(
        ObjectStore.from_settings(s3_settings).get_bytes(result.reports.json_table.report)
    )
    [error] = [w["error"] for w in stored["windows"] if w["error"] is not None]
    assert "decision_agent" in error and "QuantDecision" in error and "raw reply" in error
    assert len(fake.routed[DECISION_REPAIR]) == 2
