"""Schedules on the dev server: create, list, backfill, trigger, pause, delete.

A backfilled run of a Scan scheduled for 15:30 New York time on 2012-06-01 must
analyse that day's close, not today's data: the run's scheduled time bounds what
it reads. The schedule's input is checked when it is created.
"""

from __future__ import annotations

import asyncio
import os
import subprocess
import sys
import uuid
from collections.abc import AsyncIterator
from datetime import UTC, datetime, timedelta
from pathlib import Path
from typing import Any

import pytest
import pytest_asyncio
from rich.console import Console
from temporalio.client import Client, ScheduleBackfill, ScheduleOverlapPolicy, WorkflowHandle
from temporalio.service import RPCError
from temporalio.testing import WorkflowEnvironment

import activities.tools as tool_activities
from activities.llm import LlmActivities
from activities.research import ResearchActivities
from activities.scan import SCAN_ACTIVITIES
from activities.tools import TOOL_ACTIVITIES
from cli.schedule import schedules_table
from client.desk import Desk
from client.schedules import ScheduleRequest, _checked, create_schedule, schedule_rows
from shared.config import Settings, load_settings
from shared.data.bundled import BundledVendor
from shared.data.contracts import DataKind
from shared.data.router import DataRouter
from shared.data.sim import SimVendor
from shared.errors import InvalidInput
from shared.llm.providers import QUEUE_OFFLINE
from shared.queues import TOOLS_QUEUE
from shared.storage.objects import ObjectStore
from shared.tools.registry import ToolServices
from tests.servers import running_workers
from workers.main import WorkerPlan
from workflows.scan import ScanResult, ScanWorkflow

pytestmark = pytest.mark.asyncio(loop_scope="session")
QUEUE = "test-schedules"
ROOT = Path(__file__).resolve().parent.parent
TEMPORAL_CLI = Path(sys.executable).parent / "temporal"
ROUTER = DataRouter(
    {"bundled": BundledVendor(), "sim": SimVendor()},
    {kind: ("bundled", "sim") if kind is DataKind.OHLCV else ("sim",) for kind in DataKind},
)


@pytest.fixture(scope="module")
def settings(dev_env: WorkflowEnvironment, s3_settings: Settings) -> Settings:
    return load_settings(
        temporal={"address": dev_env.client.service_client.config.target_host},
        queues={"workflows": QUEUE},
        data_dir=s3_settings.data_dir,
        s3=s3_settings.s3.model_dump(),
    )


@pytest_asyncio.fixture(scope="module", loop_scope="session")
async def workers(dev_env: WorkflowEnvironment, s3_settings: Settings) -> AsyncIterator[None]:
    store = ObjectStore.from_settings(s3_settings)
    research = ResearchActivities(s3_settings, router=ROUTER, store=store)
    plans = [
        WorkerPlan(queue=QUEUE, workflows=[ScanWorkflow]),
        WorkerPlan(
            queue=TOOLS_QUEUE,
            activities=[*TOOL_ACTIVITIES, *research.activities(), *SCAN_ACTIVITIES],
            threads=True,
        ),
        WorkerPlan(
            queue=QUEUE_OFFLINE, activities=[LlmActivities(s3_settings, QUEUE_OFFLINE).chat]
        ),
    ]
    with pytest.MonkeyPatch.context() as patch:
        patch.setattr(
            tool_activities, "tool_services", lambda: ToolServices(router=ROUTER, store=store)
        )
        async with running_workers(dev_env.client, plans):
            yield


def _cli(address: str, *argv: str) -> str:
    """`quantdesk ...` as a user runs it, against the test's dev server."""
    done = subprocess.run(
        [sys.executable, "-m", "cli.main", *argv],
        capture_output=True,
        text=True,
        timeout=120,
        env={**os.environ, "QUANTDESK_TEMPORAL__ADDRESS": address, "COLUMNS": "200"},
        cwd=ROOT,
    )
    assert done.returncode == 0, done.stdout + done.stderr
    return done.stdout


def _request(name: str, **changes: Any) -> ScheduleRequest:
    fields: dict[str, Any] = {
        "name": name,
        "flow": "scan",
        "cron": "30 15 * * 1-5",
        "tz": "America/New_York",
        "workflow_input": {"max_tickers": 3},
    }
    return ScheduleRequest(**(fields | changes))


