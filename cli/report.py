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
from typing import Any

import typer
from temporalio.client import WorkflowFailureError
from temporalio.service import RPCError

from cli.exit import fail_on_quantdesk_errors, finish
from cli.views import console
from shared.config import Settings, load_settings
from shared.storage.buckets import REPORTS_BUCKET
from shared.storage.objects import ObjectRef, ObjectStore

REPORT_SUFFIXES = (".html", ".md", ".png")
"""The pages, and the charts a Markdown report shows beside it."""


def report_refs(result: Any) -> list[ObjectRef]:
    """Every report object a run's result names (reports bucket: pages and their charts),
    the HTML page first."""
    found: dict[str, ObjectRef] = {}

    def walk(value: Any) -> None:
        if isinstance(value, dict):
            if value.get("bucket") == REPORTS_BUCKET and str(value.get("key", "")).endswith(
                REPORT_SUFFIXES
            ):
                ref = ObjectRef.model_validate(value)
                found.setdefault(ref.key, ref)
            for item in value.values():
                walk(item)
        elif isinstance(value, list):
            for item in value:
                walk(item)

    walk(result)
    order = {suffix: rank for rank, suffix in enumerate(REPORT_SUFFIXES)}
    return sorted(found.values(), key=lambda r: (order[r.key[r.key.rfind(".") :]], r.key))


def download_reports(settings: Settings, refs: list[ObjectRef], folder: Path) -> list[Path]:
    """Each report written to ``folder`` under its own file name; the paths, HTML first."""
    store = ObjectStore.from_settings(settings)
    folder.mkdir(parents=True, exist_ok=True)
    written = []
    for ref in refs:
        path = folder / ref.key.rsplit("/", 1)[-1]
        path.write_bytes(store.get_bytes(ref))
        written.append(path)
    return written


async def fetch_report(settings: Settings, workflow_id: str, out: Path) -> list[Path]:
    """The run's reports downloaded into ``out/<workflow id>/``."""
    from workers.client import connect

    client = await connect(settings)
    handle = client.get_workflow_handle(workflow_id, result_type=dict[str, Any])
    result = await handle.result()
    refs = report_refs(result)
    # The run's own folder (``<flow>/<workflow id>/<run id>/``): a result also names the
    # reports of the runs it used (each Pipeline's, say), which are not this report.
    own = [ref for ref in refs if f"/{workflow_id}/" in ref.key] or refs
    return await asyncio.to_thread(download_reports, settings, own, out / workflow_id)


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
