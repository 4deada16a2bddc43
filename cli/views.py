"""How the CLI shows runs: one live progress view for every workflow, links, failures.

Every workflow's ``progress`` query answers a ``RunProgress`` (some with extra
fields), so one table serves them all: each step's state, done/total, what
waits for ``resume`` and why, LLM calls, tokens, cost, elapsed and the estimate.
"""

from __future__ import annotations

from collections.abc import Callable

from rich.console import Console
from rich.table import Table
from temporalio.client import WorkflowFailureError
from temporalio.exceptions import FailureError

from shared.config import Settings
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
}


def web_ui_url(settings: Settings, workflow_id: str, run_id: str | None = None) -> str:
    """The run's page in the Temporal Web UI of the embedded stack."""
    base = f"http://127.0.0.1:{settings.temporal.ui_port}/namespaces/{settings.temporal.namespace}"
    return f"{base}/workflows/{workflow_id}/{run_id or ''}/history".replace("//history", "/history")


def _duration(seconds: float | None) -> str:
    if seconds is None:
        return "?"
    minutes, rest = divmod(int(seconds), 60)
    return f"{minutes}m{rest:02d}s" if minutes else f"{seconds:.1f}s"


def progress_table(title: str, progress: RunProgress) -> Table:
    """The run's steps with their states, and a caption with counts, cost and time."""
    table = Table(title=title, show_edge=False, min_width=80, caption_justify="left")
    table.add_column("step")
    table.add_column("state")
    for step, state in progress.steps.items():
        reason = progress.waiting.get(step)
        shown = f"[{STATE_STYLE[state.value]}]{state.value}[/]"
        table.add_row(step, f"{shown} [magenta]waiting: {reason}[/]" if reason else shown)
    for step, reason in progress.waiting.items():
        if step not in progress.steps:
            table.add_row(step, f"[bold magenta]waiting:[/] {reason}")
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


def titled(title: str) -> Callable[[RunProgress], Table]:
    """``progress_table`` with its title fixed: what the live views take."""
    return lambda progress: progress_table(title, progress)


def innermost_cause(error: WorkflowFailureError) -> str:
    """The innermost cause of a failed run (the one that names the field)."""
    cause: BaseException = error
    while isinstance(cause, WorkflowFailureError | FailureError) and cause.cause is not None:
        cause = cause.cause
    return str(cause or error)


def print_failure(error: WorkflowFailureError) -> None:
    """Print the innermost cause of a failed run."""
    console.print(f"[bold red]run failed:[/] {innermost_cause(error)}", highlight=False)


def print_links(*links: tuple[str, str]) -> None:
    """Links unwrapped, on lines of their own, so they can be copied or clicked."""
    for label, url in links:
        console.print(f"{label}: {url}", soft_wrap=True, highlight=False)
