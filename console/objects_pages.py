"""Charts and reports from S3, served by the console so a page never needs the S3 address
(presigned links name the S3 server, which a browser elsewhere may not reach)."""

from __future__ import annotations

import asyncio

from fastapi import APIRouter, Request
from fastapi.responses import Response

from client.errors import NotFound
from console.web import desk_of
from shared.errors import ObjectNotFound
from shared.reports.html import SORT_SCRIPT_CSP
from shared.storage.buckets import CHARTS_BUCKET, REPORTS_BUCKET
from shared.storage.objects import ObjectRef

router = APIRouter()

SERVED_BUCKETS = (CHARTS_BUCKET, REPORTS_BUCKET)
"""Charts and reports only: the payloads bucket holds raw replies and tool output."""
MEDIA_TYPES = {
    ".png": "image/png",
    ".html": "text/html; charset=utf-8",
    ".md": "text/markdown; charset=utf-8",
    ".csv": "text/csv; charset=utf-8",
    ".json": "application/json",
}
REPORT_POLICY = f"script-src {SORT_SCRIPT_CSP}; sandbox allow-scripts allow-same-origin"
"""A stored HTML report runs no script but its own table sorter, allowed by its hash."""


@router.get("/objects/{bucket}/{key:path}")
async def stored_object(request: Request, bucket: str, key: str) -> Response:
    """A stored chart or report, with its media type."""
    suffix = key[key.rfind(".") :] if "." in key else ""
    if bucket not in SERVED_BUCKETS or suffix not in MEDIA_TYPES:
        raise NotFound(
            f"the console serves {', '.join(MEDIA_TYPES)} files of the charts and "
            f"reports buckets, not s3://{bucket}/{key}"
        )
    store = desk_of(request).book_io.store
    try:
        body = await asyncio.to_thread(store.get_bytes, ObjectRef(bucket=bucket, key=key))
    except ObjectNotFound as error:
        raise NotFound(error.message) from None
    headers = {"Content-Security-Policy": REPORT_POLICY}
    return Response(body, media_type=MEDIA_TYPES[suffix], headers=headers)
