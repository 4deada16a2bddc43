"""The langchain provider: real LangChain integrations over the wire, refusals at worker start.

``langchain-openai``'s ``ChatOpenAI`` and ``langchain-anthropic``'s ``ChatAnthropic`` are
the classes the row names; each speaks its vendor's wire format to the stand-in
(``FakeLlmServer``), which answers as the vendor would. Everything else is real: the chat
activity, the time-skipping Temporal server, S3, the tools, the charts.

The end-to-end runs share one stand-in: the QuantAgent's agents are answered from scripts
queued per agent (``AgentRoutedFake``), and every other request (a Pipeline's) as a model
following its instructions would: a value of the schema its request or its prompt asks for.
"""

from __future__ import annotations

import json
import os
import uuid
from collections.abc import AsyncIterator, Iterator
from datetime import datetime, timedelta
from pathlib import Path
from typing import Any

import pytest
import pytest_asyncio
from langchain_core.language_models.chat_models import BaseChatModel
from langchain_core.outputs import ChatResult
from temporalio.exceptions import ApplicationError
from temporalio.testing import ActivityEnvironment, WorkflowEnvironment

from activities.charts import ChartActivities
from activities.llm import LlmActivities
from shared.agents.quantagent import PatternReport, QuantDecision, TrendReport
from shared.config import Settings, load_settings
from shared.data.bundled import BundledVendor
from shared.data.local import LocalVendor
from shared.data.router import DEFAULT_ROUTES, DataRouter
from shared.data.sim import SimVendor
from shared.errors import ConfigError
from shared.llm.contracts import ChatMessage, ChatRequest, ToolSpec
from shared.llm.providers import QUEUE_LANGCHAIN
from shared.memory import MemoryStore
from shared.queues import CHARTS_QUEUE
from tests.cli_process import run_quantdesk
from tests.fakes.llm_server import (
    WIRE_BY_PATH,
    FakeToolCall,
    RecordedRequest,
    Scripted,
    Wire,
    _Answer,
    _render,
)
from tests.fakes.vendor_schemas import instance_of
from tests.servers import isolated_settings, pipeline_workers
from tests.test_quantagent_vendors import (
    DECISION,
    DECISION_REPLY,
    FIVE_TOOLS,
    INDICATOR,
    INDICATOR_REPORT,
    INDICATOR_RESULTS,
    PATTERN,
    PATTERN_REPLY,
    TREND,
    TREND_REPLY,
    AgentRoutedFake,
    images,
    offered_tools,
    route,
    script_happy_path,
    tool_results,
)
from workers.main import WorkerPlan, plan_for
from workers.roles import WorkerRole, unanswered
from workflows.pipeline_contracts import PipelineResult
from workflows.quantagent import QuantAgentResult, QuantAgentWorkflow

on_the_session_loop = pytest.mark.asyncio(loop_scope="session")
KEY = "sk-test-langchain-DO-NOT-LEAK-9"
CLASSES = {
    Wire.OPENAI: "langchain_openai.ChatOpenAI",
    Wire.ANTHROPIC: "langchain_anthropic.ChatAnthropic",
}
MODELS = {Wire.OPENAI: "gpt-house-mini", Wire.ANTHROPIC: "claude-house-haiku"}
QUEUE = "test-langchain-pipeline"
QA_QUEUE = "test-langchain-quantagent"
AS_OF = "2012-06-01T00:00:00Z"
PNG_SIGNATURE = b"\x89PNG\r\n\x1a\n"
NOTE = {"stance": "bullish", "confidence": 0.7, "key_points": ["closes rose"], "summary": "Up."}
PROSE = "Closes rose on rising volume; the evidence leans constructive but not decisive."
_INSTRUCTION = "validates against the JSON schema of `"


def _langchain(wire: Wire, base_url: str, **kwargs: object) -> dict[str, object]:
    """The provider block naming ``wire``'s integration, pointed at the stand-in."""
    return {
        "class": CLASSES[wire],
        "kwargs": {"model": MODELS[wire], "base_url": base_url, **kwargs},
        "api_key": KEY,
    }


def _base_url(fake: Any, wire: Wire) -> str:
    return str(fake.base_url_openai if wire is Wire.OPENAI else fake.base_url_anthropic)


# -- refused when the worker starts ---------------------------------------------------------


class ToolessChat(BaseChatModel):
    """A chat model class with no tool calling (no ``bind_tools``): it cannot serve the
    analysts, so a worker naming it must not start. It is never called."""

    model: str = "toolless"

    @property
    def _llm_type(self) -> str:
        return "toolless"

    def _generate(self, messages: list[Any], stop: Any = None, **kwargs: Any) -> ChatResult:
        raise AssertionError("a class refused at start is never called")


