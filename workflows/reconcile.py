"""``Reconcile``: a book against its broker, reported and never acted on.

Run after every execution at a broker and on a schedule (``quantdesk schedule create
... --flow reconcile``). The report says where the book and the broker differ in
shares, cash and fills; adopting the broker's numbers is a person's explicit act
(``quantdesk broker reconcile BOOK --adopt``), recorded with who and why, never this workflow's.
"""

from __future__ import annotations

from datetime import timedelta

from pydantic import Field
from temporalio import workflow

with workflow.unsafe.imports_passed_through():
    from activities.broker import BookRef, BrokerActivities, Reconciliation
    from shared.notify.notices import Notice, NoticeKind
    from shared.observability.metrics import drift_found
    from workflows.activity_calls import run_activity
    from workflows.broker_orders import BROKER_HEARTBEAT
    from workflows.inputs import RunInput
    from workflows.notify import tell
    from workflows.retries import durable
    from workflows.visibility import tag_run

RECONCILE_START_TO_CLOSE = timedelta(minutes=2)
NOTIFY_DRIFT_PATCH = "notify-drift"
"""Runs from before drift was told to people replay without the notice."""


class ReconcileInput(RunInput):
    """The book to compare with its broker."""

    portfolio: str = Field(min_length=1, description="a book bound to a real broker")


@workflow.defn(name="Reconcile")
class ReconcileWorkflow:
    """Read the broker's positions, cash and fills and compare them with the book's."""

    @workflow.run
    async def run(self, args: ReconcileInput) -> Reconciliation:
        """The book and its broker side by side, and their drift."""
        tag_run("Reconcile", portfolio=args.portfolio)
        result: Reconciliation = await run_activity(
            BrokerActivities.reconcile_book,
            BookRef(portfolio=args.portfolio),
            **durable(RECONCILE_START_TO_CLOSE, heartbeat=BROKER_HEARTBEAT),
            summary=f"reconcile {args.portfolio}",
        )
        state = "clean" if result.drift.clean else "drift"
        workflow.set_current_details(
            f"**{state}** against the broker at {result.at:%Y-%m-%d %H:%M}"
        )
        if not result.drift.clean:
            drift_found(workflow.metric_meter(), args.portfolio)
        if not result.drift.clean and workflow.patched(NOTIFY_DRIFT_PATCH):
            await tell(drift_notice(workflow.info().workflow_id, result))
        return result


def drift_notice(run: str, result: Reconciliation) -> Notice:
    """What people are told of a drift: each share count, the cash and the fills that differ,
    and that adopting the broker's numbers is theirs to do."""
    drift = result.drift
    lines = [
        f"{symbol}: the book {book}, the broker {broker} ({difference:+d})"
        for symbol, book, broker, difference in result.differing_shares()
    ]
    if drift.cash:
        lines.append(f"cash: the broker has {drift.cash:+} against the book")
    if drift.unbooked_fills:
        lines.append(f"fills the book lacks: {', '.join(drift.unbooked_fills)}")
    if drift.unknown_fills:
        lines.append(f"fills the broker lacks: {', '.join(drift.unknown_fills)}")
    lines.append(
        f"To adopt the broker's numbers: quantdesk broker reconcile {result.portfolio} --adopt"
    )
    return Notice(
        kind=NoticeKind.DRIFT,
        run=run,
        title=f"{result.portfolio}: the book and its broker differ",
        body="\n".join(lines),
    )
