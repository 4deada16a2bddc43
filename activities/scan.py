"""The Scan's deterministic activities on the ``tools`` queue: checking the shortlist against
the data universe, and storing the summary as JSON.

Both are activities because both do I/O: the universe is read through the same
data router the agents' tools read through (``activities.tools.tool_services``,
built once per worker), and the JSON goes to S3. The check itself is the pure
``shortlist_problems``; it answers with the problems and the corrected shortlist,
so the workflow decides whether to ask for a repair or take the correction.
"""

from __future__ import annotations

import json
from collections.abc import Callable
from typing import Any

from pydantic import AwareDatetime, BaseModel, Field

from activities import tools
from activities.failures import as_temporal_failures
from activities.group import activity_on
from activities.services import StoredReport
from shared.agents.scan.inputs import MAX_TICKERS
from shared.agents.scan.schemas import ScanSummary
from shared.agents.scan.shortlist import corrected_shortlist, shortlist_problems
from shared.data.contracts import DataKind
from shared.errors import NotConfigured
from shared.queues import TOOLS_QUEUE
from shared.storage.objects import ObjectRef

JSON = "application/json"


class ShortlistCheck(BaseModel):
    """A summary's shortlist and the rules it must meet as of the scan."""

    as_of: AwareDatetime = Field(description="the scan time: the universe is read as of it")
    summary: ScanSummary
    max_tickers: int = Field(ge=1, le=MAX_TICKERS)
    flagged: list[str] = Field(description="tickers the smart-money screens flagged")


class ShortlistVerdict(BaseModel):
    """What is wrong with the shortlist (empty when nothing is), and the shortlist the data
    would make of it, with each correction said."""

    problems: list[str]
    universe_size: int = Field(description="listings the universe held as of the scan")
    corrected: ScanSummary | None = Field(None, description="None when nothing is wrong")
    corrections: list[str] = Field(default_factory=list)


class StoreJsonRequest(BaseModel):
    """A JSON value and where the workflow wants it (a retry overwrites it)."""

    value: dict[str, Any]
    target: ObjectRef


@activity_on(TOOLS_QUEUE, "check_shortlist")
def check_shortlist(request: ShortlistCheck) -> ShortlistVerdict:
    """Every problem of the shortlist against the universe the data router serves as of the scan."""
    with as_temporal_failures():
        router = tools.tool_services().router
        universe = router.call(
            DataKind.UNIVERSE, lambda vendor: vendor.universe(request.as_of), as_of=request.as_of
        )
        flagged = set(request.flagged)
        problems = shortlist_problems(
            request.summary,
            universe.value,
            request.as_of,
            max_tickers=request.max_tickers,
            flagged=flagged,
        )
        if not problems:
            return ShortlistVerdict(problems=[], universe_size=len(universe.value))
        corrected, corrections = corrected_shortlist(
            request.summary,
            universe.value,
            request.as_of,
            max_tickers=request.max_tickers,
            flagged=flagged,
        )
        return ShortlistVerdict(
            problems=problems,
            universe_size=len(universe.value),
            corrected=corrected,
            corrections=corrections,
        )


@activity_on(TOOLS_QUEUE, "store_json")
def store_json(request: StoreJsonRequest) -> StoredReport:
    """Store the value as indented JSON at the workflow's key and hand back a link."""
    with as_temporal_failures():
        store = tools.tool_services().store
        if store is None:
            raise NotConfigured("this tools worker has no object store to write the JSON to")
        data = json.dumps(request.value, indent=2).encode()
        ref = store.put_bytes(request.target.model_copy(update={"content_type": JSON}), data)
        return StoredReport(report=ref, url=store.presigned_url(ref), size_bytes=len(data))


SCAN_ACTIVITIES: list[Callable[..., Any]] = [check_shortlist, store_json]
"""What a tools worker registers for the Scan."""
