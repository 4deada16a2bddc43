"""A run's reports: which stored objects of a result are reports (HTML, Markdown, charts), and
downloading them from S3 to a folder."""

from __future__ import annotations

import asyncio
from pathlib import Path
from typing import Any

from shared.config import Settings
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
