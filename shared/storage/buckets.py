"""The buckets quantdesk writes to. Fixed names: workflows choose object keys, and
workflow code cannot read settings, so bucket names must be the same everywhere."""

from __future__ import annotations

CHARTS_BUCKET = "charts"
REPORTS_BUCKET = "reports"
PAYLOADS_BUCKET = "payloads"
BUCKETS = (CHARTS_BUCKET, REPORTS_BUCKET, PAYLOADS_BUCKET)
