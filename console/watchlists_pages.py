"""The Watchlists pages: every watchlist, one watchlist's symbols, and the forms that change
them (create, add, remove, delete), with the same rules and messages as `quantdesk watchlist`.

Symbols are typed (spaces, commas or new lines between them) or come from an uploaded CSV
file (a ``symbol`` column, or one per line), or both. Every edit goes through
``WatchlistEdits``, the CLI's own rules: unknown symbols are refused each named, an empty
list and a symbol given twice each get their message, shown next to the field at fault
with a 422 and what was typed kept. A watchlist's page starts an AutoRun on it through
the Start form, its watchlist already chosen.
"""

from __future__ import annotations

import asyncio
from collections.abc import Awaitable, Callable
from urllib.parse import quote

from fastapi import APIRouter, Request
from fastapi.responses import HTMLResponse, RedirectResponse
from starlette.datastructures import FormData, UploadFile

from client.errors import NotFound
from console.web import desk_of, page
from shared.errors import InvalidInput
from shared.watchlists.csv_file import uploaded_symbols
from shared.watchlists.edits import WatchlistEdits
from shared.watchlists.store import Watchlist
from shared.watchlists.symbols import split_symbols

router = APIRouter()

SYMBOLS_FIELD, CSV_FIELD = "symbols", "csv"
MAX_CSV_BYTES = 1_000_000
"""An uploaded CSV's limit: a list of 500 symbols is about 5 KB."""
REMOVE_FORM = "remove"
"""Where a problem of the symbols ticked for removal is shown (above the table)."""


async def given_symbols(form: FormData) -> list[str]:
    """The typed symbols, then those of the uploaded CSV; neither given is refused."""
    listed = split_symbols(str(value) for value in form.getlist(SYMBOLS_FIELD))
    upload = form.get(CSV_FIELD)
    chosen = upload if isinstance(upload, UploadFile) and upload.filename else None
    if chosen is not None:
        data = await chosen.read(MAX_CSV_BYTES + 1)
        if len(data) > MAX_CSV_BYTES:
            raise InvalidInput(
                CSV_FIELD,
                f"{chosen.filename} is larger than {MAX_CSV_BYTES:,} bytes",
                fix="Upload a CSV of symbols only (a `symbol` column, or one per line).",
            )
        listed += uploaded_symbols(data, chosen.filename or CSV_FIELD)
    if not listed and chosen is None:
        raise InvalidInput(
            SYMBOLS_FIELD, "none given", fix="Type symbols, or choose a CSV file to upload."
        )
    return listed


def _typed(form: FormData) -> dict[str, str]:
    """What was typed in the form's text fields, shown again beside a problem."""
    return {name: str(value) for name, value in form.items() if isinstance(value, str)}


@router.get("/watchlists", response_class=HTMLResponse)
async def watchlists(request: Request) -> HTMLResponse:
    """Every watchlist with its size, and the form that creates one."""
    return await _list_page(request)


async def _list_page(
    request: Request,
    *,
    status: int = 200,
    typed: dict[str, str] | None = None,
    problem: InvalidInput | None = None,
) -> HTMLResponse:
    found = await asyncio.to_thread(desk_of(request).watchlists.store.watchlists)
    return page(
        request,
        "watchlists.html",
        status=status,
        watchlists=found,
        typed=typed or {},
        problems=_problems(problem),
    )


@router.post("/watchlists", response_model=None)
async def create(request: Request) -> HTMLResponse | RedirectResponse:
    """Create a watchlist from known symbols, or show what is wrong with the form."""
    form = await request.form()
    edits = desk_of(request).watchlists
    name = str(form.get("name") or "").strip()
    try:
        symbols = await given_symbols(form)
        created = await asyncio.to_thread(edits.create, name, symbols)
    except InvalidInput as error:
        return await _list_page(request, status=422, typed=_typed(form), problem=error)
    said = f"created watchlist {created.name} with {len(created.symbols)} symbol(s)"
    return _back_to(created.name, said)


@router.get("/watchlists/{name}", response_class=HTMLResponse)
async def watchlist(request: Request, name: str) -> HTMLResponse:
    """One watchlist's symbols in order, with the forms that change it."""
    return await _watchlist_page(request, name)


async def _watchlist_page(
    request: Request,
    name: str,
    *,
    status: int = 200,
    typed: dict[str, str] | None = None,
    problems: dict[str, str] | None = None,
) -> HTMLResponse:
    edits = desk_of(request).watchlists
    try:
        shown = await asyncio.to_thread(edits.store.get, name)
    except InvalidInput as error:
        raise NotFound(str(error)) from None
    return page(
        request,
        "watchlist.html",
        status=status,
        watchlist=shown,
        typed=typed or {},
        problems=problems or {},
    )


@router.post("/watchlists/{name}/add", response_model=None)
async def add(request: Request, name: str) -> HTMLResponse | RedirectResponse:
    """Append known symbols (typed or from a CSV) to the watchlist."""
    form = await request.form()
    edits = desk_of(request).watchlists

    async def change() -> Watchlist:
        return await asyncio.to_thread(edits.add, name, await given_symbols(form))

    return await _changed(request, name, form, change, "added", SYMBOLS_FIELD)


@router.post("/watchlists/{name}/remove", response_model=None)
async def remove(request: Request, name: str) -> HTMLResponse | RedirectResponse:
    """Remove the ticked (or typed) symbols from the watchlist."""
    form = await request.form()
    edits = desk_of(request).watchlists

    async def change() -> Watchlist:
        return await asyncio.to_thread(edits.remove, name, await given_symbols(form))

    return await _changed(request, name, form, change, "removed", REMOVE_FORM)


async def _changed(
    request: Request,
    name: str,
    form: FormData,
    change: Callable[[], Awaitable[Watchlist]],
    verb: str,
    shown_at: str,
) -> HTMLResponse | RedirectResponse:
    """Make the change and go back to the watchlist saying so, or show its problem there
    (a problem of the symbols next to the form they came from: ``shown_at``)."""
    try:
        changed = await change()
    except InvalidInput as error:
        if error.field == "watchlist":  # the watchlist itself is gone
            raise NotFound(str(error)) from None
        problems = _problems(error)
        if error.field == SYMBOLS_FIELD:
            problems = {shown_at: problems.pop(SYMBOLS_FIELD)}
        return await _watchlist_page(
            request, name, status=422, typed=_typed(form), problems=problems
        )
    return _back_to(name, f"{verb}: {name} now follows {len(changed.symbols)} symbol(s)")


@router.post("/watchlists/{name}/delete")
async def delete(request: Request, name: str) -> RedirectResponse:
    """Delete the watchlist (an AutoRun that names it is refused from then on)."""
    edits: WatchlistEdits = desk_of(request).watchlists
    try:
        await asyncio.to_thread(edits.store.delete, name)
    except InvalidInput as error:
        raise NotFound(str(error)) from None
    return RedirectResponse(f"/watchlists?said={quote(f'deleted watchlist {name}')}", 303)


def _back_to(name: str, said: str) -> RedirectResponse:
    return RedirectResponse(f"/watchlists/{quote(name)}?said={quote(said)}", 303)


def _problems(error: InvalidInput | None) -> dict[str, str]:
    """The problem by the field it belongs to (``name``, ``symbols``, ``csv``)."""
    return {} if error is None else {error.field: str(error)}
