"""``Notify``: one notice sent beside the run it is about, never in its way.

A run tells people with ``tell(notice)``: it starts a ``Notify`` run of its own (id
``<run>-notify-<event>``, so one per event: a second start of the same id is refused and
ignored) that outlives it (``ABANDON``) and is not awaited. A notifier that is down retries
in that run for a few minutes and then gives up; the run it reports on has gone on from the
start.
"""

from __future__ import annotations

from datetime import timedelta

from temporalio import workflow
from temporalio.common import RetryPolicy
from temporalio.exceptions import WorkflowAlreadyStartedError
from temporalio.workflow import ParentClosePolicy

with workflow.unsafe.imports_passed_through():
    from activities.notify import NoticeSent, NotifyActivities
    from shared.notify.notices import Notice
    from workflows.activity_calls import run_activity
    from workflows.inputs import RunInput

SEND_START_TO_CLOSE = timedelta(minutes=2)
"""Every URL of a kind in turn, each bounded by its timeout."""
SEND_RETRIES = RetryPolicy(
    initial_interval=timedelta(seconds=15),
    backoff_coefficient=2.0,
    maximum_interval=timedelta(minutes=5),
    maximum_attempts=6,
)
"""About ten minutes of asking a notifier that is down; a notice later than that is stale."""


class NotifyInput(RunInput):
    """The notice to send."""

    notice: Notice


@workflow.defn(name="Notify")
class NotifyWorkflow:
    """Send one notice; its details say where it went."""

    @workflow.run
    async def run(self, args: NotifyInput) -> NoticeSent:
        """The notice to every URL of its kind, each once."""
        notice = args.notice
        sent: NoticeSent = await run_activity(
            NotifyActivities.send_notice,
            notice,
            start_to_close_timeout=SEND_START_TO_CLOSE,
            retry_policy=SEND_RETRIES,
            summary=f"{notice.kind.value}: {notice.title}",
        )
        workflow.set_current_details(
            f"**{notice.kind.value}** sent to {len(sent.deliveries)} URL(s), "
            f"{sent.had_it} had it already"
        )
        return sent


async def tell(notice: Notice) -> None:
    """Start ``notice``'s ``Notify`` run and go on without waiting for it."""
    info = workflow.info()
    try:
        await workflow.start_child_workflow(
            NotifyWorkflow.run,
            NotifyInput(notice=notice),
            id=f"{info.workflow_id}-notify-{notice.key}",
            task_queue=info.task_queue,
            parent_close_policy=ParentClosePolicy.ABANDON,
            static_summary=notice.title,
        )
    except WorkflowAlreadyStartedError:
        workflow.logger.info("notice %s of this run was started already", notice.key)
