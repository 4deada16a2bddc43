"""What `quantdesk up` runs, and how each part proves it is healthy.

A component is a name, an address, a launch spec (absent when the endpoint is
external and only checked) and a check that says why it is not healthy yet.
`up` polls the same check that `status` runs once, so "started" and "running"
mean the same thing in both. Temporal is healthy only when its namespace has
quantdesk's search attributes, which the check adds where they are missing
(``workers.namespace_setup``), as the S3 check creates missing buckets: a cluster
quantdesk did not start is set up by the first `up`. Where the credentials may
not add them, the problem is ``Blocked``: `up` stops waiting at once and says
which command an operator must run. A worker is healthy only when the server
lists a poller on its task queue whose identity names the worker's pid and this
host: a poller of a killed predecessor lingers in the list for minutes and must
not count, nor may a process of the same pid on another host. The S3 server is
healthy only when a probe object round-trips in every bucket
(``cli.stack.storage_probe``). The local model server (``cli.stack.local_llm``)
is part of the plan only when a model is configured; the web console
(``cli.stack.console``) always is.
"""

from __future__ import annotations

import asyncio
import sys
from collections.abc import Awaitable, Callable, Sequence
from dataclasses import dataclass, replace
from types import TracebackType
from typing import TypeVar

from temporalio.api.workflowservice.v1 import DescribeNamespaceRequest
from temporalio.client import Client
from temporalio.service import RPCError

from cli.stack.console import CONSOLE, codec_endpoint, console_server, console_url
from cli.stack.console import health_problem as console_problem
from cli.stack.local_llm import (
    LOCAL_LLM,
    LOCAL_LLM_HEALTH_TIMEOUT,
    health_problem,
    local_llm_server,
)
from cli.stack.pollers import pollers_of
from cli.stack.servers import (
    TEMPORAL_METRICS_OFFSET,
    PortClaim,
    ServerLaunch,
    http_answers,
    s3_server,
    section_env,
    temporal_dev_server,
)
from cli.stack.storage_probe import round_trip_problem
from shared.config import ENV_PREFIX, Settings, TaskQueues
from shared.errors import NeedsOperator, QuantdeskError
from shared.ports import LOOPBACK
from shared.queues import BROKER_QUEUE, CHARTS_QUEUE, TOOLS_QUEUE
from shared.search_attributes import SEARCH_ATTRIBUTES
from shared.storage.objects import ObjectStore
from workers.client import connect
from workers.identity import is_process
from workers.namespace_setup import ensure_search_attributes
from workers.roles import WorkerRole, serving_roles, unanswered

T = TypeVar("T")


class Blocked(str):
    """A problem waiting cannot fix (the cluster refuses what quantdesk needs): `up` stops
    waiting for the component at once and shows it, with the command that fixes it."""


Problem = str | None
"""Why a component is not healthy (a ``Blocked`` one for good), or None when it is."""

RPC_TIMEOUT = 3.0
# How long a freshly started component may take to pass its check. Generous on
# purpose: idle, each passes in 2-20 s here, but on a loaded 2-core machine a
# worker (pandas, matplotlib, TA-Lib imports, the sandbox validating every
# workflow) was still "unhealthy" after 60 s (issue 14), and the servers (SQLite
# schema and namespace; SeaweedFS growing its first volumes) share the same cores.
# A healthy component ends the wait at once, so a long limit costs nothing.
SERVER_HEALTH_TIMEOUT = 90.0
WORKER_HEALTH_TIMEOUT = 120.0
# How long a worker that was already running may show no poller before `up`
# restarts it. After the dev server went away, a worker retries its polls with a
# back-off that reaches several seconds (measured here: pollers back within 8 s of
# the server's return after a 150 s outage); 30 s is a few back-off periods.
WORKER_RECONNECT_GRACE = 30.0
# The queue each non-LLM role polls; an LLM role polls the queue named like the role.
ROLE_QUEUES: dict[WorkerRole, Callable[[TaskQueues], str]] = {
    WorkerRole.WORKFLOWS: lambda queues: queues.workflows,
    WorkerRole.TOOLS: lambda queues: TOOLS_QUEUE,
    WorkerRole.CHARTS: lambda queues: CHARTS_QUEUE,
    WorkerRole.BROKER: lambda queues: BROKER_QUEUE,
}
# Workers are told these sections explicitly, so they poll exactly the cluster and
# queues their health checks look at, and reach the local model where `up` serves
# it, even when `up` got settings from code.
WORKER_SETTING_SECTIONS = ("temporal", "queues", "local_llm")
WORKER = "worker"
"""The component name of the worker process that serves every role (`up` without --split)."""
TEMPORAL = "temporal"


