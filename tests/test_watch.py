"""``Watch`` on the real dev server: a run that failed, a run whose workflow task keeps failing
and a schedule that skipped runs are each told once, to a real HTTP receiver behind Apprise's
JSON webhook; a second watch over the same window sends nothing again."""

from __future__ import annotations

import asyncio
import contextlib
import uuid
from collections.abc import AsyncIterator
from datetime import timedelta
from typing import Any

import pytest
import pytest_asyncio
from temporalio.client import (
    Schedule,
    ScheduleActionStartWorkflow,
    ScheduleIntervalSpec,
    ScheduleSpec,
    WorkflowFailureError,
)
from temporalio.testing import WorkflowEnvironment

from shared.config import Settings
from tests.fakes.notifiers import Webhook
from tests.servers import notified_desk, running_workers
from tests.stuck_workflows import start_stuck_tree, stuck_worker, until_marked
from workers.main import plan_for
from workers.roles import WorkerRole

pytestmark = pytest.mark.asyncio(loop_scope="session")
QUEUE = "test-watch"
STUCK_QUEUE = "test-watch-stuck"
NOBODY = "test-watch-nobody"
"""A queue no worker polls: a scheduled run there runs for ever, so the next ones are skipped."""


@pytest.fixture(scope="module")
def desk(
    s3_settings: Settings,
    tmp_path_factory: pytest.TempPathFactory,
    hook: Webhook,
    dev_env: WorkflowEnvironment,
) -> Settings:
    return notified_desk(
        s3_settings, tmp_path_factory.mktemp("watch"), QUEUE, dev_env, hook.url("ops")
    )


@pytest_asyncio.fixture(scope="module", loop_scope="session")
async def workers(dev_env: WorkflowEnvironment, desk: Settings) -> AsyncIterator[None]:
    plans = [plan_for(role, desk) for role in (WorkerRole.WORKFLOWS, WorkerRole.TOOLS)]
    async with running_workers(dev_env.client, plans), stuck_worker(dev_env.client, STUCK_QUEUE):
        yield


async def _skipping_schedule(env: WorkflowEnvironment) -> str:
    """A schedule every second whose first run never ends: the next ones are skipped."""
    name = f"watch-skips-{uuid.uuid4().hex[:6]}"
    await env.client.create_schedule(
        name,
        Schedule(
            action=ScheduleActionStartWorkflow(
                "QuantAgent", {"symbol": "GOOG"}, id=f"{name}-run", task_queue=NOBODY
            ),
            spec=ScheduleSpec(intervals=[ScheduleIntervalSpec(every=timedelta(seconds=1))]),
        ),
    )
    handle = env.client.get_schedule_handle(name)
    for _ in range(100):
        if (await handle.describe()).info.num_actions_skipped_overlap:
            return name
        await asyncio.sleep(0.1)
    raise AssertionError(f"{name} skipped nothing")


async def _all_told(env: WorkflowEnvironment, found: dict[str, Any], hook: Webhook) -> int:
    """The number of posts once every notice ``found`` is done being told."""
    for notice in found["notices"]:
        key = f"{notice['kind']}:{notice['event']}" if notice["event"] else notice["kind"]
        await env.client.get_workflow_handle(f"{notice['run']}-notify-{key}").result()
    return len(hook.posts)


async def test_failed_stuck_and_skipped_are_each_told_once(
    dev_env: WorkflowEnvironment, workers: None, hook: Webhook
) -> None:
    client = dev_env.client
    failed = f"watch-failed-{uuid.uuid4().hex[:6]}"
    with pytest.raises(WorkflowFailureError):  # timeframe missing: the run fails at once
        await client.execute_workflow("QuantAgent", {"symbol": "GOOG"}, id=failed, task_queue=QUEUE)
    parent, stuck = await start_stuck_tree(client, STUCK_QUEUE, "watch-stuck")
    await until_marked(client, parent, stuck)
    schedule = await _skipping_schedule(dev_env)
    try:
        found = await client.execute_workflow(
            "Watch", {"window_minutes": 5}, id=f"watch-{uuid.uuid4().hex[:6]}", task_queue=QUEUE
        )
        first = await _all_told(dev_env, found, hook)
        again = await client.execute_workflow(
            "Watch", {"window_minutes": 5}, id=f"watch-{uuid.uuid4().hex[:6]}", task_queue=QUEUE
        )
        second = await _all_told(dev_env, again, hook)
    finally:
        await client.get_schedule_handle(schedule).delete()
        for run in (parent, f"{schedule}-run"):
            with contextlib.suppress(Exception):
                await client.get_workflow_handle(run).terminate("test over")

    kinds = {(n["kind"], n["run"]) for n in found["notices"]}
    assert {("run_failed", failed), ("run_stuck", stuck)} <= kinds
    assert ("schedule_missed", f"schedule-{schedule}") in kinds
    titles = [post.body["title"] for post in hook.posts]
    assert titles.count(f"QuantAgent {failed} failed") == 1
    [stuck_post] = [post for post in hook.posts if stuck in post.body["title"]]
    assert "poisoned" in stuck_post.body["message"] and "terminate" in stuck_post.body["message"]
    [skipped] = [post for post in hook.posts if schedule in post.body["title"]]
    assert "skipped because the previous one still ran" in skipped.body["message"]
    assert "/runs/" not in skipped.body["message"]
    assert len(again["notices"]) >= 3 and second == first
