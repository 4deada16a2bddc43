"""``Notify``: one notice sent beside the run it is about, never in its way.

A run tells people with ``tell(notice)``: it starts a ``Notify`` run of its own (id
``<the run the notice is about>-notify-<event>``, so one per event: a second start of the same id is refused and
ignored) that outlives it (``ABANDON``) and is not awaited. A notifier that is down retries
in that run as every step does (``durable``: backing off, for the desk's retry budget); the
run it reports on has gone on from the start.
"""

from __future__ import annotations

from datetime import timedelta

from temporalio import workflow
from temporalio.exceptions import WorkflowAlreadyStartedError
from temporalio.workflow import ParentClosePolicy

with workflow.unsafe.imports_passed_through():
    from activities.notify import NoticeSent, NotifyActivities
    from shared.notify.notices import Notice
    from workflows.activity_calls import run_activity
    from workflows.inputs import RunInput
    from workflows.retries import durable

SEND_START_TO_CLOSE = timedelta(minutes=2)
"""Every URL of a kind in turn, each bounded by its timeout."""


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
            **durable(SEND_START_TO_CLOSE),
            summary=f"{notice.kind.value}: {notice.title}",
        )
        workflow.set_current_details(
            f"**{notice.kind.value}** sent to {len(sent.deliveries)} URL(s), "
            f"{sent.had_it} had it already"
        )
        return sent


async def tell(notice: Notice) -> None:
    """Start ``notice``'s ``Notify`` run (``<the run it is about>-notify-<event>``) and go on
    without waiting for it."""
    info = workflow.info()
    try:
        await workflow.start_child_workflow(
            NotifyWorkflow.run,
            NotifyInput(notice=notice),
            id=f"{notice.run}-notify-{notice.key}",
            task_queue=info.task_queue,
            parent_close_policy=ParentClosePolicy.ABANDON,
            static_summary=notice.title,
        )
    except WorkflowAlreadyStartedError:
        workflow.logger.info("notice %s of this run was started already", notice.key)
