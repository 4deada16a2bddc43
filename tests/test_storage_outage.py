"""A run survives its object store going away: the real S3 server killed mid-run.

Until retries were chosen by the kind of failure, a storage step gave up after 3
attempts (a few seconds), so any outage longer than that failed the whole run. Here
the S3 server is killed before QuantAgent stores its charts, the chart step is
watched failing well past those 3 attempts, the server comes back on the same port
and data, and the same run completes with its charts readable.
"""

from __future__ import annotations

import asyncio
import subprocess
import uuid
from collections.abc import AsyncIterator, Iterator
from contextlib import contextmanager
from dataclasses import dataclass
from pathlib import Path

import pytest
import pytest_asyncio
from temporalio.client import WorkflowHandle
from temporalio.testing import WorkflowEnvironment

from cli.stack.servers import ServerLaunch, s3_server, wait_until
from shared.config import Settings, load_settings
from shared.llm.providers import QUEUE_OFFLINE
from shared.storage.credentials import ensure_generated_credentials
from shared.storage.objects import ObjectStore
from tests.servers import (
    free_port_base,
    quantagent_plans,
    running,
    running_workers,
    start_dev_server,
)
from workflows.quantagent import QuantAgentResult

pytestmark = [pytest.mark.asyncio(loop_scope="session"), pytest.mark.integration, pytest.mark.slow]
QUEUE = "test-storage-outage"
OLD_ATTEMPT_LIMIT = 3
"""What storage steps allowed before: the outage must outlast it by a margin."""
ATTEMPTS_DOWN = OLD_ATTEMPT_LIMIT + 2
S3_READY_TIMEOUT = 60.0
OUTAGE_WATCH_TIMEOUT = 180.0


@dataclass
class KillableS3:
    """An S3 server of this test's own, which it can kill and bring back on the same port."""

    settings: Settings
    launch: ServerLaunch
    log: Path
    process: subprocess.Popen[bytes] | None = None

    def start(self) -> None:
        """Start the server and wait until every bucket exists and answers."""
        self._running = running(self.launch, self.log)
        self.process = self._running.__enter__()
        store = ObjectStore.from_settings(self.settings)

        def ready() -> bool:
            try:
                store.ensure_buckets(*self.settings.s3.buckets)
            except Exception:
                return False
            return True

        assert wait_until(ready, timeout=S3_READY_TIMEOUT, interval=0.3), self.log.read_text()

    def kill(self) -> None:
        """SIGKILL, as a crash or an OOM kill would: no chance to flush or say goodbye."""
        assert self.process is not None
        self.process.kill()
        self.process.wait()
        self._running.__exit__(None, None, None)
        self.process = None


@contextmanager
def killable_s3(data_dir: Path) -> Iterator[KillableS3]:
    """A running S3 server in ``data_dir``; stopped at the end whatever the test did."""

    def settings_for(base: int) -> Settings:
        return load_settings(data_dir=data_dir, s3={"endpoint": f"127.0.0.1:{base}"})

    base = free_port_base(
        lambda port: [c.port for c in s3_server(settings_for(port), "k", "s").ports], high=30000
    )
    settings = settings_for(base)
    access, secret = ensure_generated_credentials(data_dir)
    server = KillableS3(settings, s3_server(settings, access, secret), data_dir / "s3.log")
    server.start()
    try:
        yield server
    finally:
        if server.process is not None:
            server.kill()


@pytest.fixture
def s3(tmp_path: Path) -> Iterator[KillableS3]:
    with killable_s3(tmp_path / "s3") as server:
        yield server


@pytest_asyncio.fixture(loop_scope="session")
async def dev_env() -> AsyncIterator[WorkflowEnvironment]:
    """A dev server of this test's own: no worker of another module may take the chart step
    (one reaching the session's S3 would hide the outage)."""
    env = await start_dev_server()
    try:
        yield env
    finally:
        await env.shutdown()


@pytest_asyncio.fixture(loop_scope="session")
async def workers(dev_env: WorkflowEnvironment, s3: KillableS3) -> AsyncIterator[None]:
    plans = quantagent_plans(QUEUE, s3.settings, QUEUE_OFFLINE)
    async with running_workers(dev_env.client, plans):
        yield


async def _attempts_of(handle: WorkflowHandle[object, object], activity: str) -> int:
    """The attempt the pending ``activity`` is on (0 while it is not pending)."""
    description = await handle.describe()
    return max(
        (
            pending.attempt
            for pending in description.raw_description.pending_activities
            if pending.activity_type.name == activity
        ),
        default=0,
    )


async def test_a_run_outlasts_an_s3_outage_longer_than_the_old_retry_budget(
    dev_env: WorkflowEnvironment, s3: KillableS3, workers: None
) -> None:
    s3.kill()
    handle = await dev_env.client.start_workflow(
        "QuantAgent",
        {"symbol": "GOOG", "timeframe": "1d", "as_of": "2012-06-01T00:00:00Z"},
        id=f"outage-{uuid.uuid4()}",
        task_queue=QUEUE,
        result_type=QuantAgentResult,
    )

    async def chart_step_keeps_failing() -> None:
        while await _attempts_of(handle, "render_trend_chart") < ATTEMPTS_DOWN:
            await asyncio.sleep(0.5)

    await asyncio.wait_for(chart_step_keeps_failing(), OUTAGE_WATCH_TIMEOUT)
    description = await handle.describe()
    failure = next(
        p.last_failure.message
        for p in description.raw_description.pending_activities
        if p.activity_type.name == "render_trend_chart"
    )
    assert "S3" in failure or "storage" in failure.lower(), failure

    s3.start()
    result = await asyncio.wait_for(handle.result(), OUTAGE_WATCH_TIMEOUT)

    assert result.decision.decision in ("LONG", "SHORT")
    store = ObjectStore.from_settings(s3.settings)
    for chart in (result.pattern_chart, result.trend_chart):
        assert store.get_bytes(chart.chart).startswith(b"\x89PNG")
