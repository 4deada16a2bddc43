"""Workers anywhere, one book: two "hosts" run `quantdesk up` against servers they did not start.

Host B and host C are two data dirs with host names of their own (``QUANTDESK_HOST_NAME``)
on this machine, both with Temporal and S3 external: a fresh namespace of the session's dev
server (none of quantdesk's search attributes, as a plain `temporal server start-dev`), the
session's S3, and one PostgreSQL book. B serves the workflows, the tools and the offline
model; C the tools and the offline model. `up` sets the namespace up and calls every worker
healthy; `status` shows, from Temporal, which host polls which queue; Portfolio runs started
together on one book run their tools on both hosts and book each trade once.
"""

from __future__ import annotations

import os
import re
import subprocess
import sys
from collections.abc import AsyncIterator
from dataclasses import dataclass
from datetime import UTC, datetime
from pathlib import Path

import pytest
import pytest_asyncio
from temporalio.testing import WorkflowEnvironment

from cli.stack.commands import POLLERS_TITLE
from shared.config import ENV_PREFIX, Settings
from shared.portfolio.store import PortfolioStore
from shared.queues import DEFAULT_WORKFLOWS_QUEUE, TOOLS_QUEUE
from tests.servers import free_port_base, fresh_database, fresh_namespace

pytestmark = [pytest.mark.integration, pytest.mark.timeout(600)]
ROOT = Path(__file__).resolve().parent.parent
CLI_TIMEOUT = 360
ROLES = {"host-b": "workflows,tools,llm-offline", "host-c": "tools,llm-offline"}
BOOK = "shared"
RUNS = 4
AS_OF = datetime(2012, 6, 1, tzinfo=UTC)


@dataclass
class Host:
    """One host: its name, the environment its CLI runs with, and its first `up`."""

    name: str
    env: dict[str, str]
    first_up: subprocess.CompletedProcess[str]

    def quantdesk(self, *args: str) -> subprocess.CompletedProcess[str]:
        """The real CLI, run as this host."""
        return _quantdesk(self.env, *args)


@dataclass
class Desk:
    """Both hosts, the cluster they share and the book."""

    hosts: dict[str, Host]
    address: str
    namespace: str
    database_url: str


def _quantdesk(env: dict[str, str], *args: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [sys.executable, "-m", "cli.main", *args],
        cwd=ROOT,
        env=env,
        capture_output=True,
        text=True,
        timeout=CLI_TIMEOUT,
    )


def _host_env(
    name: str, folder: Path, address: str, namespace: str, s3: Settings, database_url: str
) -> dict[str, str]:
    """The variables of a host whose servers are all elsewhere."""
    access, secret = s3.s3_credentials()
    own = {
        "HOST_NAME": name,
        "DATA_DIR": str(folder),
        "TEMPORAL__ADDRESS": address,
        "TEMPORAL__NAMESPACE": namespace,
        "TEMPORAL__EMBEDDED": "false",
        "S3__ENDPOINT": s3.s3.endpoint,
        "S3__ACCESS_KEY": access,
        "S3__SECRET_KEY": secret,
        "S3__EMBEDDED": "false",
        "DATABASE_URL": database_url,
        "CONSOLE__PORT": str(free_port_base(lambda base: [base])),
    }
    clean = {k: v for k, v in os.environ.items() if not k.startswith(ENV_PREFIX)}
    return clean | {f"{ENV_PREFIX}{key}": value for key, value in own.items()} | {"COLUMNS": "200"}


@pytest_asyncio.fixture(scope="module", loop_scope="session")
async def desk(
    dev_env: WorkflowEnvironment,
    s3_settings: Settings,
    postgres_server: str,
    tmp_path_factory: pytest.TempPathFactory,
) -> AsyncIterator[Desk]:
    address = dev_env.client.service_client.config.target_host
    namespace = await fresh_namespace(dev_env.client)
    url = fresh_database(postgres_server)
    PortfolioStore(url).create(BOOK, 100_000)
    root = tmp_path_factory.mktemp("hosts")
    hosts: dict[str, Host] = {}
    try:
        for name, roles in ROLES.items():
            env = _host_env(name, root / name, address, namespace, s3_settings, url)
            hosts[name] = Host(name, env, _quantdesk(env, "up", "--roles", roles))
        yield Desk(hosts, address, namespace, url)
    finally:
        for host in hosts.values():
            host.quantdesk("down")


def _pollers(status: str) -> dict[str, set[str]]:
    """Queue -> the hosts polling it, read from the pollers table of `quantdesk status` (a
    row that starts blank is a further poller of the queue above)."""
    table = status.split(POLLERS_TITLE, 1)[1].split("\n\n", 1)[0]
    found: dict[str, set[str]] = {}
    for line in table.splitlines()[3:]:  # the title's end, the header and its rule
        polled = re.search(r"\d+@(\S+) \S+", line)
        if not line.startswith("  "):
            queue = line.split()[0]
            found[queue] = set()
        if polled:
            found[queue].add(polled[1])
    return found


def test_up_sets_up_a_cluster_it_did_not_start_and_its_workers_are_healthy(desk: Desk) -> None:
    for host in desk.hosts.values():
        result = host.first_up
        assert result.returncode == 0, result.stdout + result.stderr
        assert re.search(r"^\s*temporal\s.*\sexternal\s*$", result.stdout, re.M), result.stdout
        for role in ROLES[host.name].split(","):
            assert re.search(rf"^\s*worker-{role}\s.*\sstarted\s*$", result.stdout, re.M)


def test_status_shows_which_host_polls_which_queue(desk: Desk) -> None:
    result = desk.hosts["host-c"].quantdesk("status", "--roles", ROLES["host-c"])
    print(result.stdout)
    assert result.returncode == 0, result.stdout + result.stderr
    pollers = _pollers(result.stdout)
    assert pollers[DEFAULT_WORKFLOWS_QUEUE] == {"host-b"}
    assert pollers[TOOLS_QUEUE] == pollers["llm-offline"] == {"host-b", "host-c"}
    assert pollers["charts"] == pollers["llm-openai"] == set()
    assert re.search(r"\d+@host-c tools\s+activity\s+\d+ s ago", result.stdout)
