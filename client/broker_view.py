"""The broker part of a book's page, for a book bound to a real broker.

What a person must see before anything else: whether orders go out with real money
(the console's own ``QUANTDESK_ALPACA__LIVE``; the broker worker's decides), whether
the book is halted (who, why, since), its order intents and fills from the SQL book,
and how it stood against the broker at its latest ``Reconcile`` run. That run is found
through the search attributes (``WorkflowType`` and the ``Portfolio`` its ``tag_run``
sets), its result read once it completed. A paper book has none of this.
"""

from __future__ import annotations

import asyncio
from dataclasses import dataclass
from datetime import datetime

from temporalio.client import WorkflowExecution, WorkflowExecutionStatus
from temporalio.service import RPCError

from activities.broker import Reconciliation
from client.desk import Desk, rpc_problem
from client.links import web_ui_url
from shared import search_attributes as names
from shared.broker.models import BookedFill, Halt, OrderIntent

INTENTS_SHOWN = 100
FILLS_SHOWN = 100
RECONCILE_RUNS_READ = 10
"""The latest Reconcile runs looked at for one that completed (newer ones may still run or
have failed)."""


@dataclass(frozen=True)
class ReconcileRun:
    """One Reconcile run of the book: where it is, and its comparison once completed."""

    workflow_id: str
    status: str
    started: datetime
    web_ui: str | None
    result: Reconciliation | None = None


@dataclass(frozen=True)
class BrokerView:
    """The broker part of a book's page."""

    live: bool
    mode: str
    """Paper or LIVE trading, in a sentence (``AlpacaSettings.trading_mode``)."""
    halt: Halt | None
    """The latest halt or resume of the book, None if it was never halted."""
    intents: list[OrderIntent]
    """The latest, newest first."""
    intent_total: int
    fills: list[BookedFill]
    """The latest, newest first."""
    reconciled: ReconcileRun | None
    """The latest Reconcile run that completed."""
    newer: ReconcileRun | None
    """A Reconcile run newer than that one (running, or failed), if any."""


def reconcile_query(book: str) -> str:
    """The visibility query of the book's Reconcile runs (SQL visibility takes no ORDER BY:
    they come newest first by their close, running ones first)."""
    return f"WorkflowType = 'Reconcile' AND {names.PORTFOLIO} = {names.quoted(book)}"


async def load_broker_view(desk: Desk, book: str) -> BrokerView:
    """The book's broker part, read from the SQL book and Temporal."""
    books = desk.broker_book
    halts, intents, total, fills = await asyncio.gather(
        asyncio.to_thread(books.halts, book),
        asyncio.to_thread(books.intents, book, limit=INTENTS_SHOWN),
        asyncio.to_thread(books.intent_count, book),
        asyncio.to_thread(books.fills, book, limit=FILLS_SHOWN),
    )
    reconciled, newer = await _latest_reconcile(desk, book)
    return BrokerView(
        live=desk.settings.alpaca.live,
        mode=desk.settings.alpaca.trading_mode(),
        halt=halts[-1] if halts else None,
        intents=list(reversed(intents)),
        intent_total=total,
        fills=list(reversed(fills)),
        reconciled=reconciled,
        newer=newer,
    )


async def _latest_reconcile(
    desk: Desk, book: str
) -> tuple[ReconcileRun | None, ReconcileRun | None]:
    """The latest completed Reconcile run of the book (with its result), and the newest run
    when that is another (still running, or failed)."""
    client = await desk.client()
    try:
        runs = [
            run
            async for run in client.list_workflows(reconcile_query(book), limit=RECONCILE_RUNS_READ)
        ]
    except RPCError as error:
        raise rpc_problem(error, f"no Reconcile runs of {book}") from None
    runs.sort(key=lambda run: run.start_time, reverse=True)
    done = next((run for run in runs if run.status == WorkflowExecutionStatus.COMPLETED), None)
    reconciled = None
    if done is not None:
        result = Reconciliation.model_validate(await desk.result(done.id, done.run_id))
        reconciled = _reconcile_run(desk, done, result)
    newer = _reconcile_run(desk, runs[0]) if runs and runs[0] is not done else None
    return reconciled, newer


def _reconcile_run(
    desk: Desk, run: WorkflowExecution, result: Reconciliation | None = None
) -> ReconcileRun:
    status = run.status.name.lower() if run.status else "unknown"
    web_ui = web_ui_url(desk.settings, run.id, run.run_id)
    return ReconcileRun(run.id, status, run.start_time, web_ui, result)
