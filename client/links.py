"""Where a person opens a run or a stored object: the Temporal Web UI's page of a run, the console's
address of a chart or report, and the path of the console's codec endpoint. Addresses only: each
door decides how to show them."""

from __future__ import annotations

from typing import Any

from shared.config import Settings
from shared.storage.buckets import CHARTS_BUCKET, REPORTS_BUCKET


def web_ui_url(settings: Settings, workflow_id: str, run_id: str | None = None) -> str | None:
    """The run's page in the Temporal Web UI (``QUANTDESK_TEMPORAL__UI_URL``, else the
    embedded stack's), or None when the cluster is external and no UI is configured."""
    ui = settings.temporal.web_ui
    if ui is None:
        return None
    base = f"{ui}/namespaces/{settings.temporal.namespace}"
    return f"{base}/workflows/{workflow_id}/{run_id or ''}/history".replace("//history", "/history")


CODEC_PREFIX = "/codec"
"""Where the console serves Temporal's remote codec endpoint (``console.codec_endpoint``)."""


def object_url(ref: dict[str, Any] | None) -> str | None:
    """The console's address of a stored chart or report (``/objects/<bucket>/<key>``)."""
    if not ref or ref.get("bucket") not in (CHARTS_BUCKET, REPORTS_BUCKET):
        return None
    return f"/objects/{ref['bucket']}/{ref['key']}"
