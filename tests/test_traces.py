"""Traces: a real `quantdesk worker` process sends its spans over OTLP to a receiver on
loopback, and one offline AutoRun is one trace whose spans cover every activity it ran.

The receiver speaks OTLP/HTTP as a collector does (``tests.fakes.otlp``). The run is started
by `quantdesk run autorun`, tracing too: its span of the start is the trace's root, and
Temporal's interceptor carries the trace in the headers of every child and activity.
"""

from __future__ import annotations

import re
import time
import uuid
from collections import Counter
from collections.abc import Iterator
from typing import Any

import pytest
from temporalio.api.enums.v1 import EventType
from temporalio.client import Client
from temporalio.testing import WorkflowEnvironment

from shared.config import ENV_PREFIX, Settings, load_settings
from tests.cli_process import run_quantdesk
from tests.fakes.otlp import OtlpReceiver, ReceivedSpan
from tests.worker_process import WorkerProcess
from workers.tracing import tracing_interceptors
from workflows.autorun import AutoRunResult

ROLES = "workflows,tools,charts,broker,llm-offline"
AS_OF = "2012-06-01T00:00:00Z"
SERVICE = "quantdesk-traced-worker"
CLI_SERVICE = "quantdesk-cli"
QUERIES = ("QueryWorkflow:", "HandleQuery:")
SPANS_TIMEOUT = 60.0


@pytest.fixture(scope="module")
def receiver() -> Iterator[OtlpReceiver]:
    with OtlpReceiver() as server:
        yield server


@pytest.fixture(scope="module")
def worker(
    dev_env: WorkflowEnvironment,
    s3_settings: Settings,
    tmp_path_factory: pytest.TempPathFactory,
    receiver: OtlpReceiver,
) -> Iterator[WorkerProcess]:
    traced = {
        f"{ENV_PREFIX}OTEL__ENDPOINT": receiver.endpoint,
        f"{ENV_PREFIX}OTEL__SERVICE_NAME": SERVICE,
    }
    process = WorkerProcess(dev_env, s3_settings, tmp_path_factory.mktemp("traced"), ROLES, traced)
    process.start()
    yield process
    process.stop()


async def _activities_of_the_tree(client: Client, workflow_id: str) -> Counter[str]:
    """Every activity the run and its children (recursively) completed, by type."""
    done: Counter[str] = Counter()
    pending = [workflow_id]
    while pending:
        history = await client.get_workflow_handle(pending.pop()).fetch_history()
        scheduled = {}
        for event in history.events:
            if event.event_type == EventType.EVENT_TYPE_ACTIVITY_TASK_SCHEDULED:
                name = event.activity_task_scheduled_event_attributes.activity_type.name
                scheduled[event.event_id] = name
            elif event.event_type == EventType.EVENT_TYPE_ACTIVITY_TASK_COMPLETED:
                done[
                    scheduled[event.activity_task_completed_event_attributes.scheduled_event_id]
                ] += 1
            elif event.event_type == EventType.EVENT_TYPE_CHILD_WORKFLOW_EXECUTION_STARTED:
                child = event.child_workflow_execution_started_event_attributes
                pending.append(child.workflow_execution.workflow_id)
    return done


def _worker_spans(receiver: OtlpReceiver) -> list[ReceivedSpan]:
    return [span for span in receiver.spans if span.service == SERVICE]


def _covered(receiver: OtlpReceiver, wanted: Counter[str]) -> bool:
    ran = Counter(
        span.name.removeprefix("RunActivity:")
        for span in _worker_spans(receiver)
        if span.name.startswith("RunActivity:")
    )
    return all(ran[name] >= count for name, count in wanted.items())


@pytest.mark.integration
@pytest.mark.asyncio(loop_scope="session")
async def test_one_autorun_is_one_trace_covering_every_activity_and_model_call(
    worker: WorkerProcess, receiver: OtlpReceiver
) -> None:
    # Started as a user starts it: the CLI, tracing too (it flushes its spans as it exits).
    cli = {**worker.env, f"{ENV_PREFIX}OTEL__SERVICE_NAME": CLI_SERVICE, "COLUMNS": "200"}
    args = ["--portfolio", f"traced{uuid.uuid4().hex[:6]}", "--as-of", AS_OF]
    args += ["--max-tickers", "2", "--analysts", "market,fundamentals", "--no-reflect"]
    run = run_quantdesk(cli, "run", "autorun", *args)
    assert run.returncode == 0, run.stdout + run.stderr
    [workflow_id] = re.findall(r"^started (\S+)", run.stdout, re.M)
    client = await worker.client()
    handle = client.get_workflow_handle(workflow_id, result_type=AutoRunResult)
    result = await handle.result()
    activities = await _activities_of_the_tree(client, workflow_id)
    assert activities["chat"] == result.usage.total.calls > 10

    deadline = time.monotonic() + SPANS_TIMEOUT
    while not _covered(receiver, activities) and time.monotonic() < deadline:
        time.sleep(0.5)
    assert _covered(receiver, activities), sorted({s.name for s in receiver.spans})

    # The CLI's queries of the run's progress are traces of their own; the run is one.
    spans = [s for s in receiver.spans if not s.name.startswith(QUERIES)]
    [root] = [s for s in spans if s.name == "StartWorkflow:AutoRun"]
    assert root.service == CLI_SERVICE and root.parent_span_id == ""
    assert {span.trace_id for span in spans} == {root.trace_id}  # one trace, AutoRun down
    ran = {s.name for s in spans if s.name.startswith("RunWorkflow:")}
    assert {"RunWorkflow:AutoRun", "RunWorkflow:Scan", "RunWorkflow:Pipeline"} <= ran
    assert "RunWorkflow:Portfolio" in ran
    calls = [span for span in spans if span.name.startswith("chat ")]
    assert len(calls) == activities["chat"]
    by_id = {span.span_id: span for span in spans}
    for call in calls:
        assert by_id[call.parent_span_id].name == "RunActivity:chat"
        attributes: dict[str, Any] = call.attributes
        assert attributes["gen_ai.operation.name"] == "chat"
        assert attributes["gen_ai.provider.name"] == "offline"
        assert attributes["gen_ai.request.model"] == "offline-analyst"
        assert attributes["gen_ai.usage.output_tokens"] > 0
    tokens = sum(call.attributes["gen_ai.usage.input_tokens"] for call in calls)
    assert tokens == result.usage.total.input_tokens


def test_without_an_endpoint_nothing_traces_and_nothing_is_installed() -> None:
    from workers import tracing

    assert tracing_interceptors(load_settings().otel) == []
    assert tracing._install.cache_info().currsize == 0  # no provider, no exporter