def _start_worker(**block: object) -> None:
    """What `quantdesk worker --role llm-langchain` does first: plan the role."""
    plan_for(WorkerRole.LLM_LANGCHAIN, load_settings(langchain=block))


@pytest.mark.parametrize(
    ("block", "setting", "words"),
    [
        (
            {"class": "langchain_nowhere.ChatNothing", "kwargs": {"model": "m"}},
            "QUANTDESK_LANGCHAIN__CLASS",
            "cannot import 'langchain_nowhere'",
        ),
        (
            {"class": "langchain_core.messages.AIMessage", "kwargs": {"model": "m"}},
            "QUANTDESK_LANGCHAIN__CLASS",
            "not a LangChain chat model class",
        ),
        (
            {"class": f"{__name__}.ToolessChat", "kwargs": {"model": "m"}},
            "QUANTDESK_LANGCHAIN__CLASS",
            "ToolessChat cannot call tools (it has no bind_tools)",
        ),
        (
            {"class": "ChatOpenAI", "kwargs": {"model": "m"}},
            "QUANTDESK_LANGCHAIN__CLASS",
            "not an import path",
        ),
        (
            {"class": CLASSES[Wire.OPENAI], "kwargs": {"model": "m", "temprature": 0}},
            "QUANTDESK_LANGCHAIN__KWARGS",
            "takes no argument temprature (did you mean temperature?)",
        ),
        (
            {"class": CLASSES[Wire.OPENAI], "kwargs": {"model": "m", "max_retries": 3}},
            "QUANTDESK_LANGCHAIN__KWARGS",
            "max_retries is set by quantdesk (Temporal retries every call",
        ),
        (
            {"class": CLASSES[Wire.ANTHROPIC], "kwargs": {"model": "m", "timeout": 5}},
            "QUANTDESK_LANGCHAIN__KWARGS",
            "timeout is set by quantdesk (the timeout is QUANTDESK_LANGCHAIN__TIMEOUT_SECONDS)",
        ),
        (
            {"class": CLASSES[Wire.ANTHROPIC], "kwargs": {}, "api_key": KEY},
            "QUANTDESK_LANGCHAIN__QUICK_MODEL",
            "names no model",
        ),
        (
            {"class": CLASSES[Wire.ANTHROPIC], "kwargs": {"model": "m", "temperature": "hot"}},
            "QUANTDESK_LANGCHAIN__KWARGS",
            "could not be built with model 'm'",
        ),
    ],
)
def test_a_class_or_argument_that_cannot_serve_is_refused_at_worker_start(
    block: dict[str, object], setting: str, words: str
) -> None:
    with pytest.raises(ConfigError) as caught:
        _start_worker(**block)

    assert caught.value.setting == setting
    assert words in str(caught.value)


def test_quantdesk_worker_refuses_before_reaching_for_temporal(tmp_path: Path) -> None:
    env = {
        **os.environ,
        "QUANTDESK_DATA_DIR": str(tmp_path),
        "QUANTDESK_TEMPORAL__ADDRESS": "127.0.0.1:9",  # nothing listens: never reached
        "QUANTDESK_LANGCHAIN__CLASS": "langchain_nowhere.ChatNothing",
    }

    result = run_quantdesk(env, "worker", "--role", "llm-langchain", timeout=120)

    assert result.returncode == 1
    assert "configuration `QUANTDESK_LANGCHAIN__CLASS`: cannot import" in result.stderr
    assert "Temporal" not in result.stderr


def test_a_key_written_into_the_arguments_is_refused_without_being_repeated() -> None:
    with pytest.raises(ConfigError) as caught:
        _start_worker(**{"class": CLASSES[Wire.OPENAI], "kwargs": {"model": "m", "api_key": KEY}})

    assert caught.value.setting == "QUANTDESK_LANGCHAIN__KWARGS"
    assert "QUANTDESK_LANGCHAIN__API_KEY" in str(caught.value)
    assert KEY not in str(caught.value)


