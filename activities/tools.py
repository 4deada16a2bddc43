"""The ``run_tools`` activity: the tool calls of a chat round, on the ``tools`` queue.

The data router and the object store are built on the first call and kept for the
worker's life. An answer over the claim check's threshold is stored in S3 and travels
as a claim (``shared.storage.claim_check``), so it is not written into the history of
every chat round that reads it.
"""

from __future__ import annotations

import contextvars
import time
from collections.abc import Callable
from concurrent.futures import ThreadPoolExecutor
from functools import cache

from temporalio import activity
from temporalio.common import MetricMeter
from temporalio.exceptions import ApplicationError

from activities.failures import as_temporal_failures
from activities.group import activity_on
from activities.heartbeat import heartbeating, keep_alive
from shared.config import load_settings
from shared.llm.contracts import ToolBatch, ToolBatchResult, ToolCall, ToolRequest, ToolResult
from shared.observability.metrics import tool_called
from shared.queues import TOOLS_QUEUE
from shared.storage.claim_check import ClaimCheck
from shared.storage.objects import ObjectStore
from shared.tools import catalog  # noqa: F401  (registers the product's tools)
from shared.tools.registry import ToolServices, claim_checked, run_tool
from workflows.retries import CONTRACT_FAILURES


def _services_from_settings() -> ToolServices:
    """The worker's data router and object store, from its own settings."""
    # Imported here: building vendors pulls in their packages and files only when data is read.
    from shared.data.factory import build_router

    settings = load_settings()
    store = ObjectStore.from_settings(settings)
    return ToolServices(
        router=build_router(settings), store=store, claims=ClaimCheck.from_settings(settings, store)
    )


@cache
def _inline_max() -> int:
    """The worker's claim-check threshold (``QUANTDESK_INLINE_MAX_BYTES``)."""
    return load_settings().inline_max_bytes


tool_services: Callable[[], ToolServices] = cache(_services_from_settings)
"""Where ``run_tool`` gets its services: built once per worker; tests and benches put their
own S3 and data here."""


def _meter() -> MetricMeter:
    # A test may call an activity function directly, outside any activity: nothing to measure.
    return activity.metric_meter() if activity.in_activity() else MetricMeter.noop


def _measured(request: ToolRequest, meter: MetricMeter) -> ToolResult:
    """Run one call, counted and timed, its answer claim-checked; failures propagate."""
    started = time.monotonic()
    try:
        result = run_tool(request, services=tool_services)
    except Exception:  # a vendor refusing or down: retried by Temporal, counted here
        tool_called(meter, request.call.name, None, False, time.monotonic() - started)
        raise
    tool_called(meter, result.name, result.vendor, result.ok, time.monotonic() - started)
    return claim_checked(result, request, tool_services, inline_max=_inline_max())


@activity_on(TOOLS_QUEUE, "run_tool")
@heartbeating
def run_tool_activity(request: ToolRequest) -> ToolResult:
    """Run one tool call; bad arguments and missing data come back as results for the model.

    Throttled or failing vendors raise retryable failures, so Temporal retries the call.
    Workflows from before ``run_tools`` still schedule this for every call.
    """
    with as_temporal_failures():
        return _measured(request, _meter())


def _answer(request: ToolRequest, meter: MetricMeter) -> ToolResult | ApplicationError:
    """One call of a batch: its answer; or, when no retry can fix its failure, an error
    result the model reads; or the retryable failure that left it unanswered."""
    try:
        with as_temporal_failures():
            return _measured(request, meter)
    except ApplicationError as failure:
        final = failure.non_retryable or failure.type in CONTRACT_FAILURES
        return ToolResult.failed(request.call, failure.message) if final else failure
    except Exception as error:  # noqa: BLE001  (a tool's own bug: judged like Temporal would)
        if type(error).__name__ in CONTRACT_FAILURES:
            return ToolResult.failed(request.call, str(error) or type(error).__name__)
        return ApplicationError(str(error) or type(error).__name__, type=type(error).__name__)


def _answers(requests: list[ToolRequest]) -> list[ToolResult | ApplicationError]:
    """Every call at once (a vendor's calls wait on the network), in the calls' order."""
    meter = _meter()
    if len(requests) == 1:
        return [_answer(requests[0], meter)]
    with ThreadPoolExecutor(len(requests), thread_name_prefix="run_tools") as pool:
        # Each thread runs in a copy of the activity's context (heartbeats, its metric meter).
        running = [
            pool.submit(contextvars.copy_context().run, _answer, request, meter)
            for request in requests
        ]
        return [future.result() for future in running]


def _answered_before(batch: ToolBatch) -> dict[str, ToolResult]:
    """The answers an earlier attempt of this batch heartbeated before it failed."""
    details = activity.info().heartbeat_details
    if not details:
        return {}
    calls = {call.id for call in batch.calls}
    answered = (ToolResult.model_validate(result) for result in details[0])
    return {result.call_id: result for result in answered if result.call_id in calls}


def _unanswered(
    failures: list[tuple[ToolCall, ApplicationError]], answered: list[ToolResult]
) -> ApplicationError:
    """The retryable failure of a batch with calls left unanswered: every call's reason, the
    longest ``Retry-After`` among them, and as its details the answers so far and each
    unanswered call's reason by call id (what the workflow reads when this was the last
    attempt)."""
    delays = [failure.next_retry_delay for _, failure in failures if failure.next_retry_delay]
    return ApplicationError(
        "; ".join(f"{call.name}: {failure.message}" for call, failure in failures),
        answered,
        {call.id: failure.message for call, failure in failures},
        type=failures[0][1].type,
        next_retry_delay=max(delays, default=None),
    )


@activity_on(TOOLS_QUEUE, "run_tools")
def run_tools_activity(batch: ToolBatch) -> ToolBatchResult:
    """Run the tool calls of one chat round at once: one activity task for the round.

    Each call is answered on its own, as ``run_tool`` answers it. When some fail in a way
    a retry can fix (a vendor throttling or down), the activity heartbeats the answers it
    has and fails, so Temporal retries it and the retry runs only the calls still
    unanswered.
    """
    answered = _answered_before(batch)
    pending = [request for request in batch.requests() if request.call.id not in answered]
    with keep_alive():
        outcomes = _answers(pending)
    failures: list[tuple[ToolCall, ApplicationError]] = []
    for request, outcome in zip(pending, outcomes, strict=True):
        if isinstance(outcome, ApplicationError):
            failures.append((request.call, outcome))
        else:
            answered[request.call.id] = outcome
    if failures:
        # After the beats stopped, so that this is the last heartbeat the retry reads.
        activity.heartbeat(list(answered.values()))
        raise _unanswered(failures, list(answered.values()))
    return ToolBatchResult(results=[answered[call.id] for call in batch.calls])


TOOL_ACTIVITIES = (run_tools_activity, run_tool_activity)
"""What a tools worker registers: the batch, and the single call older runs still schedule."""
