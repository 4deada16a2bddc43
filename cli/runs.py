"""`quantdesk runs / watch / resume`: find runs, follow one live, unblock a waiting one.

These read what every quantdesk workflow offers: the search attributes it tags
itself with (flow, symbol, portfolio, as_of), the common ``progress`` query, and
the ``resume`` signal; and the server's mark on a run whose workflow task keeps
failing (``activities.stuck_runs``), listed as "stuck" and explained by ``watch``.
`runs` lists root runs, newest first, each with its children counted by status
(``client.run_tree``, as the console's Runs page does); ``--parent ID`` lists a run's
children, ``--all`` every run.
"""

from __future__ import annotations

import asyncio

import typer
from rich.table import Table
from temporalio.client import Client, WorkflowFailureError
from temporalio.service import RPCError

from cli.follow import ServerLost, follow
from cli.views import STATE_STYLE, console, print_failure, titled
from client.desk import Desk
from client.links import web_ui_url
from client.process_exit import fail_on_quantdesk_errors, finish
from client.run_tree import narrowed, tree_clause
from client.runs import cancel_run, run_rows, send_resume, visibility_query
from shared.config import Settings, load_settings
from shared.errors import InvalidInput

STATUS_STYLE = {
    "running": "yellow",
    "stuck": STATE_STYLE["stuck"],
    "completed": "green",
    "failed": "bold red",
    "timed_out": "red",
    "terminated": "red",
    "canceled": "dim",
    "continued_as_new": "dim",
}
"""A listed run's status (``listed_status``) → its style."""


async def _client(settings: Settings) -> Client:
    from workers.client import connect

    return await connect(settings)


async def list_runs(settings: Settings, query: str, limit: int) -> Table:
    """The most recent runs matching ``query``, newest started first, each with its children
    counted by status (``client.runs.run_rows``, as the console lists them)."""
    rows = await run_rows(Desk(settings), query, limit)
    table = Table(title="quantdesk runs", show_edge=False)
    table.add_column("workflow id", overflow="fold")
    for column in ("flow", "symbol", "portfolio", "as of", "status", "started", "children"):
        table.add_column(column, overflow="fold")
    for row in rows:
        style = STATUS_STYLE.get(row.status, "")
        table.add_row(
            row.workflow_id,
            row.flow,
            row.symbol,
            row.portfolio,
            row.as_of.date().isoformat() if row.as_of else "",
            f"[{style}]{row.status}[/]",
            row.started.strftime("%Y-%m-%d %H:%M:%S"),
            f"{row.children.total}: {row.children.statuses}" if row.children else "",
        )
    table.caption = f"{len(rows)} run(s)" + (f" where {query}" if query else "")
    if any(row.children for row in rows):
        table.caption += " · a run's children: quantdesk runs --parent ID"
    return table


def runs_filter(
    flow: str | None,
    symbol: str | None,
    portfolio: str | None,
    running: bool,
    parent: str | None,
    every: bool,
) -> str:
    """The query of `quantdesk runs`' options: root runs unless ``parent`` (its children) or
    ``every`` (every run, children too) is given; both at once is refused."""
    if parent and every:
        raise InvalidInput(
            "parent", "--parent and --all ask for different lists", fix="Give one of them."
        )
    return narrowed(
        visibility_query(flow, symbol, portfolio, running), tree_clause(parent or "", every)
    )


async def watch_run(settings: Settings, workflow_id: str) -> int:
    """Show the run's progress live until it closes; 0 if it completed."""
    client = await _client(settings)
    handle = client.get_workflow_handle(workflow_id)
    try:
        description = await handle.describe()
    except RPCError as error:
        console.print(f"[bold red]no run {workflow_id}:[/] {error}", highlight=False)
        return 1
    title = f"{description.workflow_type} {workflow_id}"
    page = web_ui_url(settings, workflow_id, description.run_id)
    if page is not None:
        console.print(page, highlight=False)
    try:
        await follow(client, handle, titled(title), root_id=description.root_id)
    except WorkflowFailureError as error:
        print_failure(error)
        console.print(f"{workflow_id}: not completed")
        return 1
    except ServerLost as error:
        console.print(f"[red]{error}[/]", highlight=False)
        return 1
    console.print(f"{workflow_id}: completed")
    return 0


async def resume_run(settings: Settings, workflow_id: str) -> None:
    """Send ``resume``; the run (and its children) retry the calls that wait."""
    waiting = await send_resume(Desk(settings), workflow_id)
    if waiting:
        console.print(f"resumed {workflow_id}; retrying: {', '.join(waiting)}", highlight=False)
    else:
        console.print(f"resumed {workflow_id} (nothing waited here; children were told too)")


async def cancel(settings: Settings, workflow_id: str) -> None:
    """Ask the run to cancel."""
    await cancel_run(Desk(settings), workflow_id)
    console.print(f"cancellation requested: {workflow_id} stops at its next step", highlight=False)


def register(app: typer.Typer) -> None:
    """Add ``runs``, ``watch``, ``resume`` and ``cancel`` to the ``quantdesk`` command."""

    @app.command("runs")
    def runs(
        flow: str | None = typer.Option(None, help="e.g. AutoRun, Pipeline, Scan"),
        symbol: str | None = typer.Option(None, help="only runs about this ticker"),
        portfolio: str | None = typer.Option(None, help="only runs about this portfolio"),
        running: bool = typer.Option(False, help="only runs still going"),
        parent: str | None = typer.Option(None, help="list this run's children"),
        every: bool = typer.Option(False, "--all", help="list every run, children too"),
        limit: int = typer.Option(20, min=1, max=1000),
    ) -> None:
        """List recent root runs, newest first, each with its children counted (the Web UI's
        filters; --parent ID lists a run's children, --all every run)."""
        with fail_on_quantdesk_errors():
            query = runs_filter(flow, symbol, portfolio, running, parent, every)
            console.print(asyncio.run(list_runs(load_settings(), query, limit)))
        finish(0)

    @app.command("watch")
    def watch(workflow_id: str = typer.Argument(..., help="the run to follow")) -> None:
        """Follow a run's progress live: steps, waits, tokens, cost, time left."""
        with fail_on_quantdesk_errors():
            status = asyncio.run(watch_run(load_settings(), workflow_id))
        finish(status)

    @app.command("resume")
    def resume(workflow_id: str = typer.Argument(..., help="the run waiting for a fix")) -> None:
        """Retry the calls a run parked after a failure only a fix could cure (bad key...)."""
        with fail_on_quantdesk_errors():
            asyncio.run(resume_run(load_settings(), workflow_id))
        finish(0)

    @app.command("cancel")
    def cancel_command(workflow_id: str = typer.Argument(..., help="a running run")) -> None:
        """Cancel a running run: it stops at its next step, its children with it."""
        with fail_on_quantdesk_errors():
            asyncio.run(cancel(load_settings(), workflow_id))
        finish(0)