async def _runs_of(client: Client, name: str, count: int) -> list[WorkflowHandle[Any, Any]]:
    query = f'TemporalScheduledById = "{name}"'
    for _ in range(300):  # the visibility store is eventually consistent
        runs = [run async for run in client.list_workflows(query)]
        if len(runs) >= count:
            return [client.get_workflow_handle(run.id, run_id=run.run_id) for run in runs]
        await asyncio.sleep(0.1)
    raise AssertionError(f"{name} started fewer than {count} run(s)")


async def test_a_backfilled_run_reads_the_data_of_its_scheduled_time(
    dev_env: WorkflowEnvironment, workers: None, settings: Settings
) -> None:
    client = dev_env.client
    name = f"scan-close-{uuid.uuid4().hex[:6]}"
    assert await create_schedule(client, settings, _request(name)) == "Scan"
    handle = client.get_schedule_handle(name)
    shown = Console(record=True, width=200)
    listed = ""
    for _ in range(100):  # the schedule list is eventually consistent, like the run list
        shown.print(schedules_table(await schedule_rows(Desk(settings))))
        listed = shown.export_text()
        if name in listed:
            break
        await asyncio.sleep(0.1)
    assert name in listed and "30 15 * * 1-5 America/New_York" in listed

    scheduled = datetime(2012, 6, 1, 19, 30, tzinfo=UTC)  # 15:30 in New York (EDT)
    await handle.backfill(
        ScheduleBackfill(
            start_at=scheduled - timedelta(minutes=1),
            end_at=scheduled + timedelta(minutes=1),
            overlap=ScheduleOverlapPolicy.ALLOW_ALL,
        )
    )
    [run] = await _runs_of(client, name, 1)
    result = await run.result(rpc_timeout=timedelta(seconds=60))
    scan = ScanResult.model_validate(result)

    assert scan.as_of == datetime(2012, 6, 1, tzinfo=UTC)  # that day's bar, nothing later
    assert run.id.startswith(f"{name}-2012-06-01T19:30:00")
    description = await handle.describe()
    assert description.info.num_actions == 1

    address = dev_env.client.service_client.config.target_host
    described = _cli(address, "schedule", "describe", name)
    assert "Scan on 30 15 * * 1-5 (America/New_York), active" in described
    assert '"max_tickers": 3' in described and "runs so far: 1" in described
    theirs = subprocess.run(
        [str(TEMPORAL_CLI), "schedule", "list", "--address", address],
        capture_output=True,
        text=True,
        timeout=60,
        check=True,
    ).stdout
    assert name in theirs  # the Temporal CLI sees the same schedule

    await handle.pause(note="holiday")
    assert (await handle.describe()).schedule.state.paused
    await handle.unpause()
    await handle.trigger()
    runs = await _runs_of(client, name, 2)
    for started in runs:
        if started.id != run.id:
            await started.terminate("test over")
    await handle.delete()
    with pytest.raises(RPCError):
        await handle.describe()


@pytest.mark.parametrize(
    ("changes", "option"),
    [
        ({"flow": "astrology"}, "--flow"),
        ({"cron": "every day"}, "--cron"),
        ({"tz": "Mars/Olympus"}, "--tz"),
        ({"workflow_input": {"max_tickers": 0}}, "--input"),
        ({"flow": "pipeline", "workflow_input": {}}, "--input"),
        ({"flow": "reconcile", "workflow_input": {}}, "--input"),
    ],
)
async def test_a_bad_schedule_is_refused_before_it_reaches_the_server(
    changes: dict[str, Any], option: str
) -> None:
    with pytest.raises(InvalidInput) as caught:
        _checked(_request("bad", **changes))

    assert caught.value.field == option


async def test_the_desk_itself_can_be_scheduled_with_an_empty_input() -> None:
    assert _checked(_request("desk", flow="autorun", workflow_input={})) == ("AutoRun", {})


async def test_a_book_at_a_broker_can_be_reconciled_on_a_schedule() -> None:
    request = _request("live-reconcile", flow="reconcile", workflow_input={"portfolio": "live"})

    assert _checked(request) == ("Reconcile", {"portfolio": "live"})
