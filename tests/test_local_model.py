"""A real model answers: SmolLM2-135M behind llama.cpp's server, through provider ``llamacpp``.

Nothing here is scripted. The server is the one `quantdesk up` runs (``local_llm_server``),
the calls go through the ``chat`` activity and the OpenAI SDK, and QuantAgent runs whole
on the time-skipping Temporal server with real tools, charts and S3. A 135M model is often
wrong, and what it says differs from one CPU to another even at temperature 0 with a
seed; what is asserted is what the product promises whatever the model says: a reply
fits our schema or fails as designed naming the setting to change, a tool call it writes
comes back usable, and a run ends with a valid decision or waits on a designed outcome
that names the step, the reason and the variable to change.
"""

from __future__ import annotations

import asyncio
import re
import uuid
from collections.abc import AsyncIterator
from typing import Any

import pytest
import pytest_asyncio
from temporalio.client import WorkflowHandle
from temporalio.exceptions import ApplicationError
from temporalio.testing import ActivityEnvironment, WorkflowEnvironment

from activities.llm import LlmActivities
from shared.agents import quantagent as qa
from shared.config import Settings, load_settings
from shared.llm.contracts import ChatMessage, ChatRequest
from shared.llm.providers import QUEUE_COMPATIBLE
from shared.market.sources import BundledSource
from shared.ta.trend_summary import summarize_trendlines
from shared.tools.indicator_tools import INDICATOR_TOOL_NAMES
from shared.tools.registry import tool_specs
from tests.local_llm import LocalLlmServer
from tests.servers import quantagent_plans, running_workers
from workflows.quantagent import QuantAgentResult

pytestmark = [pytest.mark.asyncio(loop_scope="session"), pytest.mark.slow]
QUEUE = "test-local-model"
DESIGNED_FAILURES = {"StructuredOutputError", "PromptTooLong"}
"""The failures a model's reply can meet by design (each names the setting to change)."""


SAMPLING = {"temperature": 0, "seed": 7, "reply_tokens": 384}
"""Deterministic where llama.cpp allows it; nothing below depends on what the model says.
Replies are capped well below the default 1024 tokens: a 135M model that rambles to the cap
costs seconds per call on a shared core, and a reply cut short is a designed outcome too."""


STRUCTURED_WINDOW = 15
"""Bars in the structured-reply test's trend prompt."""


def _settings(server: LocalLlmServer, **extra: object) -> Settings:
    return load_settings(llamacpp={"base_url": server.url, **SAMPLING}, **extra)


def _chat(server: LocalLlmServer) -> LlmActivities:
    return LlmActivities(_settings(server), QUEUE_COMPATIBLE)


def _request(*messages: ChatMessage, **fields: object) -> ChatRequest:
    # temperature 0: the same build of the same model answers the same way
    return ChatRequest(
        agent="test_agent",
        provider="llamacpp",
        messages=list(messages),
        temperature=0,
        **fields,
    )


async def test_the_local_model_chats(local_llm_server: LocalLlmServer) -> None:
    request = _request(ChatMessage(role="user", content="Name one US stock index."))

    response = await ActivityEnvironment().run(_chat(local_llm_server).chat, request)

    assert response.provider == "llamacpp" and response.model == "local"
    assert response.usage.input_tokens > 5 and response.usage.output_tokens > 0


def _names_a_setting(message: str) -> bool:
    """Whether a failure says which variable to change (``QUANTDESK_LLAMACPP__...``)."""
    return re.search(r"QUANTDESK_[A-Z0-9_]+__[A-Z_]+", message) is not None


