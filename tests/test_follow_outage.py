"""Following a run outlives a restart of the Temporal server.

The run is durable on the server; the terminal that follows it must be too. Here
a real dev server is SIGKILLed while a follower waits on a run, stays down longer
than the client's own retries last, and comes back on the same database: the
follower is still waiting and gets the run's outcome. A server that never comes
back ends the wait after the patience given, with a message, not a traceback.
"""

from __future__ import annotations

import asyncio
import subprocess
import uuid
from collections.abc import Iterator
from contextlib import AbstractContextManager
from datetime import timedelta
from pathlib import Path

import pytest
from temporalio.client import Client, WorkflowFailureError
from temporalio.contrib.pydantic import pydantic_data_converter
from temporalio.service import RPCError

from cli.follow import ServerLost, result_across_outages
from cli.stack.servers import ServerLaunch, temporal_dev_server
from shared.config import Settings, load_settings
from shared.search_attributes import SEARCH_ATTRIBUTES
from tests.servers import free_port_base, running

pytestmark = [pytest.mark.asyncio(loop_scope="session"), pytest.mark.integration, pytest.mark.slow]
CLIENT_GIVES_UP_AFTER = 10.0
"""The SDK client's own retries of an unreachable server last about this long."""
OUTAGE_SECONDS = CLIENT_GIVES_UP_AFTER + 5
START_TIMEOUT = 60.0


class DevServer:
    """A dev server of this test's own, which it can kill and bring back on the same file."""

    def __init__(self, settings: Settings) -> None:
        self.settings = settings
        self.launch: ServerLaunch = temporal_dev_server(settings, dict(SEARCH_ATTRIBUTES))
        self._running: AbstractContextManager[subprocess.Popen[bytes]] | None = None

    async def start(self) -> Client:
        """Start it and return a client once it answers."""
        self._running = running(self.launch, self.settings.data_dir / "temporal.log")
        self._running.__enter__()
        deadline = asyncio.get_running_loop().time() + START_TIMEOUT
        while True:
            try:
                return await Client.connect(
                    self.settings.temporal.address, data_converter=pydantic_data_converter
                )
            except RuntimeError:
                if asyncio.get_running_loop().time() > deadline:
                    raise
                await asyncio.sleep(0.3)

    def kill(self) -> None:
        """SIGKILL: no goodbye to the clients."""
        assert self._running is not None
        self._running.__exit__(None, None, None)  # terminates; the process is already dying
        self._running = None


@pytest.fixture
def server(tmp_path: Path) -> Iterator[DevServer]:
    def settings_for(base: int) -> Settings:
        return load_settings(
            data_dir=tmp_path, temporal={"address": f"127.0.0.1:{base}", "ui_port": base + 1}
        )

    base = free_port_base(
        lambda p: [c.port for c in temporal_dev_server(settings_for(p), {}).ports]
    )
    dev = DevServer(settings_for(base))
    yield dev
    if dev._running is not None:
        dev.kill()


async def _start_waiting_run(client: Client) -> str:
    """A run no worker serves: it waits on the server until terminated."""
    handle = await client.start_workflow(
        "NobodyServesThis", id=f"follow-{uuid.uuid4()}", task_queue=f"idle-{uuid.uuid4()}"
    )
    return handle.id


async def test_a_follower_gets_the_outcome_after_the_server_was_down(server: DevServer) -> None:
    client = await server.start()
    workflow_id = await _start_waiting_run(client)
    lost: list[RPCError] = []
    follower = asyncio.create_task(
        result_across_outages(
            client.get_workflow_handle(workflow_id),
            patience=timedelta(minutes=2),
            on_lost=lost.append,
        )
    )
    await asyncio.sleep(0.5)

    server.kill()
    await asyncio.sleep(OUTAGE_SECONDS)
    assert lost and not follower.done()  # it saw the server go, and kept waiting

    again = await server.start()
    await again.get_workflow_handle(workflow_id).terminate(reason="the test is over")

    with pytest.raises(WorkflowFailureError):
        await asyncio.wait_for(follower, 60)


async def test_a_server_that_never_returns_ends_the_wait_with_a_message(
    server: DevServer,
) -> None:
    client = await server.start()
    workflow_id = await _start_waiting_run(client)
    server.kill()

    with pytest.raises(ServerLost, match="stayed unreachable"):
        await asyncio.wait_for(
            result_across_outages(
                client.get_workflow_handle(workflow_id), patience=timedelta(seconds=2)
            ),
            90,
        )
