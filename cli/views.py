"""How the CLI shows runs: one live progress view for every workflow, links, failures.

Every workflow's ``progress`` query answers a ``RunProgress`` (some with extra
fields), so one table serves them all: each step's state, done/total, what
waits for ``resume`` and why, LLM calls, tokens, cost, elapsed and the estimate.
A step whose child run's workflow task keeps failing shows "stuck" with the message
(``activities.stuck_runs``), and a notice says which run, why and what to do.
"""

from __future__ import annotations

from collections.abc import Callable, Iterable, Mapping
from typing import Any

from rich.console import Console, Group, RenderableType
from rich.markup import escape
from rich.panel import Panel
from rich.table import Table
from temporalio.client import WorkflowFailureError

from activities.stuck_runs import StuckRun
from client.run_view import innermost_cause
from shared.stats.results import Leaderboard
from shared.stats.tables import LEADERBOARD_HEADINGS, leaderboard_cells
from workflows.progress import RunProgress

console = Console()
STATE_STYLE = {
    "pending": "dim",
    "running": "yellow",
    "waiting": "bold magenta",
    "done": "green",
    "failed": "bold red",
    "skipped": "dim strike",
    "missing": "bold yellow",
    "stuck": "bold red",
}
STUCK_TITLE = "runs whose workflow task keeps failing"
ProgressView = Callable[[Any, Mapping[str, StuckRun]], RenderableType]
"""A live view of a run's progress, given the stuck runs that hold up its steps, by step."""


def _duration(seconds: float | None) -> str:
    if seconds is None:
        return "?"
    minutes, rest = divmod(int(seconds), 60)
    return f"{minutes}m{rest:02d}s" if minutes else f"{seconds:.1f}s"


def progress_table(
    title: str, progress: RunProgress, stuck: Mapping[str, StuckRun] | None = None
) -> Table:
    """The run's steps with their states (``stuck``: the steps held up by a stuck run, by
    step), and a caption with counts, cost and time."""
    stuck = stuck or {}
    table = Table(title=title, show_edge=False, min_width=80, caption_justify="left")
    table.add_column("step")
    table.add_column("state")
    for step, state in progress.steps.items():
        reason = progress.waiting.get(step)
        shown = f"[{STATE_STYLE[state.value]}]{state.value}[/]"
        if step in stuck:
            shown = _stuck_state(stuck[step])
        elif reason:
            shown += f" [magenta]waiting: {reason}[/]"
        table.add_row(step, shown)
    for step, reason in progress.waiting.items():
        if step not in progress.steps:
            table.add_row(step, f"[bold magenta]waiting:[/] {reason}")
    for step, run in stuck.items():
        if step not in progress.steps:
            table.add_row(step, _stuck_state(run))
    usage = progress.usage.total
    phase = f"phase {progress.phase}; " if progress.phase else ""
    table.caption = (
        f"{phase}{progress.done}/{progress.total} steps; LLM calls {usage.calls}, tokens "
        f"{usage.total_tokens}, cost ${usage.cost_usd:.4f}; elapsed "
        f"{_duration(progress.elapsed_seconds)}, left ~{_duration(progress.estimate_seconds)}"
    )
    if progress.waiting:
        table.caption += "\nfix the cause, then: quantdesk resume <workflow id>"
    return table


def _stuck_state(run: StuckRun) -> str:
    return f"[{STATE_STYLE['stuck']}]stuck:[/] {escape(run.message)}"


def titled(title: str) -> ProgressView:
    """``progress_table`` with its title fixed: what the live views take."""
    return lambda progress, stuck: progress_table(title, progress, stuck)


def stepless(table: Callable[[Any], Table]) -> ProgressView:
    """A flow's own live view that lists no steps: stuck runs show in the notice below it."""
    return lambda progress, stuck: table(progress)


def stuck_table(runs: Iterable[StuckRun], title: str = STUCK_TITLE) -> Table:
    """Each stuck run: which, its step in its parent, since when, and the failure."""
    table = Table(title=title, title_style="bold red", show_edge=False, title_justify="left")
    for column in ("run", "step in parent", "failing since", "failure"):
        table.add_column(column, overflow="fold")
    for run in runs:
        failure = f"{run.failure_type}: {run.message}" if run.failure_type else run.message
        table.add_row(
            f"{run.workflow_id}\n[dim]{run.workflow_type}[/]",
            f"{run.step} of {run.parent_id}" if run.parent_id else "-",
            f"{run.since:%Y-%m-%d %H:%M:%S} UTC\n[dim]attempt {run.attempts}[/]",
            f"[bold red]{escape(failure)}[/]\n[dim]{run.cause}[/]",
        )
    return table


def stuck_notice(runs: Iterable[StuckRun]) -> Panel:
    """The warning of a live view: the stuck runs, and what to do about each."""
    shown = list(runs)
    remedies = [f"[bold]{run.workflow_id}[/]: {escape(run.remedy())}" for run in shown]
    return Panel(
        Group(stuck_table(shown, title=""), "", *remedies),
        title="[bold red]stuck: a workflow task keeps failing; the run waits until it is fixed[/]",
        border_style="red",
    )


def print_failure(error: WorkflowFailureError) -> None:
    """Print the innermost cause of a failed run."""
    console.print(f"[bold red]run failed:[/] {innermost_cause(error)}", highlight=False)


def print_links(*links: tuple[str, str | None]) -> None:
    """Links unwrapped, on lines of their own, so they can be copied or clicked (a link
    that is not known, such as the Web UI of an external cluster, is left out)."""
    for label, url in links:
        if url is not None:
            console.print(f"{label}: {url}", soft_wrap=True, highlight=False)


def leaderboard_table(title: str, rows: list[tuple[str, Leaderboard]]) -> Table:
    """The leaderboard columns of each ``(name, leaderboard)`` row, as the reports give them."""
    table = Table(title=title, show_edge=False)
    table.add_column("")
    for heading in LEADERBOARD_HEADINGS:
        table.add_column(heading, justify="right")
    for name, board in rows:
        table.add_row(name, *leaderboard_cells(board))
    return table


def plain(markdown: str) -> str:
    """A report's Markdown sentence for the terminal: bold markers dropped."""
    return markdown.replace("**", "")