async def test_a_structured_reply_is_valid_for_our_schema_or_fails_naming_the_fix(
    local_llm_server: LocalLlmServer,
) -> None:
    # A short window: the schema path is the point here, and the whole 50-bar prompt (2,800
    # tokens, half a minute on one loaded core) is read in the QuantAgent run below.
    bars = BundledSource().read("GOOG", "1d", lookback=STRUCTURED_WINDOW)
    lines = summarize_trendlines(
        [bar.high for bar in bars], [bar.low for bar in bars], [bar.close for bar in bars]
    )
    messages = qa.trend_text_messages("GOOG", "1d", bars, lines)
    request = _request(*messages, response_schema="TrendReport", max_tokens=300)

    try:
        response = await ActivityEnvironment().run(_chat(local_llm_server).chat, request)
    except ApplicationError as error:
        assert error.type in DESIGNED_FAILURES and error.non_retryable, error
        assert _names_a_setting(error.message), error.message
        return
    assert response.structured is not None
    report = qa.TrendReport.model_validate(response.structured)
    assert 0 <= report.confidence <= 1 and report.analysis


async def test_a_tool_call_the_model_writes_comes_back_usable(
    local_llm_server: LocalLlmServer,
) -> None:
    tools = tool_specs(INDICATOR_TOOL_NAMES, fixed=["bars"])
    messages = qa.indicator_messages("GOOG", "1d", 100, "2012-06-01T00:00:00+00:00")
    request = _request(*messages, tools=tools, max_tokens=200)

    response = await ActivityEnvironment().run(_chat(local_llm_server).chat, request)

    # Calls written as text are recovered, each for a tool offered; none leaves only text.
    assert response.tool_calls or response.text.strip()
    assert {call.name for call in response.tool_calls} <= set(INDICATOR_TOOL_NAMES)
    assert response.usage.recovered_tool_calls == len(response.tool_calls)


@pytest_asyncio.fixture(scope="module", loop_scope="session")
async def workers(
    ts_env: WorkflowEnvironment, s3_settings: Settings, local_llm_server: LocalLlmServer
) -> AsyncIterator[None]:
    settings = _settings(
        local_llm_server, data_dir=s3_settings.data_dir, s3=s3_settings.s3.model_dump()
    )
    async with running_workers(ts_env.client, quantagent_plans(QUEUE, settings, QUEUE_COMPATIBLE)):
        yield


PARK_POLL_SECONDS = 2.0


async def _outcome(
    handle: WorkflowHandle[Any, QuantAgentResult],
) -> QuantAgentResult | dict[str, Any]:
    """The result, or the progress of a run that parked (a reply nothing repaired waits for
    ``resume``: the time-skipping server would wait with it forever)."""
    finished = asyncio.ensure_future(handle.result())
    while not finished.done():
        await asyncio.wait({finished}, timeout=PARK_POLL_SECONDS)
        if not finished.done():
            progress: dict[str, Any] = await handle.query("progress", result_type=dict)
            if progress["waiting"]:
                await handle.cancel()
                return progress
    return finished.result()


@pytest.mark.timeout(900)
async def test_quantagent_decides_through_the_local_model_or_parks_saying_why(
    ts_env: WorkflowEnvironment, workers: None
) -> None:
    handle = await ts_env.client.start_workflow(
        "QuantAgent",
        {
            "symbol": "GOOG",
            "timeframe": "1d",
            "as_of": "2012-06-01T00:00:00Z",
            "lookback": qa.TREND_WINDOW + 10,
            "llm": {"provider": "llamacpp"},
        },
        id=f"qa-local-{uuid.uuid4()}",
        task_queue=QUEUE,
        result_type=QuantAgentResult,
    )

    outcome = await _outcome(handle)

    if isinstance(outcome, dict):
        # Waits as designed: a step nothing can replace says which step, why, and what to set.
        (step, reason), *_ = outcome["waiting"].items()
        agents = {qa.INDICATOR_AGENT, qa.PATTERN_AGENT, qa.TREND_AGENT, qa.DECISION_AGENT}
        assert step.split(" ")[0] in agents, outcome  # e.g. "indicator_agent round 3"
        assert _names_a_setting(reason), reason
        assert "llamacpp" in reason.lower() or "local" in reason, reason
        return
    assert outcome.decision.decision in set(qa.Direction)
    assert 1.2 <= outcome.decision.risk_reward_ratio <= 1.8
    assert outcome.chart_input == "text"
    assert set(outcome.usage.by_agent) >= {qa.INDICATOR_AGENT, qa.DECISION_AGENT}
    assert outcome.usage.total.cost_usd == 0
