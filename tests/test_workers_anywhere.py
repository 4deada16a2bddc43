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

import asyncio
import os
import re
import subprocess
from collections.abc import AsyncIterator
from dataclasses import dataclass
from datetime import UTC, datetime
from decimal import Decimal
from pathlib import Path

import pytest
import pytest_asyncio
from temporalio.api.enums.v1 import EventType
from temporalio.client import Client
from temporalio.testing import WorkflowEnvironment

from cli.stack.commands import POLLERS_TITLE, private_book_warning
from shared.config import ENV_PREFIX, Settings, load_settings
from shared.errors import ConfigError
from shared.payload_keys import new_key_line
from shared.portfolio.broker import trade_key
from shared.portfolio.schema import trades
from shared.portfolio.store import PortfolioStore
from shared.queues import DEFAULT_WORKFLOWS_QUEUE, TOOLS_QUEUE
from tests.cli_process import run_quantdesk
from tests.servers import count_rows, free_port_base, fresh_database, fresh_namespace
from workers.client import connect
from workers.identity import host_of, is_process, worker_identity
from workflows.portfolio import PortfolioResult

pytestmark = [pytest.mark.integration, pytest.mark.timeout(600)]
ROLES = {"host-b": "workflows,tools,llm-offline", "host-c": "tools,llm-offline"}
BOOK = "shared"
RUNS = 4
AS_OF = datetime(2012, 6, 1, tzinfo=UTC)
DESK_KEYS = new_key_line("desk")
"""The payload key every host of the desk shares (the servers are external: payloads are sealed)."""


@dataclass
class Host:
    """One host: its name, the environment its CLI runs with, and its first `up`."""

    name: str
    env: dict[str, str]
    first_up: subprocess.CompletedProcess[str]

    def quantdesk(self, *args: str) -> subprocess.CompletedProcess[str]:
        """The real CLI, run as this host."""
        return run_quantdesk(self.env, *args)


@dataclass
class Desk:
    """Both hosts, the cluster they share and the book."""

    hosts: dict[str, Host]
    address: str
    namespace: str
    database_url: str


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
        "CODEC__KEYS": DESK_KEYS,
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
            hosts[name] = Host(name, env, run_quantdesk(env, "up", "--roles", roles))
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
        assert "keeps its book in a SQLite file" not in result.stderr
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


async def test_runs_on_both_hosts_book_each_trade_once(desk: Desk) -> None:
    client = await connect(
        load_settings(
            temporal={"address": desk.address, "namespace": desk.namespace, "embedded": False},
            codec={"keys": DESK_KEYS},
        )
    )
    handles = await asyncio.gather(
        *(
            client.start_workflow(
                "Portfolio",
                {"portfolio": BOOK, "as_of": AS_OF.isoformat()},
                id=f"portfolio-two-hosts-{index}",
                task_queue=DEFAULT_WORKFLOWS_QUEUE,
                result_type=PortfolioResult,
            )
            for index in range(RUNS)
        )
    )
    results = await asyncio.gather(*(handle.result() for handle in handles))

    book = PortfolioStore(desk.database_url)
    booked = book.trades(BOOK)
    executed = {
        trade_key(result.workflow_id, fill.order.index): fill.trade
        for result in results
        for fill in result.executed
    }
    assert executed, "no run traded"
    assert sorted(t.key for t in booked) == sorted(executed)
    assert count_rows(desk.database_url, trades) == len(executed)
    assert book.get(BOOK).cash == Decimal(100_000) + sum(t.cash_change for t in booked)
    assert await _tool_hosts(client, [handle.id for handle in handles]) == set(ROLES)


async def _tool_hosts(client: Client, workflow_ids: list[str]) -> set[str | None]:
    """The hosts whose workers started the runs' activities on the tools queue."""
    hosts = set()
    for workflow_id in workflow_ids:
        events = (await client.get_workflow_handle(workflow_id).fetch_history()).events
        on_tools = {
            event.event_id
            for event in events
            if event.event_type == EventType.EVENT_TYPE_ACTIVITY_TASK_SCHEDULED
            and event.activity_task_scheduled_event_attributes.task_queue.name == TOOLS_QUEUE
        }
        hosts |= {
            host_of(event.activity_task_started_event_attributes.identity)
            for event in events
            if event.event_type == EventType.EVENT_TYPE_ACTIVITY_TASK_STARTED
            and event.activity_task_started_event_attributes.scheduled_event_id in on_tools
        }
    return hosts


def test_a_sqlite_book_on_shared_servers_is_a_warning_naming_the_variable(
    tmp_path: Path,
) -> None:
    external = {"temporal": {"embedded": False}, "s3": {"embedded": False}}
    warning = private_book_warning(load_settings(data_dir=tmp_path, **external))
    assert warning is not None
    assert str((tmp_path / "quantdesk.db").resolve()) in warning
    assert f"{ENV_PREFIX}DATABASE_URL=postgresql+psycopg://" in warning
    shared = load_settings(database_url="postgresql+psycopg://q@db/q", **external)
    assert private_book_warning(shared) is None
    assert private_book_warning(load_settings(data_dir=tmp_path)) is None  # one host


def test_a_worker_is_its_pid_on_its_own_host() -> None:
    """Hosts may share pids (and, in containers or network namespaces, hostnames): the health
    check of `up` wants both the pid and this host's name."""
    identity = worker_identity("host-b", "tools", pid=42)
    assert identity == "42@host-b tools" and host_of(identity) == "host-b"
    assert is_process(identity, 42, "host-b")
    assert not is_process(identity, 42, "host-c") and not is_process(identity, 2, "host-b")
    assert host_of("temporal-cli") is None


def test_a_host_name_with_a_space_is_refused_naming_the_variable() -> None:
    with pytest.raises(ConfigError, match=f"{ENV_PREFIX}HOST_NAME: .*one word without spaces"):
        load_settings(host_name="host b")
