"""The Portfolio pages: every book; one book with its positions, trades, equity curve, risk and
the plans that wait for a person, whom the Approve / Reject buttons answer; for a book bound
to a real broker, its broker part first (``client.broker_view``).

The book is read from SQL and valued, with its risk, by the Portfolio flow's own
activities (``PortfolioActivities.load_portfolio`` and ``compute_risk``, called as plain
functions) as of the book's paper clock: its latest trade or snapshot. A plan that waits
is found through the search attributes (running Portfolio runs of the book) and read with
the run's ``plan`` query; an answer is the run's ``approve`` or ``reject`` update.
"""

from __future__ import annotations

import asyncio
from typing import Any
from urllib.parse import quote

from fastapi import APIRouter, Form, Request
from fastapi.responses import HTMLResponse, RedirectResponse
from pydantic import ValidationError

from client.books import ANSWERS, answer_plan, pending_plans, valued_at
from client.broker_view import load_broker_view
from client.desk import Desk
from client.errors import DeskError, NotFound
from client.spending import raise_book_limit
from console.charts import line_svg
from console.web import desk_of, page
from shared.errors import InvalidInput
from shared.portfolio.models import BrokerKind
from shared.validation_errors import describe_validation_error
from workflows.portfolio import ApprovalRequest

router = APIRouter()

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


@router.post("/portfolios/{name}/budget")
async def raise_book_budget(request: Request, name: str, to: float = Form(...)) -> RedirectResponse:
    """Raise the book's daily spending limit on models and resume its runs that wait on it."""
    desk = desk_of(request)
    try:
        raised = await raise_book_limit(await desk.client(), desk.settings, name, to, None)
    except InvalidInput as error:
        raise DeskError(f"raise the limit: {error}", status=422) from None
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
        raise DeskError(f"{answer}: {describe_validation_error(error)}", status=422) from None
    done = await answer_plan(desk_of(request), workflow_id, answer, asked)
    # Only a path of this console: never a redirect elsewhere.
    target = back if back.startswith("/") and not back.startswith("//") else "/portfolios"
    said = quote(f"{workflow_id}: {done.message}")
    return RedirectResponse(f"{target}?said={said}", 303)
