"""The Runs list, the Run page (and its live part), and the ``resume`` button.

The list shows root runs, newest started first, each with its children counted by status
and a link to them (``?parent=<id>``); ``children=on`` lists every run (``client.run_tree``).
A run whose workflow task keeps failing is listed as ``stuck``, its failure on hover.
"""

from __future__ import annotations

from urllib.parse import quote

from fastapi import APIRouter, Form, Query, Request
from fastapi.responses import HTMLResponse, RedirectResponse

from client.errors import DeskError
from client.paging import page_number
from client.run_tree import tree_clause
from client.run_view import load_run
from client.runs import STATUS_FILTERS, run_rows, runs_query, send_resume
from client.spending import raise_run_limit
from console.web import desk_of, page
from shared.errors import InvalidInput

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
        raise DeskError(f"raise the limit: {error}", status=422) from None
    said = quote(f"{workflow_id}: limit ${to:,.2f}; resumed {', '.join(raised.resumed) or 'none'}")
    return RedirectResponse(f"/runs/{quote(workflow_id)}?said={said}", 303)
