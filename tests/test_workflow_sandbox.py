"""Workflow code runs outside Temporal's sandbox on a desk's workers, and inside it here.

The sandbox refuses a non-deterministic call (the clock, randomness, the environment) at
run time, at a cost: it enters and leaves its import hooks for every activation and every
payload converted, and builds a module namespace per run (a sixth of a 100-name desk's
throughput, docs/light-desk.md). So the workflows worker leaves it out unless
``workflow_sandbox`` is on, and the tests keep it as the guard: the recorded histories replay
under it (``tests/test_replay.py``), most workflow tests build their workers sandboxed, and
here a whole offline AutoRun (Scan, Pipelines with their debates, Portfolio) runs on a
sandboxed workflows worker. A workflow that reached for the clock would fail this run. (No
Reflect: it would wait out its horizon after the test, and its calls would reach the session's
shared offline queue; its recorded history replays under the sandbox.)
"""

from __future__ import annotations

import asyncio
import uuid
from dataclasses import replace
from datetime import timedelta

import pytest
from temporalio.api.enums.v1 import EventType
from temporalio.client import Client
from temporalio.testing import WorkflowEnvironment
from temporalio.worker import UnsandboxedWorkflowRunner
from temporalio.worker.workflow_sandbox import SandboxedWorkflowRunner

from shared.config import Settings
from tests.servers import converting_client, desk_workers, isolated_settings
from workers.main import build_worker, plan_for
from workers.roles import WorkerRole
from workflows.autorun import AutoRunResult

pytestmark = pytest.mark.slow
on_the_session_loop = pytest.mark.asyncio(loop_scope="session")

QUEUE = "test-workflow-sandbox"
SETTLED_SECONDS = 180
"""About 5 s here; the rest is room for a loaded CI machine."""
ROLES = (WorkerRole.WORKFLOWS, WorkerRole.TOOLS, WorkerRole.CHARTS, WorkerRole.LLM_OFFLINE)


@pytest.fixture(scope="module")
def sandboxed(s3_settings: Settings, tmp_path_factory: pytest.TempPathFactory) -> Settings:
    return isolated_settings(
        s3_settings, tmp_path_factory.mktemp("sandboxed"), QUEUE, workflow_sandbox=True
    )


@on_the_session_loop
async def test_the_workflows_worker_leaves_the_sandbox_out_unless_asked(
    ts_env: WorkflowEnvironment, sandboxed: Settings
) -> None:
    client = converting_client(ts_env, sandboxed)
    default = sandboxed.model_copy(update={"workflow_sandbox": False})
    runners = {}
    for setting, settings in ((False, default), (True, sandboxed)):
        # A queue of its own: core refuses a second workflows worker on the module's queue.
        plan = replace(plan_for(WorkerRole.WORKFLOWS, settings), queue=f"{QUEUE}-{setting}")
        assert plan.sandboxed is setting
        runners[setting] = build_worker(client, plan).config()["workflow_runner"]
    assert isinstance(runners[False], UnsandboxedWorkflowRunner)
    assert isinstance(runners[True], SandboxedWorkflowRunner)
    # Activity roles run no workflow code: nothing to sandbox.
    assert plan_for(WorkerRole.TOOLS, sandboxed).workflows == []


@on_the_session_loop
async def test_a_whole_offline_autorun_passes_the_sandbox(
    ts_env: WorkflowEnvironment, sandboxed: Settings
) -> None:
    client = converting_client(ts_env, sandboxed)
    async with desk_workers(client, sandboxed, ROLES):
        result, run_id = await _settled_autorun(client)
    assert result.shortlist, "the Scan shortlisted nothing, so no Pipeline ran"
    assert result.decisions and not result.failures
    assert result.portfolio_status == "approved_auto"
    assert {"Scan", "Pipeline", "Debate", "Risk", "Portfolio"} <= await _run_kinds(client, run_id)


async def _settled_autorun(client: Client) -> tuple[AutoRunResult, str]:
    """An offline AutoRun with a Scan and two names, once it closed (ended if it does not); its
    id."""
    handle = await client.start_workflow(
        "AutoRun",
        {
            "as_of": "2012-06-01T00:00:00Z",
            "portfolio": f"sb{uuid.uuid4().hex[:6]}",
            "scan": True,
            "max_tickers": 2,
            "concurrency": 2,
            "reflect": False,
        },
        id=f"autorun-sandbox-{uuid.uuid4().hex[:8]}",
        task_queue=QUEUE,
        result_type=AutoRunResult,
        execution_timeout=timedelta(minutes=30),
    )
    # A workflow task the sandbox refuses is retried for ever, the run looking alive.
    try:
        result: AutoRunResult = await asyncio.wait_for(handle.result(), SETTLED_SECONDS)
    except TimeoutError:
        await handle.terminate("did not settle on a sandboxed worker")
        pytest.fail(f"the AutoRun did not settle in {SETTLED_SECONDS} s: see its workflow tasks")
    return result, handle.id


async def _run_kinds(client: Client, workflow_id: str) -> set[str]:
    """The workflow types of the runs ``workflow_id`` started, and of theirs, to the bottom."""
    kinds: set[str] = set()
    async for event in client.get_workflow_handle(workflow_id).fetch_history_events():
        if event.event_type == EventType.EVENT_TYPE_START_CHILD_WORKFLOW_EXECUTION_INITIATED:
            child = event.start_child_workflow_execution_initiated_event_attributes
            kinds |= {child.workflow_type.name, *await _run_kinds(client, child.workflow_id)}
    return kinds
