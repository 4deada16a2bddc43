"""`quantdesk worker` as a process of its own on the session's dev server and S3, as a user
starts it: for the tests of what a worker process exports (its metrics, its traces).

Its settings come from the environment the CLI reads; ``client`` connects with the same
payload converter (large payloads claim-checked in S3), as the user's CLI would."""

from __future__ import annotations

import os
import signal
import subprocess
import urllib.request
import uuid
from pathlib import Path

from temporalio.client import Client
from temporalio.testing import WorkflowEnvironment

from cli.stack.servers import http_answers, wait_until
from shared.config import ENV_PREFIX, Settings
from shared.ports import LOOPBACK
from tests.cli_process import quantdesk_argv
from tests.prometheus import free_port
from workers.client import connect

START_TIMEOUT = 90.0


class WorkerProcess:
    """One `quantdesk worker --role ROLES`, its metrics on a port of its own, and ``extra``
    variables (a collector to trace to)."""

    def __init__(
        self,
        env: WorkflowEnvironment,
        s3: Settings,
        folder: Path,
        roles: str,
        extra: dict[str, str] | None = None,
    ) -> None:
        self.port = free_port()
        self.log = folder / "worker.log"
        self.queue = f"worker-{uuid.uuid4().hex[:8]}"
        access, secret = s3.s3_credentials()
        address = env.client.service_client.config.target_host
        self.settings = Settings(
            _env_file=None,
            data_dir=folder,
            temporal={"address": address},
            s3={"endpoint": s3.s3.endpoint, "access_key": access, "secret_key": secret},
            queues={"workflows": self.queue},
        )
        self.env = {
            **{k: v for k, v in os.environ.items() if not k.startswith(ENV_PREFIX)},
            f"{ENV_PREFIX}DATA_DIR": str(folder),
            f"{ENV_PREFIX}TEMPORAL__ADDRESS": address,
            f"{ENV_PREFIX}QUEUES__WORKFLOWS": self.queue,
            f"{ENV_PREFIX}S3__ENDPOINT": s3.s3.endpoint,
            f"{ENV_PREFIX}S3__ACCESS_KEY": access,
            f"{ENV_PREFIX}S3__SECRET_KEY": secret,
            f"{ENV_PREFIX}METRICS__PORT": str(self.port),
            **(extra or {}),
        }
        self.roles = roles
        self.process: subprocess.Popen[bytes] | None = None

    @property
    def address(self) -> str:
        """Where its /metrics are."""
        return f"{LOOPBACK}:{self.port}"

    def start(self) -> None:
        """Start it and wait for its metrics endpoint, which it binds before polling."""
        with self.log.open("ab") as out:
            self.process = subprocess.Popen(
                quantdesk_argv("worker", "--role", self.roles), env=self.env, stdout=out, stderr=out
            )
        answering = wait_until(
            lambda: http_answers(f"http://{self.address}/metrics"), timeout=START_TIMEOUT
        )
        assert answering, self.log.read_text()[-3000:]

    def stop(self) -> None:
        """SIGTERM, as `down` does: it drains, flushes and exits."""
        if self.process is not None:
            self.process.send_signal(signal.SIGTERM)
            self.process.wait(timeout=60)
            self.process = None

    def exposition(self) -> str:
        """Its /metrics page, as Prometheus reads it."""
        with urllib.request.urlopen(f"http://{self.address}/metrics", timeout=5) as response:
            text: str = response.read().decode()
        return text

    async def client(self) -> Client:
        """A client of its cluster with its payload converter (this process never traces)."""
        return await connect(self.settings)
