"""Finding runs and nudging one: the visibility query of the filters every door offers (flow,
symbol, portfolio, status, part of the tree), the listed runs with their stuck problem and their
children by status, and the ``resume`` signal."""

from __future__ import annotations

from dataclasses import dataclass, replace
from datetime import datetime

from temporalio.service import RPCError

from activities.stuck_runs import is_marked, listed_status
from client.desk import Desk, rpc_problem
from client.errors import DeskError
from client.links import web_ui_url
from client.run_tree import Children, children_of, narrowed
from shared import search_attributes as names
from workflows.visibility import AS_OF, FLOW, PORTFOLIO, SYMBOL


def visibility_query(
    flow: str | None, symbol: str | None, portfolio: str | None, running: bool
) -> str:
    """The list filter the Web UI would use for these options (values quoted safely)."""
    clauses = []
    if flow:
        clauses.append(f"{names.FLOW} = {names.quoted(flow)}")
    if symbol:
        clauses.append(f"{names.SYMBOL} = {names.quoted(symbol.upper())}")
    if portfolio:
        clauses.append(f"{names.PORTFOLIO} = {names.quoted(portfolio)}")
    if running:
        clauses.append("ExecutionStatus = 'Running'")
    return " AND ".join(clauses)


STATUS_FILTERS = {
    "running": "Running",
    "completed": "Completed",
    "failed": "Failed",
    "canceled": "Canceled",
    "terminated": "Terminated",
    "timed_out": "TimedOut",
}
"""The status choices of the filter → their names in a visibility query."""


@dataclass(frozen=True)
class RunRow:
    """One line of the Runs list."""

    workflow_id: str
    flow: str
    symbol: str
    portfolio: str
    as_of: datetime | None
    status: str
    started: datetime
    web_ui: str | None
    problem: str = ""
    """Why its workflow task keeps failing, when it does (its status is then ``stuck``)."""
    children: Children | None = None
    """Its direct children by status, when it has any."""


def runs_query(flow: str, symbol: str, portfolio: str, status: str, tree: str = "") -> str:
    """The visibility query of the filters (quoted like the CLI's `quantdesk runs`) and of
    the part of the tree listed (``run_tree.tree_clause``)."""
    if status and status not in STATUS_FILTERS:
        raise DeskError(f"status {status!r} is not one of: {', '.join(STATUS_FILTERS)}")
    query = visibility_query(flow or None, symbol or None, portfolio or None, running=False)
    if status:
        query = narrowed(query, f"ExecutionStatus = '{STATUS_FILTERS[status]}'")
    return narrowed(query, tree)


async def run_rows(desk: Desk, query: str, limit: int) -> list[RunRow]:
    """Up to ``limit`` runs matching the visibility ``query``, newest started first, each
    with its stuck problem and its children by status."""
    client = await desk.client()
    rows = []
    marked: list[tuple[str, str]] = []
    try:
        async for run in client.list_workflows(query or None, limit=limit):
            attributes = run.typed_search_attributes
            rows.append(
                RunRow(
                    workflow_id=run.id,
                    flow=attributes.get(FLOW) or run.workflow_type,
                    symbol=attributes.get(SYMBOL) or "",
                    portfolio=attributes.get(PORTFOLIO) or "",
                    as_of=attributes.get(AS_OF),
                    status=listed_status(run),
                    started=run.start_time,
                    web_ui=web_ui_url(desk.settings, run.id, run.run_id),
                )
            )
            if is_marked(run):
                marked.append((run.id, run.run_id))
    except RPCError as error:
        raise rpc_problem(error, "no such runs") from None
    problems = await desk.stuck_messages(marked)
    families = await children_of(client, [row.workflow_id for row in rows])
    return sorted(
        (
            replace(
                row,
                problem=problems.get(row.workflow_id, ""),
                children=families.get(row.workflow_id),
            )
            for row in rows
        ),
        key=lambda row: row.started,
        reverse=True,
    )


async def send_resume(desk: Desk, workflow_id: str) -> list[str]:
    """Signal ``resume`` to a running run (its children are told too); the steps that waited
    here for it (none when only a child waits, or the run cannot say now). ``Conflict`` once
    it has closed."""
    handle = await desk.running(workflow_id, "nothing to resume")
    progress = await desk.query(handle, "progress")
    try:
        await handle.signal("resume")
    except RPCError as error:
        raise rpc_problem(error, f"no run with id {workflow_id!r}") from None
    return sorted((progress or {}).get("waiting") or {})


async def cancel_run(desk: Desk, workflow_id: str) -> None:
    """Ask a running run to cancel (it stops at its next step; its children are cancelled
    with it); ``Conflict`` once it has closed."""
    handle = await desk.running(workflow_id, "nothing to cancel")
    try:
        await handle.cancel()
    except RPCError as error:
        raise rpc_problem(error, f"no run with id {workflow_id!r}") from None