@dataclass(frozen=True)
class Component:
    """One supervised part of the stack."""

    name: str
    address: str
    check: Callable[[int | None], Problem]
    launch: Callable[[], ServerLaunch] | None = None
    timeout: float = SERVER_HEALTH_TIMEOUT
    is_worker: bool = False
    metrics: str | None = None
    """host:port of its Prometheus /metrics endpoint, when it serves one."""

    @property
    def patience(self) -> float:
        """How long `up` waits for this component when it was already running.

        A worker gets the reconnect grace, then it is restarted; a server (or an
        external endpoint) is never restarted while it lives, so it gets its whole
        health timeout: it may still be starting from an earlier `up`."""
        return WORKER_RECONNECT_GRACE if self.is_worker else self.timeout


class TemporalProbe:
    """One lazily connected client shared by every check, driven from synchronous code."""

    def __init__(self, settings: Settings) -> None:
        self._settings = settings
        self._runner = asyncio.Runner()
        self._client: Client | None = None

    def __enter__(self) -> TemporalProbe:
        return self

    def __exit__(
        self,
        kind: type[BaseException] | None,
        error: BaseException | None,
        tb: TracebackType | None,
    ) -> None:
        self._runner.close()

    def _call(self, step: Callable[[Client], Awaitable[T]]) -> T:
        """Run ``step`` with a connected client, giving up after ``RPC_TIMEOUT``."""

        async def bounded() -> T:
            if self._client is None:
                self._client = await connect(self._settings)
            return await step(self._client)

        return self._runner.run(asyncio.wait_for(bounded(), RPC_TIMEOUT))

    def _problem(self, step: Callable[[Client], Awaitable[Problem]]) -> Problem:
        """``step``'s verdict, or the reason the cluster could not be asked."""
        try:
            return self._call(step)
        except NeedsOperator as error:
            return Blocked(error)
        except QuantdeskError as error:
            return str(error)
        except RPCError as error:
            return f"Temporal at {self._settings.temporal.address}: {error.message}"
        except TimeoutError:
            return f"Temporal at {self._settings.temporal.address} gave no answer in {RPC_TIMEOUT}s"

    def cluster_problem(self) -> Problem:
        """Whether the frontend answers, knows the configured namespace and has (or now got)
        quantdesk's search attributes there."""
        namespace = self._settings.temporal.namespace

        async def describe(client: Client) -> Problem:
            await client.workflow_service.describe_namespace(
                DescribeNamespaceRequest(namespace=namespace)
            )
            await ensure_search_attributes(client)
            return None

        return self._problem(describe)

    def poller_problem(self, queue: str, pid: int | None) -> Problem:
        """Whether process ``pid`` of this host polls ``queue`` (for workflow or activity tasks)."""
        namespace, host = self._settings.temporal.namespace, self._settings.host_name

        async def polled(client: Client) -> Problem:
            pollers = await pollers_of(client, namespace, queue)
            if pid is not None and any(is_process(p.identity, pid, host) for p in pollers):
                return None
            return f"no poller of pid {pid}@{host} on task queue {queue!r} yet"

        return self._problem(polled)


def _ui_problem(url: str) -> Problem:
    return None if http_answers(url) else f"the Web UI at {url} does not answer"


def _s3_problem(settings: Settings) -> Problem:
    """Create missing buckets (the endpoint answers, takes our keys), then probe each one."""
    store = ObjectStore.from_settings(settings)
    try:
        store.ensure_buckets(*settings.s3.buckets)
    except NeedsOperator as error:
        return Blocked(error)
    except QuantdeskError as error:
        return str(error)
    return round_trip_problem(store, settings.s3.buckets)


def ui_url(settings: Settings) -> str:
    """Where the embedded dev server serves the Temporal Web UI."""
    return f"http://{LOOPBACK}:{settings.temporal.ui_port}"


def queue_of(role: WorkerRole, settings: Settings) -> str:
    """The task queue a worker of ``role`` polls."""
    pick = ROLE_QUEUES.get(role)
    return pick(settings.queues) if pick else role.value


def worker_env(settings: Settings) -> dict[str, str]:
    """Variables that make a worker agree with the supervisor on data dir, host name (its
    identity, which the health check reads), cluster and queues."""
    env = {
        f"{ENV_PREFIX}DATA_DIR": str(settings.data_dir.resolve()),
        f"{ENV_PREFIX}HOST_NAME": settings.host_name,
    }
    for section in WORKER_SETTING_SECTIONS:
        env |= section_env(settings, section)
    return env


def metrics_port(settings: Settings, index: int) -> int:
    """The /metrics port `up` gives its ``index``-th process: the console's is the first,
    the workers' the next ones."""
    return settings.metrics.up_ports_from + index


def _metrics_launch(launch: ServerLaunch, port: int) -> ServerLaunch:
    """``launch`` serving its metrics on ``port`` of the loopback, the port checked free."""
    claim = PortClaim(port, f"{ENV_PREFIX}METRICS__UP_PORTS_FROM", "metrics")
    env = {f"{ENV_PREFIX}METRICS__HOST": LOOPBACK, f"{ENV_PREFIX}METRICS__PORT": str(port)}
    return replace(launch, ports=[*launch.ports, claim], env={**launch.env, **env})


