"""Starting a run and following it live: what every `quantdesk run ...` command does.

The live view polls the common ``progress`` query (or a flow's own view of it)
until the run ends; a failed run prints its innermost cause, the one that names
the field or the setting. A run at or below the one followed whose workflow task
keeps failing is shown as stuck, with its message and what to do (``activities.stuck_runs``):
such a run never ends by itself, so the view must not look like it just goes on.
"""

from __future__ import annotations

import asyncio
import contextlib
import inspect
from collections.abc import Awaitable, Callable, Sequence
from datetime import timedelta
from typing import Any, TypeVar

from rich.live import Live
from rich.table import Table
from temporalio.client import (
    Client,
    WorkflowFailureError,
    WorkflowHandle,
    WorkflowQueryFailedError,
)
from temporalio.service import RPCError

from activities.stuck_runs import StuckRun, stuck_below, stuck_steps
from cli import views
from cli.stack.console import console_link
from cli.views import (
    ProgressView,
    console,
    print_failure,
    print_links,
    stepless,
    stuck_notice,
    titled,
)
from client.links import web_ui_url
from shared.config import Settings
from workers.client import ServerLost, across_outages
from workflows.progress import RunProgress

PROGRESS_POLL_SECONDS = 0.5
UNANSWERED = (RPCError, WorkflowQueryFailedError)
"""A progress query that got no answer this time (the view keeps what it shows)."""
STUCK_POLL_SECONDS = 2.0
"""How often a live view asks which runs at or below it are stuck (a visibility query)."""
R = TypeVar("R")
Links = Sequence[tuple[str, str]]
"""(label, url) pairs a finished run points to, printed one a line."""

RECONNECT_PATIENCE = timedelta(minutes=15)
"""How long a follower waits for a lost server before it leaves the run to `quantdesk watch`."""


async def result_across_outages(
    handle: WorkflowHandle[Any, Any],
    *,
    patience: timedelta = RECONNECT_PATIENCE,
    on_lost: Callable[[RPCError], None] | None = None,
) -> Any:
    """The run's result, waiting out a restart of the Temporal server (``ServerLost`` after
    ``patience``): the run goes on there meanwhile."""
    return await across_outages(handle.result, patience=patience, on_lost=on_lost)


def _say_lost(error: RPCError) -> None:
    console.print(
        f"[yellow]lost the Temporal server ({error.message}); the run goes on there. "
        "Waiting for it (`quantdesk up` brings it back)...[/]",
        highlight=False,
    )


def _say_stuck(before: dict[str, StuckRun], now: dict[str, StuckRun]) -> dict[str, StuckRun]:
    """Print the notice of the runs newly stuck, and a line for each that goes on again
    (printed, not only shown live, so that a log or a pipe has them too); ``now``."""
    if new := [run for key, run in now.items() if key not in before]:
        console.print(stuck_notice(new))
    for key in before.keys() - now.keys():
        console.print(f"[green]{key}: its workflow task succeeds again; the run goes on[/]")
    return now


async def follow(
    client: Client,
    handle: WorkflowHandle[Any, Any],
    view: ProgressView,
    progress_type: type[Any] = RunProgress,
    *,
    root_id: str | None = None,
) -> Any:
    """Show the progress query live until the run ends, then return its result. A run at or
    below it (in the tree of ``root_id``, its root; None when it is one) whose workflow task
    keeps failing is announced and shown on the step it holds up, also when it is this run
    itself (whose progress query is then refused)."""
    result_task = asyncio.create_task(result_across_outages(handle, on_lost=_say_lost))
    loop = asyncio.get_running_loop()
    stuck: dict[str, StuckRun] = {}
    asked = -STUCK_POLL_SECONDS
    with Live(console=console, transient=False, refresh_per_second=8) as live:
        while not result_task.done():
            if loop.time() - asked >= STUCK_POLL_SECONDS:
                asked = loop.time()
                with contextlib.suppress(RPCError):
                    stuck = _say_stuck(stuck, await stuck_below(client, handle.id, root_id))
            # Before the first workflow task has run there is no query handler to answer,
            # while the server restarts there is no server, and a stuck run cannot answer.
            with contextlib.suppress(*UNANSWERED):
                progress = await handle.query("progress", result_type=progress_type)
                live.update(view(progress, stuck_steps(handle.id, progress, stuck)))
            await asyncio.wait({result_task}, timeout=PROGRESS_POLL_SECONDS)
        if result_task.exception() is None:
            with contextlib.suppress(*UNANSWERED):
                progress = await handle.query("progress", result_type=progress_type)
                live.update(view(progress, {}))
    return await result_task


async def start_and_follow(
    settings: Settings,
    workflow_type: str,
    workflow_input: Any,
    *,
    workflow_id: str,
    result_type: type[Any],
    summary: str,
    progress_type: type[Any] = RunProgress,
    table: Callable[[Any], Table] | None = None,
    client: Client | None = None,
) -> tuple[Any | None, str | None]:
    """Start a run (connecting unless given a client), show its progress live; its result
    (None if it failed, the cause printed) and its Web UI link."""
    if client is None:
        from workers.client import connect

        client = await connect(settings)
    handle = await client.start_workflow(
        workflow_type,
        workflow_input,
        id=workflow_id,
        task_queue=settings.queues.workflows,
        result_type=result_type,
        static_summary=summary,
    )
    ui_url = web_ui_url(settings, handle.id, handle.result_run_id)
    console.print(f"started [bold]{handle.id}[/]  {ui_url or ''}")
    try:
        view = titled(workflow_type) if table is None else stepless(table)
        return await follow(client, handle, view, progress_type), ui_url
    except WorkflowFailureError as error:
        print_failure(error)
        return None, ui_url
    except ServerLost as error:
        console.print(f"[red]{error}[/]; follow the run again with: quantdesk watch {handle.id}")
        return None, ui_url


async def run_and_show(
    settings: Settings,
    workflow_type: str,
    result_type: type[R],
    workflow_input: Any,
    workflow_id: str,
    summary: str,
    show: Callable[[R], Links | Awaitable[Links]],
    *,
    gap: bool = True,
    **follow_options: Any,
) -> int:
    """What every `quantdesk run ...` does: start the run, follow it live, then (after a blank
    line unless ``gap`` is False) ``show`` its result and print the links ``show`` returns and
    the Web UI's. The exit status: 0, or 1 when the run failed (its cause already printed).
    ``follow_options`` go to ``start_and_follow`` (``progress_type``, ``table``, ``client``)."""
    result, ui_url = await start_and_follow(
        settings,
        workflow_type,
        workflow_input,
        workflow_id=workflow_id,
        result_type=result_type,
        summary=summary,
        **follow_options,
    )
    if result is None:
        return 1
    if gap:
        views.console.print()
    links = show(result)
    if inspect.isawaitable(links):
        links = await links
    page = console_link(settings, workflow_id)
    print_links(*links, *([("console", page)] if page else []), ("Web UI", ui_url))
    return 0
