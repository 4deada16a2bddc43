"""The Portfolio's agents rehearsed for ``quantdesk prompt show``, as AutoRun feeds them.

A Portfolio run decides for one book as of T with a Scan's shortlist and a Pipeline
decision per candidate. Rehearsed, with these documented defaults:

- the book: ``--book NAME`` is read from the project's database, read-only (SQLite
  opened with ``mode=ro``); without it, a fresh book of ``DEFAULT_CASH`` as AutoRun
  opens one, kept in memory;
- the candidates: the offline Scan's shortlist as of T at or above AutoRun's default
  conviction, then the holdings, each with its offline Pipeline decision as of T;
- the book, quotes, sectors and risk: read by the Portfolio's own activities
  (``load_portfolio``, ``compute_risk``), the ranking by ``prioritize`` without
  lessons (a run recalls them from its memory store).

The upstream answers (reviewer, summaries) are their offline rules'.
"""

from __future__ import annotations

from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass
from datetime import datetime
from pathlib import Path
from typing import Any

from sqlalchemy.engine import Engine, make_url
from temporalio.exceptions import ApplicationError

from activities.portfolio import LoadRequest, PortfolioActivities, RiskRequest
from activities.services import StoredReport
from shared.agents.pipeline import portfolio_manager
from shared.agents.pipeline.inputs import ManagerInputs
from shared.agents.pipeline.rehearsal import offline_run
from shared.agents.pipeline.schemas import PortfolioDecision
from shared.agents.portfolio import (
    book_manager,
    holdings_reviewer,
    macro_summarizer,
    micro_summarizer,
)
from shared.agents.portfolio.inputs import (
    BookBrief,
    CandidateSlate,
    TickerDecision,
    candidate_ideas,
)
from shared.agents.portfolio.schemas import HoldingsReview
from shared.agents.portfolio.view import ViewSize
from shared.agents.rehearsed import Rehearsed, offline_answer, offline_tool_run
from shared.agents.scan import macro_synthesis
from shared.agents.scan.inputs import SynthesisInputs
from shared.agents.scan.rehearsal import rehearse_scan
from shared.agents.scan.schemas import ScanSummary
from shared.config import Settings
from shared.errors import InvalidInput, QuantdeskError
from shared.llm.contracts import LlmChoice
from shared.portfolio.limits import CASH_EQUIVALENTS, Limits
from shared.portfolio.prioritize import prioritize
from shared.portfolio.store import PortfolioStore
from shared.storage.buckets import REPORTS_BUCKET
from shared.storage.objects import ObjectRef
from shared.tools.registry import ToolServices
from workflows.autorun import CONVICTION_RANK, DEFAULT_CASH, AutoRunInput

FRESH_BOOK = "desk"
"""The name of the fresh book (``quantdesk run autorun``'s default)."""
NOTES = (
    "candidates: the offline Scan's shortlist and the holdings, each with its offline "
    "Pipeline decision as of T; lessons recalled: none",
)


class PreviewFailed(QuantdeskError):
    """An activity's read failed; its message says why and what to do."""


@contextmanager
def _activity_errors() -> Iterator[None]:
    """An activity's failure as the quantdesk error it was (the CLI shows it in one line)."""
    try:
        yield
    except ApplicationError as error:
        raise PreviewFailed(error.message) from None


def _schema_as_found(engine: Engine) -> None:
    """Nothing: a read-only store reads the schema the project made, and writes no version."""


class _ReadBooks(PortfolioStore):
    """The project's books over a read-only connection (opening never writes)."""

    ensure_schema = staticmethod(_schema_as_found)


@dataclass(frozen=True)
class _PipelineOutcome:
    """An offline Pipeline decision in the shape ``TickerDecision.of`` reads."""

    symbol: str
    as_of: datetime
    decision: PortfolioDecision
    report: StoredReport
    workflow_id: str = "prompt-show"


def _pipeline_decision(symbol: str, as_of: datetime, services: ToolServices) -> TickerDecision:
    """``symbol``'s offline Pipeline decision as of ``as_of``, compact as AutoRun passes it."""
    managed = offline_run(symbol, as_of, services)[portfolio_manager.SPEC.name]
    assert isinstance(managed, ManagerInputs)
    decision = offline_answer(portfolio_manager.SPEC, managed)
    key = f"pipeline/<workflow id>/<run id>/{symbol}/report.md"
    report = StoredReport(report=ObjectRef(bucket=REPORTS_BUCKET, key=key), url="", size_bytes=0)
    return TickerDecision.of(_PipelineOutcome(symbol, as_of, decision, report))


