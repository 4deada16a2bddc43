"""The Pipeline's research activities on the ``tools`` queue: the analysis time, memories,
reports, and stored texts read back (a Scan summary as macro context).

Each is thin and synchronous (the data router, SQL and S3 clients all are; the
worker runs them in threads). They are activities, not workflow code, because
each does I/O: finding the latest bar reads the data vendors, recalling lessons
queries the memory database, storing the report writes S3. The data router,
memory store and object store are built on first use from the injected
settings and kept for the worker's life, as ``ChartActivities`` does.
"""

from __future__ import annotations

from datetime import UTC, datetime

from pydantic import BaseModel, Field

from activities.failures import as_temporal_failures
from activities.group import activity_on
from activities.services import Services, StoredReport
from shared.agents.portfolio.inputs import TickerDecision
from shared.data.analysis_time import analysis_time
from shared.errors import InvalidInput, ObjectNotFound
from shared.memory import MemoryRole, render_recollections
from shared.queues import TOOLS_QUEUE
from shared.storage.objects import ObjectRef

MARKDOWN = "text/markdown; charset=utf-8"
RECALL_TOP_K = 2
"""TradingAgents' ``n_matches``: two lessons per role are enough context, more are noise."""


class ResolveAsOfRequest(BaseModel):
    """The symbol to analyse and the analysis time asked for, if any."""

    symbol: str = Field(min_length=1)
    as_of: datetime | None = Field(None, description="None: the time of the latest daily bar")
    not_after: datetime | None = Field(
        None, description="without as_of: the latest bar at or before this (a schedule's time)"
    )


class ResolvedAsOf(BaseModel):
    """The analysis time every tool of the run reads as of."""

    symbol: str
    as_of: datetime
    latest_bar: datetime = Field(description="the last daily bar at or before as_of")


class RecallRequest(BaseModel):
    """Whose lessons to recall, for which situation, as of when."""

    roles: list[MemoryRole] = Field(min_length=1)
    situation: str = Field(description="the analysts' reports: what similar runs are matched on")
    symbol: str | None = Field(None, description="only this ticker's lessons; None: every ticker")
    as_of: datetime = Field(description="only lessons decided and resolved before this time")
    top_k: int = Field(RECALL_TOP_K, ge=1, le=10)


class RecalledMemories(BaseModel):
    """Each role's lessons as the prompt text its agent reads."""

    memories: dict[MemoryRole, str]
    found: dict[MemoryRole, int] = Field(description="lessons recalled per role")


JSON = "application/json"


class StoredDecision(BaseModel):
    """A Pipeline's compact decision and where it is kept beside the report, for the
    Portfolio and the run report of an AutoRun to read instead of the parent's history."""

    decision: TickerDecision
    target: ObjectRef


class StoreReportRequest(BaseModel):
    """A Markdown report and where the workflow wants it (a retry overwrites it)."""

    markdown: str = Field(min_length=1)
    target: ObjectRef
    decision: StoredDecision | None = Field(None, description="stored too, as JSON")


class LoadTextRequest(BaseModel):
    """A stored text (e.g. a Scan's summary) a workflow wants inline, and the input field
    that named it, so a bad key fails naming what the user gave."""

    source: ObjectRef
    field: str = Field(min_length=1, description="the workflow input that held the key")
    max_chars: int = Field(gt=0, description="longer texts are refused, not cut")


class LoadedText(BaseModel):
    """The stored text, decoded."""

    text: str
    source: ObjectRef


def _aware(as_of: datetime, field: str = "as_of") -> datetime:
    if as_of.utcoffset() is None:
        raise InvalidInput(field, f"{as_of.isoformat()} has no timezone", fix="Add e.g. Z.")
    return as_of.astimezone(UTC)


class ResearchActivities(Services):
    """The Pipeline's I/O steps over the shared, lazily built clients."""

    @activity_on(TOOLS_QUEUE, "resolve_as_of")
    def resolve_as_of(self, request: ResolveAsOfRequest) -> ResolvedAsOf:
        """The given analysis time (checked against the data), or the latest daily bar's.

        An unknown symbol fails here, once, rather than as four analysts' "no data";
        a known one with no bars by the given time fails naming ``as_of``.
        """
        with as_temporal_failures():
            symbol = request.symbol.strip().upper()
            bound = _aware(request.not_after, "not_after") if request.not_after else None
            as_of = _aware(request.as_of) if request.as_of else None
            resolved = analysis_time(self.router, symbol, as_of, bound)
            return ResolvedAsOf(symbol=symbol, as_of=resolved.as_of, latest_bar=resolved.latest_bar)

    @activity_on(TOOLS_QUEUE, "recall_memories")
    def recall_memories(self, request: RecallRequest) -> RecalledMemories:
        """Every role's closest lessons, rendered; one activity for all roles, one round trip."""
        with as_temporal_failures():
            as_of = _aware(request.as_of)
            memories: dict[MemoryRole, str] = {}
            found: dict[MemoryRole, int] = {}
            for role in request.roles:
                recalled = self.memory.recall(
                    role,
                    request.situation,
                    as_of=as_of,
                    top_k=request.top_k,
                    symbol=request.symbol,
                )
                memories[role] = render_recollections(recalled)
                found[role] = len(recalled)
            return RecalledMemories(memories=memories, found=found)

    @activity_on(TOOLS_QUEUE, "store_report")
    def store_report(self, request: StoreReportRequest) -> StoredReport:
        """Store the Markdown at the workflow's key (and the decision at its own, first: the
        link comes back only once both are there) and hand back a link."""
        with as_temporal_failures():
            if request.decision is not None:
                stored = request.decision
                target = stored.target.model_copy(update={"content_type": JSON})
                self.store.put_bytes(target, stored.decision.model_dump_json().encode())
            target = request.target.model_copy(update={"content_type": MARKDOWN})
            return self.put_report(target, request.markdown.encode())

    @activity_on(TOOLS_QUEUE, "load_text")
    def load_text(self, request: LoadTextRequest) -> LoadedText:
        """The UTF-8 text stored at ``source``; a missing, binary or oversized object fails
        for good naming ``field``, since another attempt would read the same bytes."""
        with as_temporal_failures():
            where = f"{request.source.bucket}/{request.source.key}"
            try:
                data = self.store.get_bytes(request.source)
            except ObjectNotFound:
                raise InvalidInput(
                    request.field,
                    f"no object at {where}",
                    fix="Give the key of a stored summary, e.g. a Scan result's summary key.",
                ) from None
            try:
                text = data.decode()
            except UnicodeDecodeError:
                raise InvalidInput(request.field, f"{where} is not UTF-8 text") from None
            if not text.strip() or len(text) > request.max_chars:
                raise InvalidInput(
                    request.field,
                    f"{where} holds {len(text)} characters; between 1 and "
                    f"{request.max_chars} are accepted",
                    fix="Point at the summary itself, not a whole report.",
                )
            return LoadedText(text=text, source=request.source)
