"""The chaos bench's own embedded stack, and a client that outlives its dev server.

The stack runs in a temporary data dir on free loopback ports, started and
healed by the real CLI (`python -m cli.main up`, what a user types), so the bench
measures what users get. Components are killed the way a crash kills them:
SIGKILL to the pid `up` recorded in ``<data dir>/run/<name>.pid``.

The bench's own calls to Temporal must survive the dev server being killed, so
each goes through ``patiently``: the CLI's ``workers.client.across_outages`` (a server
away is asked again with back-off, any other error raised at once), until a deadline.
"""

from __future__ import annotations

import asyncio
import json
import os
import signal
import sys
import time
from collections.abc import Awaitable, Callable
from dataclasses import dataclass
from datetime import timedelta
from pathlib import Path
from typing import TypeVar

from temporalio.client import Client

from shared.config import ENV_PREFIX, Settings
from tests.cli_process import free_stack_base, stack_env, stack_settings
from workers.client import ServerLost, across_outages, connect, quiet_client_logs

T = TypeVar("T")
ROOT = Path(__file__).resolve().parent.parent
# `up` waits up to 90 s for servers and 120 s for workers, then 30 s of reconnect grace
# and another 120 s for a restarted worker: 10 min is far past any healthy outcome.
CLI_TIMEOUT_SECONDS = 600.0
KILL_WAIT_SECONDS = 10.0


@dataclass(frozen=True)
class CliResult:
    """One `quantdesk` command: its exit status, output and how long it took."""

    returncode: int
    stdout: str
    stderr: str
    seconds: float


@dataclass(frozen=True)
class ChaosStack:
    """A stack of its own: the variables the CLI runs with and the settings they amount to."""

    env: dict[str, str]
    settings: Settings

    @classmethod
    def in_dir(cls, data_dir: Path) -> ChaosStack:
        """A stack in ``data_dir`` on a block of free loopback ports (nothing started yet)."""
        base = free_stack_base(data_dir)
        own, settings = stack_settings(data_dir, base)
        path = os.pathsep.join(filter(None, [str(ROOT), os.environ.get("PYTHONPATH")]))
        # Its `up` writes the `temporal` CLI's profile beside the stack, not the user's.
        env = stack_env(own, **{f"{ENV_PREFIX}DEFAULT_PROVIDER": "offline", "PYTHONPATH": path})
        return cls(env, settings)

    async def quantdesk(self, *args: str) -> CliResult:
        """Run the real CLI with the stack's variables; killed if it outlives the timeout."""
        started = time.monotonic()
        process = await asyncio.create_subprocess_exec(
            sys.executable,
            "-m",
            "cli.main",
            *args,
            cwd=ROOT,
            env=self.env,
            stdout=asyncio.subprocess.PIPE,
            stderr=asyncio.subprocess.PIPE,
        )
        try:
            out, err = await asyncio.wait_for(process.communicate(), CLI_TIMEOUT_SECONDS)
        except BaseException:
            # Timed out or cancelled: this child is ours, so it does not outlive the bench.
            if process.returncode is None:
                process.kill()
                await process.wait()
            raise
        return CliResult(
            returncode=process.returncode if process.returncode is not None else -1,
            stdout=out.decode(errors="replace"),
            stderr=err.decode(errors="replace"),
            seconds=time.monotonic() - started,
        )

    def pid_of(self, component: str) -> int:
        """The pid `up` recorded for ``component`` (``temporal``, ``s3``, ``worker-<role>``)."""
        record = self.settings.data_dir / "run" / f"{component}.pid"
        return int(json.loads(record.read_text())["pid"])

    def kill(self, component: str) -> None:
        """SIGKILL ``component``, as a crash would, and wait until its process is gone."""
        pid = self.pid_of(component)
        os.kill(pid, signal.SIGKILL)
        deadline = time.monotonic() + KILL_WAIT_SECONDS
        while _alive(pid):
            if time.monotonic() > deadline:
                raise RuntimeError(f"{component} (pid {pid}) outlived SIGKILL")
            time.sleep(0.05)

    async def client(self) -> Client:
        """A client of the stack's dev server (connected once, while the server is up).

        The SDK core's warnings are kept off the terminal: while the dev server is down
        by design it would print one for every retried call, and ``patiently`` already
        retries them."""
        quiet_client_logs()
        return await connect(self.settings)


def _alive(pid: int) -> bool:
    """Whether ``pid`` runs; a zombie has no command line and does not count."""
    try:
        return bool(Path(f"/proc/{pid}/cmdline").read_bytes())
    except OSError:
        return False


async def patiently(call: Callable[[], Awaitable[T]], what: str, deadline: float) -> T:
    """``call()``, asked again while Temporal is unreachable until ``deadline`` (a
    ``time.monotonic()`` value); then a ``TimeoutError`` (``ServerLost``) naming ``what``."""
    patience = timedelta(seconds=max(0.0, deadline - time.monotonic()))
    try:
        return await across_outages(call, patience=patience)
    except ServerLost as error:
        raise ServerLost(f"{what}: {error}") from error