def _books(book: str | None, settings: Settings) -> tuple[PortfolioStore, str]:
    """The store to read and the book's name: the project's database read-only for ``book``,
    else a fresh book in memory."""
    if book is None:
        fresh = PortfolioStore("sqlite://")
        fresh.create(FRESH_BOOK, DEFAULT_CASH)
        return fresh, FRESH_BOOK
    url = make_url(settings.resolved_database_url)
    if url.get_backend_name() != "sqlite" or not url.database:
        raise InvalidInput(
            "--book",
            f"prompt show reads books from a SQLite file only, not {url.render_as_string()}",
            fix="Leave --book out to show the prompt for a fresh book.",
        )
    path = Path(url.database).expanduser().resolve()
    if not path.exists():
        raise InvalidInput(
            "--book",
            f"no database at {path}, so no book {book!r}",
            fix=("Create it with `quantdesk portfolio create`, or leave --book out."),
        )
    return _ReadBooks(f"sqlite:///file:{path}?mode=ro&uri=true"), book


def _scan_summary(as_of: datetime, services: ToolServices) -> ScanSummary:
    """The offline Scan's summary as of ``as_of`` (its shortlist passes the Scan's check)."""
    inputs = rehearse_scan(macro_synthesis.SPEC.name, as_of, services).inputs
    assert isinstance(inputs, SynthesisInputs)
    context = {"as_of": as_of.isoformat()}
    summary, _ = offline_tool_run(
        macro_synthesis.SPEC, inputs, services, context, prefetch=inputs.prefetch()
    )
    return summary


def rehearse_portfolio(
    agent: str, as_of: datetime, book: str | None, settings: Settings, services: ToolServices
) -> Rehearsed:
    """``agent``'s inputs in a Portfolio run as of ``as_of`` (see the module's docstring)."""
    store, name = _books(book, settings)
    limits = Limits()
    acts = PortfolioActivities(settings, router=services.router, books=store)
    summary = _scan_summary(as_of, services)
    bar = CONVICTION_RANK[AutoRunInput.model_fields["min_conviction"].default]
    chosen = [
        s.ticker for s in summary.stocks_to_investigate if CONVICTION_RANK[s.conviction] >= bar
    ]
    with _activity_errors():
        held = [h.symbol for h in store.holdings(name)]
        tickers = chosen + [h for h in held if h not in chosen and h not in CASH_EQUIVALENTS]
        decisions = {t: _pipeline_decision(t, as_of, services) for t in tickers}
        loaded = acts.load_portfolio(
            LoadRequest(portfolio=name, as_of=as_of, symbols=[*summary.tickers(), *decisions])
        )
        risk = acts.compute_risk(RiskRequest(valuation=loaded.valuation))
    valuation = loaded.valuation
    brief = BookBrief.of(name, as_of, valuation, limits, decisions)
    upstream: list[str] = []
    if agent == holdings_reviewer.SPEC.name:
        if not brief.holdings:
            raise InvalidInput(
                "--book",
                f"book {name!r} holds no positions, so a run makes no {agent} call",
                fix="Give --book a book with positions.",
            )
        return Rehearsed(holdings_reviewer.SPEC, brief.review(), (), NOTES)
    review = (
        offline_answer(holdings_reviewer.SPEC, brief.review())
        if brief.holdings
        else HoldingsReview(verdicts=[], summary="The book holds no positions.")
    )
    upstream += [holdings_reviewer.SPEC.name] if brief.holdings else []
    ideas = candidate_ideas(summary, decisions.values(), held)
    ranked = prioritize(ideas, valuation, loaded.sectors, limits)
    size = ViewSize.for_provider(LlmChoice().provider)
    slate = CandidateSlate.of(ranked.ranked, loaded.quotes, decisions, size)
    macro_inputs, micro_inputs = brief.macro(summary), brief.micro(slate)
    given: dict[str, Any] = {
        macro_summarizer.SPEC.name: (macro_summarizer.SPEC, macro_inputs),
        micro_summarizer.SPEC.name: (micro_summarizer.SPEC, micro_inputs),
    }
    if agent in given:
        spec, inputs = given[agent]
        return Rehearsed(spec, inputs, tuple(upstream), NOTES)
    macro = offline_answer(macro_summarizer.SPEC, macro_inputs)
    micro = offline_answer(micro_summarizer.SPEC, micro_inputs)
    pm = brief.pm(slate, risk, review, macro, micro)
    upstream += [macro_summarizer.SPEC.name, micro_summarizer.SPEC.name]
    return Rehearsed(book_manager.SPEC, pm, tuple(upstream), NOTES)
