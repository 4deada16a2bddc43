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
    from workflows.activity_calls import run_activity
    from workflows.broker_orders import BROKER_HEARTBEAT
    from workflows.inputs import RunInput
    from workflows.retries import durable
    from workflows.visibility import tag_run

RECONCILE_START_TO_CLOSE = timedelta(minutes=2)


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
        return result
