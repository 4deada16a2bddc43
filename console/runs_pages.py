"""The Runs list, the Run page (and its live part), and the ``resume`` button.

The list shows root runs, newest started first, each with its children counted by status
and a link to them (``?parent=<id>``); ``children=on`` lists every run (``cli.run_tree``).
A run whose workflow task keeps failing is listed as ``stuck``, its failure on hover.
"""

from __future__ import annotations

from dataclasses import dataclass, replace
from datetime import datetime
from urllib.parse import quote

from fastapi import APIRouter, Form, Query, Request
from fastapi.responses import HTMLResponse, RedirectResponse
from temporalio.service import RPCError

from cli.run_tree import Children, children_of, narrowed, tree_clause
from cli.runs import visibility_query
from cli.spending import raise_run_limit
from cli.stuck_runs import is_marked, listed_status
from cli.views import web_ui_url
from console.desk import Desk, rpc_problem
from console.errors import PageError
from console.paging import page_number
from console.run_view import load_run
from console.web import desk_of, page
from shared.errors import InvalidInput
from workflows.visibility import AS_OF, FLOW, PORTFOLIO, SYMBOL

router = APIRouter()

FLOWS = (
    "AutoRun",
    "Pipeline",
    "QuantAgent",
    "Scan",
    "Portfolio",
    "Debate",
    "Risk",
    "Reflect",
    "Evaluate",
    "Backtest",
)
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
        raise PageError(f"status {status!r} is not one of: {', '.join(STATUS_FILTERS)}")
    query = visibility_query(flow or None, symbol or None, portfolio or None, running=False)
    if status:
        query = narrowed(query, f"ExecutionStatus = '{STATUS_FILTERS[status]}'")
    return narrowed(query, tree)


@router.get("/", include_in_schema=False)
async def home() -> RedirectResponse:
    """The console opens on the runs."""
    return RedirectResponse("/runs", 303)


@router.get("/runs", response_class=HTMLResponse)
async def runs(
    request: Request,
    flow: str = "",
    symbol: str = "",
    portfolio: str = "",
    status: str = "",
    parent: str = "",
    children: bool = False,
    limit: int = Query(50, ge=1, le=500),
) -> HTMLResponse:
    """Recent root runs of every flow (a parent's children with ``parent``, every run with
    ``children``), newest first, filtered through the search attributes."""
    desk = desk_of(request)
    query = runs_query(flow, symbol, portfolio, status, tree_clause(parent, children))
    rows = await run_rows(desk, query, limit)
    return page(
        request,
        "runs.html",
        rows=rows,
        query=query,
        flows=FLOWS,
        statuses=STATUS_FILTERS,
        chosen={"flow": flow, "symbol": symbol, "portfolio": portfolio, "status": status},
        parent=parent,
        include_children=children,
    )


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


@router.get("/runs/{workflow_id}", response_class=HTMLResponse)
async def run(
    request: Request, workflow_id: str, page_asked: str = Query("1", alias="page")
) -> HTMLResponse:
    """One run: its steps live, and what its flow produced (an AutoRun's tickers in pages)."""
    run = await load_run(desk_of(request), workflow_id, page_number(page_asked))
    return page(request, "run.html", run=run)


@router.get("/runs/{workflow_id}/live", response_class=HTMLResponse)
async def run_live(
    request: Request, workflow_id: str, page_asked: str = Query("1", alias="page")
) -> HTMLResponse:
    """The part of the Run page that changes while the run goes on (the same page of it)."""
    run = await load_run(desk_of(request), workflow_id, page_number(page_asked))
    return page(request, "run_live.html", run=run)


@router.post("/runs/{workflow_id}/resume")
async def resume(request: Request, workflow_id: str) -> RedirectResponse:
    """Send ``resume``: the run (and its children) try again the calls that wait for a fix."""
    await send_resume(desk_of(request), workflow_id)
    said = quote(f"resume sent to {workflow_id}")
    return RedirectResponse(f"/runs/{quote(workflow_id)}?said={said}", 303)


@router.post("/runs/{workflow_id}/budget")
async def raise_budget(
    request: Request, workflow_id: str, to: float = Form(...)
) -> RedirectResponse:
    """Raise the spending limit of the run's tree and resume what waits on it."""
    desk = desk_of(request)
    try:
        raised = await raise_run_limit(await desk.client(), desk.settings, workflow_id, to, None)
    except InvalidInput as error:
        raise PageError(f"raise the limit: {error}", status=422) from None
    said = quote(f"{workflow_id}: limit ${to:,.2f}; resumed {', '.join(raised.resumed) or 'none'}")
    return RedirectResponse(f"/runs/{quote(workflow_id)}?said={said}", 303)


async def send_resume(desk: Desk, workflow_id: str) -> None:
    """Signal ``resume`` to a running run; ``Conflict`` once it has closed."""
    handle = await desk.running(workflow_id, "nothing to resume")
    try:
        await handle.signal("resume")
    except RPCError as error:
        raise rpc_problem(error, f"no run with id {workflow_id!r}") from None
