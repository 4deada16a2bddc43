"""The chat activity and the tool loop inside a workflow, on the time-skipping server."""

from __future__ import annotations

import re
import uuid
from collections.abc import AsyncIterator, Iterator
from datetime import timedelta

import pytest
import pytest_asyncio
from temporalio.client import WorkflowFailureError
from temporalio.exceptions import ApplicationError
from temporalio.testing import WorkflowEnvironment

from activities.llm import LlmActivities
from shared.config import load_settings
from shared.llm.contracts import ToolBatch, ToolCall, ToolResult
from shared.llm.providers import QUEUE_OFFLINE
from tests.flows import ProbeResult, ToolBatchProbe, ToolLoopProbe
from tests.probe_tools import CALLS, TEST_TOOLS_QUEUE
from tests.servers import running_workers
from workers.main import WorkerPlan
from workflows import retries

pytestmark = pytest.mark.asyncio(loop_scope="session")
QUEUE = "test-workflows"


@pytest_asyncio.fixture(scope="module", loop_scope="session")
async def workers(ts_env: WorkflowEnvironment) -> AsyncIterator[None]:
    from activities.tools import TOOL_ACTIVITIES

    settings = load_settings()
    plans = [
        WorkerPlan(queue=QUEUE, workflows=[ToolLoopProbe, ToolBatchProbe]),
        WorkerPlan(queue=TEST_TOOLS_QUEUE, activities=[*TOOL_ACTIVITIES], threads=True),
        WorkerPlan(queue=QUEUE_OFFLINE, activities=[LlmActivities(settings, QUEUE_OFFLINE).chat]),
    ]
    async with running_workers(ts_env.client, plans):
        yield


async def _run(env: WorkflowEnvironment, payload: object) -> ProbeResult:
    """Run the probe; a ``None`` payload starts it without any input."""
    return await env.client.execute_workflow(
        "ToolLoopProbe",
        args=[] if payload is None else [payload],
        id=f"probe-{uuid.uuid4()}",
        task_queue=QUEUE,
        result_type=ProbeResult,
    )


async def test_offline_tool_loop_reads_the_tool_output(
    ts_env: WorkflowEnvironment, workers: None
) -> None:
    result = await _run(ts_env, {"symbol": "ACME", "closes": [100, 101, 104, 108]})

    assert result.rounds == 2
    assert '"close": [100.0, 101.0, 104.0, 108.0]' in result.tool_contents[0]
    assert result.note.stance == "bullish"
    assert any("+8.00%" in point for point in result.note.key_points)
    assert result.usage.by_agent["probe_analyst"].calls == 2


async def test_falling_prices_give_the_opposite_conclusion(
    ts_env: WorkflowEnvironment, workers: None
) -> None:
    result = await _run(ts_env, {"symbol": "ACME", "closes": [108, 104, 101, 100]})

    assert result.note.stance == "bearish"


@pytest.fixture
def short_retry_budget() -> Iterator[None]:
    """A budget of seconds, so the retries of a tool that never heals end in the test."""
    retries.set_retry_budget(timedelta(seconds=4))
    try:
        yield
    finally:
        retries.set_retry_budget(retries.DEFAULT_RETRY_BUDGET)


async def test_a_failing_tool_reaches_the_model_as_an_error_message(
    ts_env: WorkflowEnvironment, workers: None, short_retry_budget: None
) -> None:
    result = await _run(ts_env, {"symbol": "BROKEN", "closes": [1, 2]})

    assert result.tool_contents[0].startswith("error: tool get_price_history failed")
    assert "vendor down" in result.tool_contents[0]
    assert result.note.stance == "neutral"


@pytest.mark.parametrize(
    ("payload", "field"),
    [
        ({"symbol": "", "closes": [1, 2]}, "symbol"),
        ({"symbol": "X", "closes": "not a list"}, "closes"),
        ("just a string", "(input)"),
        (None, "symbol"),
        ({"symbol": "X", "closes": [1, 2], "llm": {"provider": "nope"}}, "llm.provider"),
    ],
)
async def test_bad_input_fails_the_run_not_the_task(
    ts_env: WorkflowEnvironment, workers: None, payload: object, field: str
) -> None:
    with pytest.raises(WorkflowFailureError) as caught:
        await _run(ts_env, payload)

    cause = caught.value.cause
    assert isinstance(cause, ApplicationError)
    assert cause.non_retryable
    assert cause.type == "InvalidInput"
    assert f"`{field}`" in cause.message


def _counting(key: str, fail_first: int = 0, failure: str = "RuntimeError") -> ToolCall:
    arguments = {"key": key, "fail_first": fail_first, "failure": failure}
    return ToolCall(id=f"call-{key}", name="count_and_fail", arguments=arguments)


async def _batch(env: WorkflowEnvironment, *calls: ToolCall) -> list[ToolResult]:
    return await env.client.execute_workflow(
        "ToolBatchProbe",
        ToolBatch(calls=list(calls)),
        id=f"batch-{uuid.uuid4()}",
        task_queue=QUEUE,
        result_type=list[ToolResult],
    )


async def test_a_batch_retry_runs_only_the_calls_still_unanswered(
    ts_env: WorkflowEnvironment, workers: None
) -> None:
    key = uuid.uuid4().hex
    steady, flaky = f"{key}-steady", f"{key}-flaky"

    results = await _batch(ts_env, _counting(steady), _counting(flaky, fail_first=2))

    assert [r.call_id for r in results] == [f"call-{steady}", f"call-{flaky}"]
    assert [r.ok for r in results] == [True, True]
    assert results[1].content == f"{flaky} answered on attempt 3"
    # The answer the first attempt heartbeated is the one returned: it never ran again.
    assert CALLS[steady] == 1
    assert results[0].content == f"{steady} answered on attempt 1"


async def test_a_batch_out_of_retries_keeps_its_answers_and_reports_the_rest(
    ts_env: WorkflowEnvironment, workers: None, short_retry_budget: None
) -> None:
    key = uuid.uuid4().hex
    steady, broken = f"{key}-steady", f"{key}-broken"

    results = await _batch(ts_env, _counting(steady), _counting(broken, fail_first=1000))

    assert results[0].ok and results[0].content == f"{steady} answered on attempt 1"
    assert not results[1].ok
    # Its own reason alone, not the batch's.
    assert re.fullmatch(
        rf"error: tool count_and_fail failed: {broken} failed on attempt \d+", results[1].content
    )
    assert CALLS[steady] == 1
    assert CALLS[broken] > 1


async def test_a_call_no_retry_can_fix_is_answered_with_its_error_at_once(
    ts_env: WorkflowEnvironment, workers: None
) -> None:
    key = uuid.uuid4().hex
    steady, buggy = f"{key}-steady", f"{key}-buggy"

    results = await _batch(
        ts_env, _counting(steady), _counting(buggy, fail_first=1, failure="TypeError")
    )

    assert results[0].ok
    assert results[1].content == f"error: tool count_and_fail failed: {buggy} failed on attempt 1"
    assert CALLS[buggy] == 1
    assert CALLS[steady] == 1
