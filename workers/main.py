"""Building and running one worker process of a role.

Each role polls one task queue. LLM roles take their limits from the settings
of the providers on their queue: ``max_concurrent_activities`` caps this
process, and ``max_task_queue_activities_per_second`` is enforced by the server
for the whole queue, so the provider's rate limit holds however many replicas
run. A queue shared by several providers takes the tightest of their limits.
"""

from __future__ import annotations

import asyncio
import gc
import signal
from collections.abc import Callable, Mapping, Sequence
from concurrent.futures import ThreadPoolExecutor
from contextlib import AsyncExitStack
from dataclasses import dataclass, field
from datetime import timedelta
from typing import Any

from temporalio.client import Client
from temporalio.worker import UnsandboxedWorkflowRunner, Worker

from activities.group import ActivityGroup, activities_on
from activities.llm import LlmActivities
from activities.market import MARKET_ACTIVITIES
from activities.result_check import CheckResults
from activities.tools import TOOL_ACTIVITIES
from shared.config import Settings
from shared.errors import ConfigError, QuantdeskError
from shared.llm.providers import providers_on_queue
from shared.queues import BROKER_QUEUE, CHARTS_QUEUE, TOOLS_QUEUE
from workers.identity import worker_identity
from workers.query_answers import InlineQueryAnswers
from workers.roles import WorkerRole
from workflows.catalog import WORKFLOWS
from workflows.inputs import CheckRunInput
from workflows.retries import set_retry_budget

# Sync activities (tools, charts) run in threads; a few per core is plenty.
SYNC_THREADS = 8
GRACEFUL_SHUTDOWN = timedelta(seconds=30)


@dataclass
class WorkerPlan:
    """What one worker of a role polls and runs, and at what limits."""

    queue: str
    workflows: list[type] = field(default_factory=list)
    activities: list[Any] = field(default_factory=list)
    max_concurrent: int | None = None
    queue_rate: float | None = None
    threads: bool = False
    sandboxed: bool = True


def _llm_plan(settings: Settings, queue: str) -> WorkerPlan:
    own = [settings.provider(spec.name) for spec in providers_on_queue(queue)]
    return WorkerPlan(
        queue=queue,
        activities=[LlmActivities(settings, queue).chat],
        max_concurrent=min(p.max_concurrent for p in own),
        queue_rate=min(p.requests_per_second for p in own),
    )


def _plan_workflows(settings: Settings) -> WorkerPlan:
    set_retry_budget(timedelta(minutes=settings.retry_budget_minutes))
    return WorkerPlan(
        queue=settings.queues.workflows,
        workflows=list(WORKFLOWS),
        sandboxed=settings.workflow_sandbox,
    )


def activity_groups(settings: Settings) -> list[ActivityGroup | Callable[..., Any]]:
    """Every activity but ``chat``, as groups and functions; each declares its queue."""
    from activities.autorun import AutoRunActivities
    from activities.backtest import BacktestActivities
    from activities.broker import BrokerActivities
    from activities.charts import ChartActivities
    from activities.evaluation import EvaluationActivities
    from activities.notify import NotifyActivities
    from activities.portfolio import PortfolioActivities
    from activities.reflection import ReflectionActivities
    from activities.research import ResearchActivities
    from activities.scan import SCAN_ACTIVITIES
    from activities.social import SocialActivities
    from activities.watch import WatchActivities

    return [
        *TOOL_ACTIVITIES,
        *MARKET_ACTIVITIES,
        *SCAN_ACTIVITIES,
        ChartActivities(settings),
        ResearchActivities(settings),
        ReflectionActivities(settings),
        BacktestActivities(settings),
        EvaluationActivities(settings),
        AutoRunActivities(settings),
        PortfolioActivities(settings),
        BrokerActivities(settings),
        SocialActivities(settings),
        NotifyActivities(settings),
        WatchActivities(settings),
    ]


def _threaded_plan(queue: str) -> Callable[[Settings], WorkerPlan]:
    """The plan of a role whose activities (sync, in threads) declare ``queue``."""

    def plan(settings: Settings) -> WorkerPlan:
        return WorkerPlan(
            queue=queue, activities=activities_on(queue, activity_groups(settings)), threads=True
        )

    return plan