def test_arguments_that_are_not_json_are_refused_without_being_repeated(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    monkeypatch.setenv("QUANTDESK_LANGCHAIN__KWARGS", f'{{"api_key": "{KEY}"')

    with pytest.raises(ConfigError) as caught:
        load_settings()

    assert "QUANTDESK_LANGCHAIN__KWARGS: Value error, not valid JSON" in str(caught.value)
    assert KEY not in str(caught.value)


def test_without_a_class_the_role_says_what_to_set_and_a_call_is_refused() -> None:
    settings = load_settings()

    assert unanswered(settings)[WorkerRole.LLM_LANGCHAIN] == (
        "no LangChain chat model class is set (QUANTDESK_LANGCHAIN__CLASS)"
    )
    chat = LlmActivities(settings, QUEUE_LANGCHAIN)
    assert chat.chat_models == {}  # nothing imported, nothing refused: the role just waits


@on_the_session_loop
async def test_a_call_to_a_worker_without_a_class_fails_naming_the_setting() -> None:
    request = ChatRequest(agent="a", provider="langchain", messages=[_user()])

    with pytest.raises(ApplicationError) as caught:
        await ActivityEnvironment().run(
            LlmActivities(load_settings(), QUEUE_LANGCHAIN).chat, request
        )

    assert caught.value.non_retryable
    assert "QUANTDESK_LANGCHAIN__CLASS" in caught.value.message


# -- one call through each integration -------------------------------------------------------


def _user(text: str = "Assess ACME.") -> ChatMessage:
    return ChatMessage(role="user", content=text)


@pytest.fixture(params=list(Wire), ids=lambda wire: wire.value)
def wire(request: pytest.FixtureRequest) -> Wire:
    return Wire(request.param)


@pytest.fixture
def fake() -> Iterator[AgentRoutedFake]:
    with AgentRoutedFake() as server:
        yield server


def _chat_worker(fake: AgentRoutedFake, wire: Wire, **block: object) -> LlmActivities:
    settings = load_settings(langchain=_langchain(wire, _base_url(fake, wire)) | block)
    return LlmActivities(settings, QUEUE_LANGCHAIN)


async def _call(chat: LlmActivities, **fields: object) -> Any:
    request = ChatRequest(agent="test_agent", provider="langchain", messages=[_user()], **fields)
    return await ActivityEnvironment().run(chat.chat, request)


@on_the_session_loop
async def test_a_structured_reply_goes_through_the_integration_s_own_mechanism(
    fake: AgentRoutedFake, wire: Wire
) -> None:
    fake.on("unknown", Scripted(text=json.dumps(NOTE), usage=(123, 45)))

    response = await _call(_chat_worker(fake, wire), response_schema="AnalystNote")

    assert response.structured == NOTE
    assert (response.usage.calls, response.usage.input_tokens) == (1, 123)
    assert response.usage.output_tokens == 45
    assert response.model == MODELS[wire] and response.provider == "langchain"
    [sent] = fake.requests
    assert sent.body["model"] == MODELS[wire]
    assert sent.api_key == KEY
    if wire is Wire.OPENAI:  # json_schema, named after the schema
        assert sent.body["response_format"]["json_schema"]["name"] == "AnalystNote"
    else:  # a tool the model must call
        assert sent.body["tool_choice"] == {"type": "tool", "name": "AnalystNote"}
        assert [tool["name"] for tool in sent.body["tools"]] == ["AnalystNote"]


@on_the_session_loop
async def test_a_reply_that_misses_the_schema_gets_our_repair_turn(
    fake: AgentRoutedFake, wire: Wire
) -> None:
    fake.on("unknown", Scripted(text=json.dumps({**NOTE, "confidence": 170})))
    fake.on("unknown", Scripted(text=json.dumps(NOTE)))

    response = await _call(_chat_worker(fake, wire), response_schema="AnalystNote")

    assert response.structured == NOTE
    assert (response.usage.calls, response.usage.repairs) == (2, 1)
    assert "less than or equal to 1" in json.dumps(fake.requests[1].body)


@on_the_session_loop
async def test_tools_are_bound_and_the_call_comes_back(fake: AgentRoutedFake, wire: Wire) -> None:
    fake.on("unknown", Scripted(tool_calls=(FakeToolCall("compute_rsi", {"timeperiod": 9}),)))
    tool = ToolSpec(
        name="compute_rsi",
        description="RSI of the closes",
        parameters={"type": "object", "properties": {"timeperiod": {"type": "integer"}}},
    )

    response = await _call(_chat_worker(fake, wire), tools=[tool])

    [call] = response.tool_calls
    assert (call.name, call.arguments) == ("compute_rsi", {"timeperiod": 9})
    assert offered_tools(fake.last_request.body, wire) == {"compute_rsi": tool.parameters}


@pytest.mark.parametrize(
    ("script", "retryable", "words"),
    [
        (
            Scripted(status=401, message="Incorrect API key provided: {key}."),
            False,
            "refused the API key",
        ),
        (Scripted(status=500, message="The server had an error."), True, "HTTP 500"),
        (Scripted(status=404, message="The model `{model}` does not exist."), False, "unknown"),
    ],
)
@on_the_session_loop
async def test_vendor_failures_map_to_our_errors_with_one_request_per_attempt(
    fake: AgentRoutedFake, wire: Wire, script: Scripted, retryable: bool, words: str
) -> None:
    fake.on("unknown", script)

    with pytest.raises(ApplicationError) as caught:
        await _call(_chat_worker(fake, wire))

    assert caught.value.non_retryable is not retryable
    assert words in caught.value.message
    assert KEY not in caught.value.message
    assert len(fake.requests) == 1  # the integration's own retries are off


@on_the_session_loop
async def test_a_key_from_the_class_s_own_variable_is_sent_and_never_echoed(
    fake: AgentRoutedFake, monkeypatch: pytest.MonkeyPatch
) -> None:
    own = "sk-own-variable-DO-NOT-LEAK-3"
    monkeypatch.setenv("OPENAI_API_KEY", own)
    fake.on("unknown", Scripted(text="fine"))
    fake.on("unknown", Scripted(status=401, message="Incorrect API key provided: {key}."))
    chat = _chat_worker(fake, Wire.OPENAI, api_key=None)

    assert (await _call(chat)).text == "fine"
    with pytest.raises(ApplicationError) as caught:
        await _call(chat)

    assert [request.api_key for request in fake.requests] == [own, own]
    assert own not in caught.value.message
    assert "refused the API key" in caught.value.message


@on_the_session_loop
async def test_a_context_overflow_names_the_window_setting(
    fake: AgentRoutedFake, wire: Wire
) -> None:
    fake.on("unknown", Scripted(status=400, overflow=(140_000, 128_000)))

    with pytest.raises(ApplicationError) as caught:
        await _call(_chat_worker(fake, wire))

    assert caught.value.non_retryable
    assert "longer than its context window" in caught.value.message
    assert "QUANTDESK_LANGCHAIN__CONTEXT_TOKENS" in caught.value.message
    assert "140000" in caught.value.message  # the vendor's own count, quoted
    assert len(fake.requests) == 1


@on_the_session_loop
async def test_a_rate_limit_carries_the_vendor_s_wait_to_temporal(
    fake: AgentRoutedFake, wire: Wire
) -> None:
    fake.on("unknown", Scripted(status=429, message="Slow down.", headers={"retry-after": "7"}))

    with pytest.raises(ApplicationError) as caught:
        await _call(_chat_worker(fake, wire))

    assert not caught.value.non_retryable
    assert caught.value.next_retry_delay == timedelta(seconds=7)
    assert len(fake.requests) == 1


# -- QuantAgent and a Pipeline end to end -------------------------------------------------------


def _schema_asked(request: RecordedRequest) -> dict[str, Any] | None:
    """The schema a request's system prompt asks the reply to fit (our schema instruction)."""
    body = request.body
    if WIRE_BY_PATH[request.path] is Wire.ANTHROPIC:
        system = body.get("system", "")
        texts = [system] if isinstance(system, str) else [b.get("text", "") for b in system]
    else:
        texts = [m["content"] for m in body["messages"] if m["role"] == "system"]
    for text in texts:
        if isinstance(text, str) and _INSTRUCTION in text:
            schema: dict[str, Any] = json.loads(text[text.rindex("\n{") + 1 :])
            return schema
    return None


def _reply_of(schema: dict[str, Any]) -> dict[str, Any]:
    """A value of ``schema`` with its nullable fields left empty, as a careful model leaves
    what it is not asked to fill (levels a trader may omit, which must otherwise be ordered)."""
    value: dict[str, Any] = instance_of(schema, PROSE)
    for name, field in schema.get("properties", {}).items():
        if any(branch.get("type") == "null" for branch in field.get("anyOf", [])):
            value[name] = None
    return value


class DeskFake(AgentRoutedFake):
    """QuantAgent's agents from their scripts; every other request answered as a model that
    follows its instructions: the schema on the wire, else the one in its prompt, else prose."""

    def answer(self, request: RecordedRequest) -> _Answer:
        wire = WIRE_BY_PATH.get(request.path)
        name = route(request) if wire is not None and request.body else "unknown"
        with self._lock:
            queued = bool(self.replies.get(name))
        if queued or wire is None:
            return super().answer(request)
        with self._lock:
            self.requests.append(request)
            self.routed[name].append(request)
        schema = _schema_asked(request)
        text = json.dumps(_reply_of(schema)) if schema else PROSE
        return _render(Scripted(text=text), wire, request)


@pytest.fixture(scope="module", params=list(Wire), ids=lambda wire: wire.value)
def desk_wire(request: pytest.FixtureRequest) -> Wire:
    return Wire(request.param)


@pytest.fixture(scope="module")
def desk_fake() -> Iterator[DeskFake]:
    with DeskFake() as server:
        yield server


@pytest_asyncio.fixture(scope="module", loop_scope="session")
async def desk(
    ts_env: WorkflowEnvironment,
    s3_settings: Settings,
    tmp_path_factory: pytest.TempPathFactory,
    desk_fake: DeskFake,
    desk_wire: Wire,
) -> AsyncIterator[DeskFake]:
    """A Pipeline's and a QuantAgent's workers, their chat on the langchain row."""
    folder = tmp_path_factory.mktemp(f"langchain-{desk_wire.value}")
    settings = isolated_settings(
        s3_settings, folder, QUEUE, langchain=_langchain(desk_wire, _base_url(desk_fake, desk_wire))
    )
    (folder / "data").mkdir()
    vendors = {
        "local": LocalVendor(folder / "data"),
        "bundled": BundledVendor(),
        "sim": SimVendor(seed=settings.data_seed),
    }
    router = DataRouter(vendors, DEFAULT_ROUTES)
    charts = ChartActivities(settings=settings)
    extra = [
        WorkerPlan(queue=QA_QUEUE, workflows=[QuantAgentWorkflow]),
        WorkerPlan(
            queue=CHARTS_QUEUE,
            activities=[charts.render_pattern_chart, charts.render_trend_chart],
            threads=True,
        ),
    ]
    async with pipeline_workers(
        ts_env.client,
        QUEUE,
        settings,
        router,
        MemoryStore(f"sqlite:///{folder / 'memory.db'}"),
        chat=LlmActivities(settings, QUEUE_LANGCHAIN),
        extra=extra,
    ):
        yield desk_fake


@on_the_session_loop
async def test_quantagent_runs_through_the_integration_with_its_tools_and_two_charts(
    ts_env: WorkflowEnvironment, desk: DeskFake, desk_wire: Wire
) -> None:
    desk.reset()
    script_happy_path(desk, desk_wire.value)

    result = await ts_env.client.execute_workflow(
        "QuantAgent",
        {"symbol": "GOOG", "timeframe": "1d", "llm": {"provider": "langchain"}},
        id=f"qa-langchain-{uuid.uuid4()}",
        task_queue=QA_QUEUE,
        result_type=QuantAgentResult,
    )

    assert set(offered_tools(desk.only(INDICATOR).body, desk_wire)) == FIVE_TOOLS
    returned = tool_results(desk.only(INDICATOR_RESULTS).body, desk_wire)
    assert len(returned) == 2
    assert all(json.loads(text)["indicator"] in {"rsi", "macd"} for text in returned.values())
    for name in (PATTERN, TREND):
        [(media_type, png)] = images(desk.only(name).body, desk_wire)
        assert media_type == "image/png" and png.startswith(PNG_SIGNATURE)
    assert result.chart_input == "image"
    assert result.indicator_report == INDICATOR_REPORT
    assert result.pattern_report == PatternReport.model_validate(PATTERN_REPLY)
    assert result.trend_report == TrendReport.model_validate(TREND_REPLY)
    assert result.decision == QuantDecision.model_validate(DECISION_REPLY)
    assert desk.only(DECISION).body["model"] == MODELS[desk_wire]
    assert result.usage.total.calls == 5 and result.usage.total.input_tokens == 5 * 11


@on_the_session_loop
async def test_a_pipeline_runs_through_the_integration_to_a_decision(
    ts_env: WorkflowEnvironment, desk: DeskFake, desk_wire: Wire
) -> None:
    desk.reset()
    symbol = SimVendor().universe(datetime.fromisoformat(AS_OF))[0].symbol

    result = await ts_env.client.execute_workflow(
        "Pipeline",
        {"symbol": symbol, "as_of": AS_OF, "llm": {"provider": "langchain"}},
        id=f"pipeline-langchain-{uuid.uuid4()}",
        task_queue=QUEUE,
        result_type=PipelineResult,
    )

    calls = desk.routed["unknown"]
    assert result.decision is not None
    assert result.usage.total.calls == len(calls) > 10
    assert {request.body["model"] for request in calls} == {MODELS[desk_wire]}
    assert any(request.body.get("tools") for request in calls)  # the analysts' tool loops
