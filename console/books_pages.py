"""The Portfolio pages: every book; one book with its positions, trades, equity curve, risk and
the plans that wait for a person, whom the Approve / Reject buttons answer; for a book bound
to a real broker, its broker part first (``console.broker_view``).

The book is read from SQL and valued, with its risk, by the Portfolio flow's own
activities (``PortfolioActivities.load_portfolio`` and ``compute_risk``, called as plain
functions) as of the book's paper clock: its latest trade or snapshot. A plan that waits
is found through the search attributes (running Portfolio runs of the book) and read with
the run's ``plan`` query; an answer is the run's ``approve`` or ``reject`` update.
"""

from __future__ import annotations

import asyncio
from datetime import datetime
from typing import Any
from urllib.parse import quote

from fastapi import APIRouter, Form, Request
from fastapi.responses import HTMLResponse, RedirectResponse
from pydantic import ValidationError
from temporalio.client import WorkflowUpdateFailedError
from temporalio.exceptions import ApplicationError
from temporalio.service import RPCError

from activities.portfolio import LoadRequest, RiskRequest
from cli.runs import visibility_query
from cli.spending import raise_book_limit
from console.broker_view import load_broker_view
from console.charts import line_svg
from console.desk import Desk, rpc_problem
from console.errors import Conflict, NotFound, PageError
from console.web import desk_of, page
from shared.errors import InvalidInput
from shared.portfolio.models import BrokerKind
from shared.validation_errors import describe_validation_error
from workflows.portfolio import ApprovalAnswer, ApprovalRequest

router = APIRouter()

ANSWERS = ("approve", "reject")
TRADES_SHOWN = 100


@router.get("/portfolios", response_class=HTMLResponse)
async def books(request: Request) -> HTMLResponse:
    """Every book with its broker and cash."""
    desk = desk_of(request)
    found = await asyncio.to_thread(desk.book_io.books.portfolios)
    return page(request, "portfolios.html", books=found)


@router.get("/portfolios/{name}", response_class=HTMLResponse)
async def book(request: Request, name: str) -> HTMLResponse:
    """One book; its live part refreshes while the page is open."""
    return page(request, "portfolio.html", **await _book_view(desk_of(request), name))


@router.get("/portfolios/{name}/live", response_class=HTMLResponse)
async def book_live(request: Request, name: str) -> HTMLResponse:
    """The part of the book's page that changes: approvals, positions, trades, curve, risk."""
    return page(request, "portfolio_live.html", **await _book_view(desk_of(request), name))


async def _book_view(desk: Desk, name: str) -> dict[str, Any]:
    store = desk.book_io.books
    try:
        portfolio = await asyncio.to_thread(store.get, name)
    except InvalidInput as error:
        raise NotFound(error.message) from None
    trades = await asyncio.to_thread(store.trades, name)
    snapshots = await asyncio.to_thread(store.snapshots, name)
    clock = await asyncio.to_thread(store.last_activity, name) or portfolio.created_at
    curve = line_svg([(s.as_of, float(s.total_value)) for s in snapshots], f"{name}: total value")
    return {
        "book": portfolio,
        "trades": list(reversed(trades))[:TRADES_SHOWN],
        "snapshots": snapshots,
        "curve": curve,
        "valued": await valued_at(desk, name, clock),
        "pending": await pending_plans(desk, name),
        "spending": await asyncio.to_thread(
            desk.spending.book_standing, name, desk.settings.budget
        ),
        "broker": (
            None if portfolio.broker is BrokerKind.PAPER else await load_broker_view(desk, name)
        ),
    }


async def valued_at(desk: Desk, name: str, clock: datetime) -> dict[str, Any]:
    """The book valued at its paper clock's closes, and its risk (or why they are not known).
    Kept by (book, clock): a new trade or snapshot moves the clock."""

    async def value() -> dict[str, Any]:
        loaded = await asyncio.to_thread(
            desk.book_io.load_portfolio, LoadRequest(portfolio=name, as_of=clock)
        )
        risk = await asyncio.to_thread(
            desk.book_io.compute_risk, RiskRequest(valuation=loaded.valuation)
        )
        return {"valuation": loaded.valuation, "risk": risk}

    try:
        return await desk.kept(("valued", name, clock), value)
    except ApplicationError as error:
        return {"problem": error.message}


async def pending_plans(desk: Desk, name: str) -> list[dict[str, Any]]:
    """The book's Portfolio runs that wait for an approval, with their plans."""
    client = await desk.client()
    query = visibility_query("Portfolio", None, name, running=True)
    waiting = []
    try:
        async for run in client.list_workflows(query):
            plan = await desk.query(client.get_workflow_handle(run.id), "plan")
            if plan and plan.get("awaiting_approval"):
                waiting.append({"workflow_id": run.id, "plan": plan})
    except RPCError as error:
        raise rpc_problem(error, f"no runs of {name}") from None
    return waiting


@router.post("/portfolios/{name}/budget")
async def raise_book_budget(request: Request, name: str, to: float = Form(...)) -> RedirectResponse:
    """Raise the book's daily spending limit on models and resume its runs that wait on it."""
    desk = desk_of(request)
    try:
        raised = await raise_book_limit(await desk.client(), desk.settings, name, to, None)
    except InvalidInput as error:
        raise PageError(f"raise the limit: {error}", status=422) from None
    said = quote(f"{name}: daily limit ${to:,.2f}; resumed {len(raised.resumed)} run(s)")
    return RedirectResponse(f"/portfolios/{quote(name)}?said={said}", 303)


@router.post("/approvals/{workflow_id}/{answer}")
async def answer_approval(
    request: Request,
    workflow_id: str,
    answer: str,
    by: str = Form(""),
    note: str = Form(""),
    back: str = Form(""),
) -> RedirectResponse:
    """Approve or reject a waiting plan through the run's update, saying who and why."""
    if answer not in ANSWERS:
        raise NotFound(f"no answer {answer!r}: use approve or reject")
    try:
        asked = ApprovalRequest(by=by, note=note)
    except ValidationError as error:
        raise PageError(f"{answer}: {describe_validation_error(error)}", status=422) from None
    done = await answer_plan(desk_of(request), workflow_id, answer, asked)
    # Only a path of this console: never a redirect elsewhere.
    target = back if back.startswith("/") and not back.startswith("//") else "/portfolios"
    said = quote(f"{workflow_id}: {done.message}")
    return RedirectResponse(f"{target}?said={said}", 303)


async def answer_plan(
    desk: Desk, workflow_id: str, answer: str, asked: ApprovalRequest
) -> ApprovalAnswer:
    """Send the Portfolio run's ``approve`` or ``reject`` update (the only way a plan is
    answered); ``Conflict`` with the run's reason when it refuses (answered already, another
    plan's hash), or once it has closed."""
    handle = await desk.running(workflow_id, "no approval waits there any more")
    try:
        return await handle.execute_update(answer, asked, result_type=ApprovalAnswer)
    except WorkflowUpdateFailedError as error:
        cause = getattr(error.cause, "message", None) or str(error)
        raise Conflict(f"{answer} refused by {workflow_id}: {cause}") from None
    except RPCError as error:
        raise rpc_problem(error, f"no run with id {workflow_id!r}") from None
