"""A revoked key pauses the AutoRun where it is; once fixed, `resume` finishes the run.

First the desk runs offline and every reply is recorded. Then the same desk runs
through the OpenAI client against the replay vendor, which refuses the key (401):
the Scan's first calls park, waiting, and nothing fails. The key is "fixed", the
AutoRun gets `resume` (as from `quantdesk resume` or the Web UI), forwards it to
the waiting Scan, and the run completes with the offline run's decisions, every
conversation asked exactly once: nothing finished before the pause ran again.
"""

from __future__ import annotations

import asyncio
from collections import Counter
from collections.abc import AsyncIterator
from datetime import timedelta
from pathlib import Path
from typing import Any

import pytest
import pytest_asyncio
from temporalio.api.enums.v1 import EventType
from temporalio.api.sdk.v1 import WorkflowMetadata
from temporalio.service import RPCError
from temporalio.testing import WorkflowEnvironment

from activities.llm import LlmActivities
from shared.config import Settings
from shared.llm.contracts import ChatResponse
from shared.llm.providers import QUEUE_OFFLINE, QUEUE_OPENAI
from tests.fakes.replay import ReplayVendor, recording_chat
from tests.servers import isolated_settings, running_workers, tools_reading
from workers.main import WorkerPlan, plan_for
from workers.roles import WorkerRole
from workflows.autorun import AutoRunProgress, AutoRunResult
from workflows.progress import RunProgress

pytestmark = pytest.mark.asyncio(loop_scope="session")
KEY = "sk-revoked-then-fixed-0000"
DESK = {
    "portfolio": "replayed",
    "as_of": "2012-06-01T00:00:00Z",
    "max_tickers": 3,
    "analysts": ["market", "news"],
    "concurrency": 3,
    "reflect": False,
}
DESK_ID = "resume-desk"
BOOK_ROLES = (WorkerRole.WORKFLOWS, WorkerRole.TOOLS, WorkerRole.CHARTS)


@pytest_asyncio.fixture(scope="module", loop_scope="session")
async def recorded(
    ts_env: WorkflowEnvironment, s3_settings: Settings, tmp_path_factory: pytest.TempPathFactory
) -> tuple[AutoRunResult, dict[str, ChatResponse]]:
    """The desk run offline, and every reply it got."""
    settings = isolated_settings(s3_settings, tmp_path_factory.mktemp("offline"), "resume-a")
    replies: dict[str, ChatResponse] = {}
    chat = WorkerPlan(
        queue=QUEUE_OFFLINE,
        activities=[recording_chat(LlmActivities(settings, QUEUE_OFFLINE), replies)],
    )
    with tools_reading(settings):
        async with running_workers(
            ts_env.client, [*(plan_for(role, settings) for role in BOOK_ROLES), chat]
        ):
            result = await ts_env.client.execute_workflow(
                "AutoRun",
                DESK,
                id=DESK_ID,
                task_queue="resume-a",
                result_type=AutoRunResult,
            )
    return result, replies


@pytest_asyncio.fixture(loop_scope="session")
async def vendor(
    recorded: tuple[AutoRunResult, dict[str, ChatResponse]],
) -> AsyncIterator[ReplayVendor]:
    with ReplayVendor(recorded[1]) as server:
        yield server


async def _until_waiting(env: WorkflowEnvironment, run_id: str, calls: int) -> RunProgress:
    """A run's progress once ``calls`` calls in it (or below it) wait for ``resume``."""
    child = env.client.get_workflow_handle(run_id)
    for _ in range(600):
        try:  # a short timeout: the test server holds a query to a run not started yet
            progress = await child.query(
                "progress", result_type=RunProgress, rpc_timeout=timedelta(seconds=1)
            )
        except RPCError:
            progress = None
        if progress is not None and len(progress.waiting) >= calls:
            return progress
        await asyncio.sleep(0.05)
    raise AssertionError(f"fewer than {calls} calls of {run_id} ever waited")


async def test_a_refused_key_parks_the_run_and_resume_finishes_it(
    ts_env: WorkflowEnvironment,
    s3_settings: Settings,
    tmp_path_factory: pytest.TempPathFactory,
    recorded: tuple[AutoRunResult, dict[str, Any]],
    vendor: ReplayVendor,
) -> None:
    offline, replies = recorded
    folder: Path = tmp_path_factory.mktemp("replayed")
    settings = isolated_settings(
        s3_settings, folder, "resume-b", openai={"api_key": KEY, "base_url": vendor.base_url_openai}
    )
    vendor.key_valid = False
    chat = WorkerPlan(queue=QUEUE_OPENAI, activities=[LlmActivities(settings, QUEUE_OPENAI).chat])
    with tools_reading(settings):
        async with running_workers(
            ts_env.client, [*(plan_for(role, settings) for role in BOOK_ROLES), chat]
        ):
            handle = await ts_env.client.start_workflow(
                "AutoRun",
                {**DESK, "llm": {"provider": "openai"}},
                id=DESK_ID,  # the same names as the recorded run: its summary names its Scan
                task_queue="resume-b",
                result_type=AutoRunResult,
            )
            waiting = await _until_waiting(ts_env, f"{handle.id}-scan", 3)
            assert all("401" in r or "API key" in r for r in waiting.waiting.values())
            assert all(KEY not in reason for reason in waiting.waiting.values())
            # The AutoRun itself says which child waits, at which step, and why.
            shown = await _until_waiting(ts_env, handle.id, 3)
            assert {f"scan › {step}" for step in waiting.waiting} <= set(shown.waiting)
            assert all("401" in r or "API key" in r for r in shown.waiting.values())
            metadata = await handle.query(
                "__temporal_workflow_metadata", result_type=WorkflowMetadata
            )
            assert "Waiting for a fix" in metadata.current_details
            assert "scan › " in metadata.current_details
            assert f"quantdesk resume {handle.id}" in metadata.current_details
            assert KEY not in metadata.current_details
            refused_before_fix = vendor.refused

            vendor.key_valid = True  # the user fixes the key ...
            await handle.signal("resume")  # ... and resumes the AutoRun
            result = await handle.result()
            after = await handle.query("progress", result_type=AutoRunProgress)

    assert refused_before_fix == vendor.refused == 3  # the three first scanners, once each
    assert after.waiting == {}  # each wait was cleared as its call went on
    assert [(d.symbol, d.rating) for d in result.decisions] == [
        (d.symbol, d.rating) for d in offline.decisions
    ]
    asked = Counter(vendor.answered)
    assert set(asked) <= set(replies) and max(asked.values()) == 1  # nothing asked twice
    history = await handle.fetch_history()
    opened = [
        e
        for e in history.events
        if e.event_type == EventType.EVENT_TYPE_ACTIVITY_TASK_SCHEDULED
        and e.activity_task_scheduled_event_attributes.activity_type.name == "open_book"
    ]
    assert len(opened) == 1
