"""`quantdesk schedule ...`: put a flow on a cron schedule as a Temporal Schedule.

Schedules are Temporal's own (``temporal schedule list`` shows the same ones), so
they survive restarts of everything quantdesk runs. Each created schedule skips
a run while the previous one is still going (a slow AutoRun never piles up),
catches up missed runs within a window (a worker outage over the close), and
each run analyses the data as of its *scheduled* time (``workflows.inputs.
scheduled_time``), however late it starts. The input is validated when the
schedule is created, not at 15:30 the next day.
"""

from __future__ import annotations

import asyncio
import json
from collections.abc import Callable, Coroutine
from datetime import timedelta
from typing import Any

import typer
from rich.table import Table
from temporalio.client import (
    Client,
    ScheduleActionExecutionStartWorkflow,
    ScheduleActionStartWorkflow,
)
from temporalio.service import RPCError

from cli.views import console
from client.desk import Desk
from client.process_exit import fail_on_quantdesk_errors, finish
from client.schedules import (
    SCHEDULABLE,
    ScheduleRequest,
    ScheduleRow,
    act_on_schedule,
    create_schedule,
    delete_schedule,
    schedule_rows,
)
from shared.config import load_settings

schedule_app = typer.Typer(help="Run flows on cron schedules (Temporal Schedules).")


def schedules_table(rows: list[ScheduleRow]) -> Table:
    """The schedules with their flow, spec, state and next run."""
    table = Table(title="schedules", show_edge=False)
    for column in ("name", "flow", "cron", "paused", "next run", "recent runs"):
        table.add_column(column)
    for row in rows:
        table.add_row(
            row.name,
            row.flow,
            f"{row.cron} {row.time_zone}",
            "yes" if row.paused else "no",
            row.next_run,
            str(row.runs),
        )
    return table


async def _with_client(work: Any) -> int:
    from workers.client import connect

    client = await connect(load_settings())
    try:
        await work(client)
    except RPCError as error:
        console.print(f"[bold red]schedule:[/] {error}", highlight=False)
        return 1
    return 0


def _run(work: Any) -> None:
    with fail_on_quantdesk_errors():
        status = asyncio.run(_with_client(work))
    finish(status)


def _on_desk(work: Callable[[Desk], Coroutine[Any, Any, None]]) -> None:
    """Run ``work`` on the client's desk; its errors are said in one line."""
    with fail_on_quantdesk_errors():
        asyncio.run(work(Desk(load_settings())))
    finish(0)


@schedule_app.command("create")
def create(
    name: str = typer.Argument(..., help="the schedule's id, e.g. desk-close"),
    flow: str = typer.Option(..., help=f"one of: {', '.join(SCHEDULABLE)}"),
    cron: str = typer.Option(..., help='5-field cron, e.g. "30 15 * * 1-5"'),
    tz: str = typer.Option("UTC", help="IANA time zone of the cron, e.g. America/New_York"),
    input_json: str = typer.Option("{}", "--input", help="the flow's input as JSON"),
    symbol: str | None = typer.Option(None, help="shorthand for the input's symbol"),
    provider: str | None = typer.Option(None, help="shorthand for the input's llm.provider"),
    catchup_minutes: int = typer.Option(60, min=1, help="run missed times within this window"),
    paused: bool = typer.Option(False, help="create it paused"),
) -> None:
    """Create a schedule that starts FLOW on CRON in TZ."""
    try:
        payload = json.loads(input_json)
    except json.JSONDecodeError as error:
        raise typer.BadParameter(f"not JSON: {error}", param_hint="--input") from None
    if not isinstance(payload, dict):
        raise typer.BadParameter("give a JSON object", param_hint="--input")
    if symbol:
        payload["symbol"] = symbol
    if provider:
        payload["llm"] = {**payload.get("llm", {}), "provider": provider}
    request = ScheduleRequest(
        name=name,
        flow=flow.lower(),
        cron=cron,
        tz=tz,
        workflow_input=payload,
        catchup=timedelta(minutes=catchup_minutes),
        paused=paused,
    )

    async def work(client: Client) -> None:
        workflow_type = await create_schedule(client, load_settings(), request)
        console.print(f"created schedule [bold]{name}[/]: {workflow_type} at {cron} ({tz})")

    _run(work)


@schedule_app.command("list")
def list_() -> None:
    """List the namespace's schedules (the same as `temporal schedule list`)."""

    async def work(desk: Desk) -> None:
        console.print(schedules_table(await schedule_rows(desk)))

    _on_desk(work)


@schedule_app.command("describe")
def describe(name: str = typer.Argument(...)) -> None:
    """Show a schedule's flow, input, state, recent and next runs."""

    async def work(client: Client) -> None:
        description = await client.get_schedule_handle(name).describe()
        schedule, info = description.schedule, description.info
        action = schedule.action
        assert isinstance(action, ScheduleActionStartWorkflow)
        [raw] = action.args
        payload = await client.data_converter.decode([raw], [dict[str, Any]])
        cron = await description.memo_value("cron", "?")
        lines = [
            f"[bold]{name}[/]: {action.workflow} on {cron} "
            f"({schedule.spec.time_zone_name or 'UTC'}), "
            f"{'paused' if schedule.state.paused else 'active'}",
            f"input: {json.dumps(payload[0])}",
            f"runs so far: {info.num_actions}; skipped for overlap: {info.num_actions_skipped_overlap}",
        ]
        lines += [
            f"recent: {a.scheduled_at.isoformat()} → {a.action.workflow_id}"
            for a in info.recent_actions
            if isinstance(a.action, ScheduleActionExecutionStartWorkflow)
        ]
        lines += [f"next: {t.isoformat()}" for t in info.next_action_times[:3]]
        console.print("\n".join(lines), highlight=False)

    _run(work)


def _simple(verb: str, doc: str) -> None:
    def command(name: str = typer.Argument(...)) -> None:
        async def work(desk: Desk) -> None:
            if verb == "delete":
                await delete_schedule(desk, name)
            else:
                await act_on_schedule(desk, name, verb)
            console.print(f"{verb}: {name}")

        _on_desk(work)

    command.__doc__ = doc
    schedule_app.command(verb)(command)


_simple("pause", "Pause a schedule (no runs start until unpaused).")
_simple("unpause", "Unpause a schedule.")
_simple("trigger", "Start one run now (it analyses as of now).")
_simple("delete", "Delete a schedule (runs already started go on).")
