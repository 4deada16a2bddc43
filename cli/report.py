"""`quantdesk report ID [--open]`: fetch a finished run's report from S3 to a local file.

Every flow stores its report in the ``reports`` bucket and names it in its result
(AutoRun: HTML and Markdown; Pipeline, Scan, Portfolio, Backtest, Evaluate:
Markdown), so the command reads the result and downloads each report object it
names, the HTML page first.
"""

from __future__ import annotations

import asyncio
import webbrowser
from pathlib import Path

import typer
from temporalio.client import WorkflowFailureError
from temporalio.service import RPCError

from cli.views import console
from client.process_exit import fail_on_quantdesk_errors, finish
from client.reports import fetch_report
from shared.config import load_settings


def register(app: typer.Typer) -> None:
    """Add ``report`` to the ``quantdesk`` command."""

    @app.command("report")
    def report(
        workflow_id: str = typer.Argument(..., help="a finished run (AutoRun, Pipeline, ...)"),
        out: Path = typer.Option(Path("reports"), help="folder to write into"),
        open_: bool = typer.Option(False, "--open", help="open the report in a browser"),
    ) -> None:
        """Download a finished run's report (HTML and Markdown) and print where it is."""
        with fail_on_quantdesk_errors():
            settings = load_settings()
            try:
                paths = asyncio.run(fetch_report(settings, workflow_id, out))
            except (RPCError, WorkflowFailureError) as error:
                console.print(f"[bold red]no report for {workflow_id}:[/] {error}")
                finish(1)
            if not paths:
                console.print(f"[bold red]{workflow_id} names no report in its result[/]")
                finish(1)
            pages = [path for path in paths if path.suffix != ".png"]
            for path in pages:
                console.print(f"report: {path.resolve()}", soft_wrap=True, highlight=False)
            if len(paths) > len(pages):
                console.print(f"{len(paths) - len(pages)} chart(s) beside them")
            if open_:
                webbrowser.open(paths[0].resolve().as_uri())
        finish(0)
