"""A failure only a person can fix parks the call until ``resume``; finished work is kept.

The probe workflow's tool loop talks to the fake OpenAI server: the first turn asks
for the tool, the second is refused with a 401. The run must wait (not fail) with
the reason in its details and its ``waiting`` query, then, once resumed, retry only
that call: the tool is not run again and the first turn is not asked again.
"""

from __future__ import annotations

import asyncio
import uuid
from collections.abc import AsyncIterator, Iterator

import pytest
import pytest_asyncio
from temporalio.api.sdk.v1 import WorkflowMetadata
from temporalio.client import WorkflowHandle
from temporalio.testing import WorkflowEnvironment

from activities.llm import LlmActivities
from activities.tools import TOOL_ACTIVITIES
from shared.config import load_settings
from shared.llm.providers import QUEUE_OPENAI
from tests.fakes.llm_server import FakeLlmServer, Scripted
from tests.flows import ProbeResult, ToolLoopProbe
from tests.probe_tools import TEST_TOOLS_QUEUE
from tests.servers import running_workers
from workers.main import WorkerPlan

pytestmark = pytest.mark.asyncio(loop_scope="session")
QUEUE = "test-resume"
KEY = "sk-resume-test-0123456789abcdef"
NOTE = {"stance": "bullish", "confidence": 0.6, "key_points": ["closes rose"], "summary": "Up."}


@pytest.fixture(scope="module")
def fake() -> Iterator[FakeLlmServer]:
    with FakeLlmServer() as server:
        yield server


@pytest_asyncio.fixture(scope="module", loop_scope="session")
async def workers(ts_env: WorkflowEnvironment, fake: FakeLlmServer) -> AsyncIterator[None]:
    settings = load_settings(openai={"api_key": KEY, "base_url": fake.base_url_openai})
    plans = [
        WorkerPlan(queue=QUEUE, workflows=[ToolLoopProbe]),
        WorkerPlan(queue=TEST_TOOLS_QUEUE, activities=[*TOOL_ACTIVITIES], threads=True),
        WorkerPlan(queue=QUEUE_OPENAI, activities=[LlmActivities(settings, QUEUE_OPENAI).chat]),
    ]
    async with running_workers(ts_env.client, plans):
        yield


async def _start_probe(ts_env: WorkflowEnvironment) -> WorkflowHandle[ToolLoopProbe, ProbeResult]:
    """The probe's tool loop on ACME through the fake OpenAI server."""
    return await ts_env.client.start_workflow(
        "ToolLoopProbe",
        {"symbol": "ACME", "closes": [10, 11, 12], "llm": {"provider": "openai"}},
        id=f"resume-{uuid.uuid4()}",
        task_queue=QUEUE,
        result_type=ProbeResult,
    )


async def _until_waiting(handle: WorkflowHandle[ToolLoopProbe, ProbeResult]) -> dict[str, str]:
    for _ in range(300):
        waiting = await handle.query("waiting", result_type=dict[str, str])
        if waiting:
            return waiting
        await asyncio.sleep(0.05)
    raise AssertionError("the run never reported a waiting call")


async def test_a_401_waits_for_resume_and_then_finishes_without_redoing_work(
    ts_env: WorkflowEnvironment, workers: None, fake: FakeLlmServer
) -> None:
    fake.reply_tool_call("get_price_history", {"symbol": "ACME"})
    fake.unauthorized()
    handle = await _start_probe(ts_env)

    waiting = await _until_waiting(handle)
    [(step, reason)] = waiting.items()
    assert step == "probe_analyst round 2"
    assert "401" in reason or "API key" in reason
    assert KEY not in reason
    metadata = await handle.query("__temporal_workflow_metadata", result_type=WorkflowMetadata)
    assert "Waiting for a fix" in metadata.current_details
    assert "quantdesk resume" in metadata.current_details
    assert len(fake.requests) == 2

    fake.reply_json(NOTE)  # the key is fixed: the vendor answers again
    await handle.signal("resume")
    result = await handle.result()

    assert result.note.stance == "bullish"
    assert result.rounds == 2
    assert len(result.tool_contents) == 1  # the tool ran once, before the pause
    assert len(fake.requests) == 3  # only the refused call was asked again
    assert fake.requests[1].body["messages"] == fake.requests[2].body["messages"]
    assert await handle.query("waiting", result_type=dict[str, str]) == {}


async def _requests_reach(fake: FakeLlmServer, count: int, within: float) -> int:
    """How many requests the fake has seen once ``count`` arrived or ``within`` s passed
    (polled, not by waiting on the run: that would let the test server skip time)."""
    deadline = asyncio.get_running_loop().time() + within
    while len(fake.requests) < count and asyncio.get_running_loop().time() < deadline:
        await asyncio.sleep(0.05)
    return len(fake.requests)


async def test_a_resume_sent_while_the_call_is_out_is_not_lost(
    ts_env: WorkflowEnvironment, workers: None, fake: FakeLlmServer
) -> None:
    # The fix lands while the call that will be refused is still out (a limit raised as the
    # call is refused): the refusal must not park the call waiting for a second resume.
    start = len(fake.requests)
    fake.reply_tool_call("get_price_history", {"symbol": "ACME"})
    fake.script(Scripted(status=401, message="Incorrect API key provided.", delay=1.5))
    fake.reply_json(NOTE)
    handle = await _start_probe(ts_env)
    assert await _requests_reach(fake, start + 2, within=30) == start + 2  # the refused call is out

    await handle.signal("resume")

    assert await _requests_reach(fake, start + 3, within=30) == start + 3  # asked again, unasked
    result = await handle.result()
    assert result.note.stance == "bullish" and result.rounds == 2
