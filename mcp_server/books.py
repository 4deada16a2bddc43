"""A paper book as an assistant reads it: valued and its risk measured by the Portfolio flow's
own activities at the book's paper clock (``console.books_pages.valued_at``), its latest
trades, and the plans that wait for a person."""

from __future__ import annotations

import asyncio

from client.books import pending_plans, valued_at
from client.desk import Desk
from client.errors import NotFound
from mcp_server.contracts import BookView
from shared.errors import InvalidInput

RECENT_TRADES = 20


async def book_view(desk: Desk, name: str) -> BookView:
    """Book ``name`` now; ``NotFound`` naming the books there are."""
    store = desk.book_io.books
    try:
        book = await asyncio.to_thread(store.get, name)
    except InvalidInput:
        known = ", ".join(b.name for b in await asyncio.to_thread(store.portfolios)) or "none"
        raise NotFound(f"no book called {name!r} (books: {known})") from None
    trades = await asyncio.to_thread(store.trades, name)
    clock = await asyncio.to_thread(store.last_activity, name) or book.created_at
    valued = await valued_at(desk, name, clock)
    return BookView(
        name=book.name,
        broker=book.broker.value,
        currency=book.currency,
        initial_cash=str(book.initial_cash),
        cash=str(book.cash),
        created_at=book.created_at,
        valuation=valued["valuation"].model_dump(mode="json") if "valuation" in valued else None,
        risk=valued["risk"].model_dump(mode="json") if "risk" in valued else None,
        problem=valued.get("problem"),
        recent_trades=[t.model_dump(mode="json") for t in reversed(trades[-RECENT_TRADES:])],
        pending_approvals=[p["workflow_id"] for p in await pending_plans(desk, name)],
    )