PLANNERS = {
    WorkerRole.WORKFLOWS: _plan_workflows,
    WorkerRole.TOOLS: _threaded_plan(TOOLS_QUEUE),
    WorkerRole.CHARTS: _threaded_plan(CHARTS_QUEUE),
    WorkerRole.BROKER: _threaded_plan(BROKER_QUEUE),
}


def plan_for(role: WorkerRole, settings: Settings) -> WorkerPlan:
    """The plan of ``role`` under ``settings``."""
    if role in PLANNERS:
        return PLANNERS[role](settings)
    return _llm_plan(settings, role.value)


def build_worker(client: Client, plan: WorkerPlan, identity: str | None = None) -> Worker:
    """A Temporal worker for ``plan`` (sync activities get a thread pool), polling as
    ``identity`` (the client's, ``<pid>@<hostname>``, when None)."""
    if not plan.workflows and not plan.activities:
        raise ConfigError("role", f"nothing is registered to run on queue {plan.queue!r}")
    options: dict[str, Any] = {}
    if plan.threads:
        options["activity_executor"] = ThreadPoolExecutor(SYNC_THREADS)
    if plan.max_concurrent is not None:
        options["max_concurrent_activities"] = plan.max_concurrent
    if plan.queue_rate is not None:
        options["max_task_queue_activities_per_second"] = plan.queue_rate
    if not plan.sandboxed:
        # The sandbox enters and leaves its import hooks for every activation and for every
        # payload the SDK converts (compiling a string of code each time), and builds a
        # module namespace per run: a sixth of a 100-name desk's throughput here. The tests
        # keep it as the determinism guard (``workflow_sandbox``).
        options["workflow_runner"] = UnsandboxedWorkflowRunner()
    return Worker(
        client,
        task_queue=plan.queue,
        workflows=plan.workflows,
        activities=plan.activities,
        graceful_shutdown_timeout=GRACEFUL_SHUTDOWN,
        identity=identity,
        # A domain error raised in workflow code fails the run instead of the workflow
        # task, which Temporal would retry forever while the run looks alive.
        workflow_failure_exception_types=[QuantdeskError],
        interceptors=[
            *([CheckRunInput(), InlineQueryAnswers()] if plan.workflows else []),
            *([CheckResults()] if plan.activities else []),
        ],
        **options,
    )


def freeze_startup_heap() -> None:
    """Put every object alive now (modules, schemas, settings: what lives as long as the
    process) out of the garbage collector's sight, after collecting what is already garbage.

    A full collection walks every tracked object: with a worker's ~440k after its imports it
    stopped the event loop, and every workflow task and activity on it, for 0.3-0.8 s here, a
    few times a Pipeline (a Pipeline at 0.4 s a call took 6.1-6.7 s with them, 4.8-5.0 s
    without). Frozen objects are never walked; what calls create still is."""
    gc.collect()
    gc.freeze()


def plans_for(roles: Sequence[WorkerRole], settings: Settings) -> dict[WorkerRole, WorkerPlan]:
    """The plan of each of ``roles``: built before connecting, so a setting no worker can
    serve with (a LangChain class that does not import) fails at once, naming it."""
    return {role: plan_for(role, settings) for role in roles}


async def run_worker(
    client: Client, plans: Mapping[WorkerRole, WorkerPlan], settings: Settings
) -> None:
    """Run a worker of each role's plan in this process (each polling its queue under its
    own identity) until SIGTERM or SIGINT, then drain in-flight work and return."""
    workers = [
        build_worker(client, plan, worker_identity(settings.host_name, role))
        for role, plan in plans.items()
    ]
    freeze_startup_heap()
    stop = asyncio.Event()
    loop = asyncio.get_running_loop()
    for signum in (signal.SIGTERM, signal.SIGINT):
        loop.add_signal_handler(signum, stop.set)
    async with AsyncExitStack() as running:
        for worker in workers:
            await running.enter_async_context(worker)
        await stop.wait()
