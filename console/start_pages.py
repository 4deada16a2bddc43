"""The Start page: a form per flow, and the schedules with pause / unpause / trigger.

A form is built from the flow's input model (``console.forms``); a filled one is checked
by that model before anything starts, and a problem is shown next to its field with a
422. An AutoRun's ``watchlist`` is a menu of the watchlists there are (a watchlist's page
links here with it chosen: ``/start/autorun?watchlist=NAME``), and its names are checked
against the data before it starts, as `quantdesk run autorun` does. The run starts on the configured workflow queue under an id like the CLI's, and the
page moves to the new run's page. Schedules are Temporal's own (``quantdesk schedule``).
"""

from __future__ import annotations

import asyncio
from dataclasses import replace
from urllib.parse import quote

from fastapi import APIRouter, Request
from fastapi.responses import HTMLResponse, RedirectResponse
from pydantic import BaseModel

from client.desk import Desk
from client.schedules import act_on_schedule, schedule_rows
from client.starting import STARTABLE, start_flow, startable
from console.forms import FormField, form_fields, payload_of, problems_of
from console.web import desk_of, page
from shared.errors import InvalidInput

router = APIRouter()

WATCHLIST_FIELD = "watchlist"


@router.get("/start", response_class=HTMLResponse)
async def start(request: Request) -> HTMLResponse:
    """Every flow's form, and the schedules."""
    return page(
        request,
        "start.html",
        flows=STARTABLE,
        schedules=await schedule_rows(desk_of(request)),
    )


async def _fields(desk: Desk, model: type[BaseModel]) -> list[FormField]:
    """The form of ``model``, a ``watchlist`` field as a menu of the watchlists there are."""
    fields = form_fields(model)
    if not any(spec.name == WATCHLIST_FIELD for spec in fields):
        return fields
    found = await asyncio.to_thread(desk.watchlists.store.watchlists)
    menu = [w.name for w in found]
    return [
        replace(spec, kind="choice", options=menu) if spec.name == WATCHLIST_FIELD else spec
        for spec in fields
    ]


@router.get("/start/{flow}", response_class=HTMLResponse)
async def start_form(request: Request, flow: str) -> HTMLResponse:
    """One flow's form, blank (its defaults shown) but for fields the address fills in
    (``?watchlist=tech``)."""
    workflow_type, model = startable(flow)
    fields = await _fields(desk_of(request), model)
    given = {
        spec.name: request.query_params.getlist(spec.name)
        for spec in fields
        if spec.name in request.query_params
    }
    return page(
        request,
        "start_flow.html",
        flow=flow,
        workflow_type=workflow_type,
        fields=fields,
        given=given,
        problems={},
    )


@router.post("/start/{flow}", response_model=None)
async def start_run(request: Request, flow: str) -> HTMLResponse | RedirectResponse:
    """Check the filled form with the flow's model (and an AutoRun's names against the
    data); start the run, or show what is wrong."""
    workflow_type, model = startable(flow)
    desk = desk_of(request)
    fields = await _fields(desk, model)
    form = await request.form()
    payload = payload_of(fields, form)
    problems = problems_of(model, payload) or await _names_problems(desk, payload)
    if problems:
        given = {spec.name: form.getlist(spec.name) for spec in fields}
        return page(
            request,
            "start_flow.html",
            status=422,
            flow=flow,
            workflow_type=workflow_type,
            fields=fields,
            given=given,
            problems=problems,
        )
    workflow_id = await start_flow(desk, flow, payload, "the console")
    return RedirectResponse(f"/runs/{quote(workflow_id)}", 303)


async def _names_problems(desk: Desk, payload: dict[str, object]) -> dict[str, str]:
    """An unknown watchlist, or unknown symbols (each named), as the problem of its field."""
    try:
        await asyncio.to_thread(desk.watchlists.check_autorun_names, payload)
    except InvalidInput as error:
        return {error.field: str(error)}
    return {}


@router.post("/schedules/{name}/{verb}")
async def schedule_action(request: Request, name: str, verb: str) -> RedirectResponse:
    """Pause, unpause or trigger a schedule."""
    await act_on_schedule(desk_of(request), name, verb)
    return RedirectResponse(f"/start?said={quote(f'{verb}: {name}')}", 303)
