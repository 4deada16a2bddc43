"""The ``run_tool`` activity: every agent tool call, on the ``tools`` queue.

The data router and the object store are built on the first call and kept for the
worker's life. An answer over the claim check's threshold is stored in S3 and travels
as a claim (``shared.storage.claim_check``), so it is not written into the history of
every chat round that reads it.
"""

from __future__ import annotations

import time
from collections.abc import Callable
from functools import cache

from temporalio import activity
from temporalio.common import MetricMeter

from activities.failures import as_temporal_failures
from activities.group import activity_on
from activities.heartbeat import heartbeating
from shared.config import load_settings
from shared.llm.contracts import ToolRequest, ToolResult
from shared.observability.metrics import tool_called
from shared.queues import TOOLS_QUEUE
from shared.storage.claim_check import ClaimCheck
from shared.storage.objects import ObjectStore
from shared.tools import catalog  # noqa: F401  (registers the product's tools)
from shared.tools.registry import ToolServices, claim_checked, run_tool


def _services_from_settings() -> ToolServices:
    """The worker's data router and object store, from its own settings."""
    # Imported here: building vendors pulls in their packages and files only when data is read.
    from shared.data.factory import build_router

    settings = load_settings()
    store = ObjectStore.from_settings(settings)
    return ToolServices(
        router=build_router(settings), store=store, claims=ClaimCheck.from_settings(settings, store)
    )


@cache
def _inline_max() -> int:
    """The worker's claim-check threshold (``QUANTDESK_INLINE_MAX_BYTES``)."""
    return load_settings().inline_max_bytes


tool_services: Callable[[], ToolServices] = cache(_services_from_settings)
"""Where ``run_tool`` gets its services: built once per worker; tests and benches put their
own S3 and data here."""


@activity_on(TOOLS_QUEUE, "run_tool")
@heartbeating
def run_tool_activity(request: ToolRequest) -> ToolResult:
    """Run one tool call; bad arguments and missing data come back as results for the model.

    Throttled or failing vendors raise retryable failures, so Temporal retries the call.
    """
    with as_temporal_failures():
        started = time.monotonic()
        # A test may call the function directly, outside any activity: nothing to measure.
        meter = activity.metric_meter() if activity.in_activity() else MetricMeter.noop
        try:
            result = run_tool(request, services=tool_services)
        except Exception:  # a vendor refusing or down: retried by Temporal, counted here
            tool_called(meter, request.call.name, None, False, time.monotonic() - started)
            raise
        tool_called(meter, result.name, result.vendor, result.ok, time.monotonic() - started)
        return claim_checked(result, request, tool_services, inline_max=_inline_max())