def worker_launch(
    settings: Settings, name: str, roles: Sequence[WorkerRole], metrics: int
) -> ServerLaunch:
    """The real worker command, run by the interpreter running this CLI: one process named
    ``name`` serving each of ``roles``, its metrics on port ``metrics``."""
    argv = [sys.executable, "-m", "cli.main", "worker", "--role", ",".join(r.value for r in roles)]
    serving = serving_roles(settings)
    answering = ",".join(r.value for r in roles if r not in ROLE_QUEUES and r in serving)
    launch = ServerLaunch(name, argv, ports=[], env=worker_env(settings), answers=answering)
    return _metrics_launch(launch, metrics)


def _temporal(settings: Settings, probe: TemporalProbe) -> Component:
    address = settings.temporal.address
    if not settings.temporal.embedded:
        return Component(TEMPORAL, address, lambda _pid: probe.cluster_problem())
    return Component(
        TEMPORAL,
        address,
        lambda _pid: probe.cluster_problem() or _ui_problem(ui_url(settings)),
        lambda: temporal_dev_server(settings, SEARCH_ATTRIBUTES, codec_endpoint(settings)),
        metrics=f"{LOOPBACK}:{settings.temporal.port + TEMPORAL_METRICS_OFFSET}",
    )


def _s3(settings: Settings) -> Component:
    launch = (
        (lambda: s3_server(settings, *settings.s3_credentials())) if settings.s3.embedded else None
    )
    return Component("s3", settings.s3.endpoint, lambda _pid: _s3_problem(settings), launch)


def _local_llm(settings: Settings) -> Component:
    return Component(
        LOCAL_LLM,
        f"{LOOPBACK}:{settings.local_llm.port}",
        lambda _pid: health_problem(settings),
        lambda: local_llm_server(settings),
        LOCAL_LLM_HEALTH_TIMEOUT,
    )


def _console(settings: Settings) -> Component:
    """The web console, told the stack's data dir, cluster and queues like a worker."""

    port = metrics_port(settings, 0)

    def launch() -> ServerLaunch:
        spec = console_server(settings)
        return _metrics_launch(replace(spec, env={**worker_env(settings), **spec.env}), port)

    address = console_url(settings).removeprefix("http://")
    return Component(
        CONSOLE,
        address,
        lambda _pid: console_problem(settings),
        launch,
        metrics=f"{LOOPBACK}:{port}",
    )


def _worker(
    settings: Settings, name: str, roles: Sequence[WorkerRole], probe: TemporalProbe
) -> Component:
    """One worker process serving ``roles``: healthy once it polls every one of their queues.
    Its metrics port follows its first role's place, so a restarted worker keeps its port."""
    queues = [queue_of(role, settings) for role in roles]
    port = metrics_port(settings, 1 + list(WorkerRole).index(roles[0]))

    def problem(pid: int | None) -> Problem:
        return next(filter(None, (probe.poller_problem(q, pid) for q in queues)), None)

    return Component(
        name,
        queues[0] if len(queues) == 1 else f"{len(queues)} task queues",
        problem,
        lambda: worker_launch(settings, name, roles, port),
        WORKER_HEALTH_TIMEOUT,
        is_worker=True,
        metrics=f"{LOOPBACK}:{port}",
    )


def split_worker_name(role: WorkerRole) -> str:
    """The component name of ``role``'s own process under `up --split`."""
    return f"{WORKER}-{role.value}"


def worker_components(
    settings: Settings, roles: Sequence[WorkerRole], probe: TemporalProbe, *, split: bool
) -> list[Component]:
    """The worker processes serving ``roles``: one for all of them (``WORKER``), or with
    ``split`` one per role. The LLM roles left out because no provider of theirs can answer are
    polled all the same (by the offline worker's process when split; a few MB each, the SDKs
    being imported on first call): a run on such a provider then waits at its call saying
    which key is missing, as on a worker of its own, never silently."""
    folded = [role for role in unanswered(settings) if role not in roles]
    if not split:
        served = [role for role in WorkerRole if role in roles or role in folded]
        return [_worker(settings, WORKER, served, probe)] if served else []
    return [
        _worker(
            settings,
            split_worker_name(role),
            [role, *(folded if role is WorkerRole.LLM_OFFLINE else ())],
            probe,
        )
        for role in roles
    ]


def plan(
    settings: Settings, roles: Sequence[WorkerRole], probe: TemporalProbe, *, split: bool = False
) -> list[Component]:
    """Servers first (workers need them), then the ``worker_components``."""
    servers = [_temporal(settings, probe), _s3(settings)]
    if settings.local_llm.model is not None:
        servers.append(_local_llm(settings))
    servers.append(_console(settings))
    return servers + worker_components(settings, roles, probe, split=split)
