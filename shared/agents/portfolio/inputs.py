"""What each Portfolio agent is given: the data of its prompt, which its request carries.

As in the Pipeline, the workflow builds one model per agent, the prompt builder
renders it and ``model_dump(mode="json")`` is the request's ``inputs`` that the
offline analyst validates back, so prompt and offline analyst read the same
numbers. The PM sees the book at the as-of closes (cash, total value, every
holding's price, weight and P&L), the candidates with their closes, every
Pipeline decision, the risk report and the limits it will be held to.

| agent | inputs |
|---|---|
| holdings_reviewer | ``ReviewInputs``: book, holdings with their Pipeline decisions |
| macro_summarizer | ``MacroInputs``: the Scan summary |
| micro_summarizer | ``MicroInputs``: holdings and the top candidates, with their Pipeline decisions |
| book_manager | ``PmInputs``: all of the above, the candidates below the cut in one line each, \
the risk report, the review and both summaries |

The candidates are a bounded view (``CandidateSlate``, sized by ``view.ViewSize``):
a hundred candidates cost the prompt about what twenty do.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass
from datetime import datetime
from typing import Protocol

from pydantic import AwareDatetime, BaseModel, Field, field_validator

from shared.agents.pipeline.schemas import PortfolioDecision, Rating, TradeSignal
from shared.agents.portfolio.schemas import HoldingsReview, MacroSummary, MicroSummary
from shared.agents.portfolio.view import BenchLine, Beyond, ViewSize
from shared.agents.scan.schemas import ScanSummary
from shared.data.contracts import TBILL_ETF
from shared.portfolio.limits import CASH_EQUIVALENTS, Limits
from shared.portfolio.market import Quote, QuoteMissing
from shared.portfolio.models import Money, canonical_symbol
from shared.portfolio.prioritize import Idea, ScoredCandidate, WatchedName
from shared.portfolio.risk import RiskReport
from shared.portfolio.valuation import Position, Valuation
from shared.storage.objects import ObjectRef

SUMMARY_MAX = 1_500
THESIS_MAX = 3_000
"""Characters kept of a Pipeline's summary and thesis: dozens of decisions stay small."""
HEADLINE_MAX = 120
"""Characters of the summary a ``DecisionLine`` keeps: one table row, a hundred per history."""


class _StoredReport(Protocol):
    @property
    def report(self) -> ObjectRef: ...


class PipelineOutcome(Protocol):
    """What ``TickerDecision.of`` reads of a Pipeline result."""

    @property
    def symbol(self) -> str: ...
    @property
    def as_of(self) -> datetime: ...
    @property
    def workflow_id(self) -> str: ...
    @property
    def decision(self) -> PortfolioDecision: ...
    @property
    def report(self) -> _StoredReport: ...


def _clip(text: str, limit: int) -> str:
    return text if len(text) <= limit else text[: limit - 1].rstrip() + "…"


class TickerDecision(BaseModel):
    """One Pipeline decision, compact: many travel in one Portfolio input."""

    symbol: str = Field(min_length=1, max_length=32)
    rating: Rating
    signal: TradeSignal
    price_target: float | None = Field(None, gt=0)
    executive_summary: str = Field(min_length=1, max_length=SUMMARY_MAX)
    thesis: str = Field("", max_length=THESIS_MAX)
    report: ObjectRef | None = Field(None, description="the Pipeline's full Markdown report")
    as_of: AwareDatetime
    workflow_id: str | None = None

    @field_validator("symbol")
    @classmethod
    def _canonical(cls, value: str) -> str:
        return canonical_symbol(value)

    @classmethod
    def of(cls, result: PipelineOutcome) -> TickerDecision:
        """The compact decision of a Pipeline result."""
        return cls.made(
            result.symbol, result.as_of, result.workflow_id, result.decision, result.report.report
        )

    @classmethod
    def made(
        cls,
        symbol: str,
        as_of: datetime,
        workflow_id: str,
        decision: PortfolioDecision,
        report: ObjectRef,
    ) -> TickerDecision:
        """The compact ``decision`` of the Pipeline ``workflow_id``, whose report is ``report``
        (a Pipeline builds its own before it has a result)."""
        return cls(
            symbol=symbol,
            rating=decision.rating,
            signal=decision.signal,
            price_target=decision.price_target,
            executive_summary=_clip(decision.executive_summary, SUMMARY_MAX),
            thesis=_clip(decision.investment_thesis, THESIS_MAX),
            report=report,
            as_of=as_of,
            workflow_id=workflow_id,
        )


class DecisionLine(BaseModel):
    """A decision in one line: what a parent of a hundred Pipelines keeps of each (the whole
    ``TickerDecision`` stays in S3, where the Portfolio and the run report read it)."""

    symbol: str
    rating: Rating
    signal: TradeSignal
    price_target: float | None = None
    executive_summary: str = Field(description=f"its first {HEADLINE_MAX} characters")
    as_of: AwareDatetime
    workflow_id: str | None = None
    report: ObjectRef | None = Field(None, description="the Pipeline's full Markdown report")

    @classmethod
    def of(cls, decision: TickerDecision) -> DecisionLine:
        """The line of ``decision``."""
        return cls(
            **decision.model_dump(exclude={"executive_summary", "thesis"}),
            executive_summary=_clip(decision.executive_summary, HEADLINE_MAX),
        )


class BookFacts(BaseModel):
    """The book in figures, and the limits it is held to."""

    portfolio: str
    currency: str
    as_of: AwareDatetime
    cash: Money
    equity: Money
    total_value: Money
    cash_weight: float
    total_return: float
    positions: int
    limits: Limits
    cash_equivalent: str = TBILL_ETF

    @classmethod
    def of(cls, valuation: Valuation, limits: Limits) -> BookFacts:
        """The facts of ``valuation``."""
        return cls(
            portfolio=valuation.portfolio,
            currency=valuation.currency,
            as_of=valuation.as_of,
            cash=valuation.cash,
            equity=valuation.equity,
            total_value=valuation.total_value,
            cash_weight=valuation.cash_weight,
            total_return=valuation.total_return,
            positions=len(valuation.positions),
            limits=limits,
        )


class HoldingView(BaseModel):
    """A holding at the as-of close with its fresh Pipeline decision, if any."""

    position: Position
    decision: TickerDecision | None = None


class CandidateView(BaseModel):
    """A prioritised candidate, its as-of close and its Pipeline decision, if any."""

    candidate: ScoredCandidate
    quote: Quote | QuoteMissing
    decision: TickerDecision | None = None


def holding_views(
    valuation: Valuation, decisions: Mapping[str, TickerDecision]
) -> list[HoldingView]:
    """Every holding with its decision."""
    return [HoldingView(position=p, decision=decisions.get(p.symbol)) for p in valuation.positions]


def candidate_views(
    candidates: Iterable[ScoredCandidate],
    quotes: Mapping[str, Quote | QuoteMissing],
    decisions: Mapping[str, TickerDecision],
) -> list[CandidateView]:
    """Each candidate with its close (or why there is none) and its decision."""
    return [
        CandidateView(
            candidate=c,
            quote=quotes.get(c.ticker) or QuoteMissing(symbol=c.ticker, reason="not quoted"),
            decision=decisions.get(c.ticker),
        )
        for c in candidates
    ]


def candidate_ideas(
    scan: ScanSummary | None, decisions: Iterable[TickerDecision], held: Iterable[str]
) -> list[Idea]:
    """The candidates to rank: the Scan's shortlist, then every decided name that is neither
    on it, nor held (the review weighs holdings), nor a cash equivalent (the sweep's)."""
    stocks: list[Idea] = list(scan.stocks_to_investigate) if scan else []
    known = {s.ticker for s in stocks} | set(held) | CASH_EQUIVALENTS
    return stocks + [
        WatchedName.of_rating(d.symbol, d.rating, d.executive_summary)
        for d in decisions
        if d.symbol not in known
    ]


class CandidateSlate(BaseModel):
    """The ranked candidates as the agents read them: the top ones in full, the next in one
    line each, the rest counted."""

    total: int = Field(ge=0, description="how many candidates were ranked")
    size: ViewSize
    detail: list[CandidateView]
    bench: list[BenchLine]
    beyond: Beyond | None = None

    @classmethod
    def of(
        cls,
        ranked: Sequence[ScoredCandidate],
        quotes: Mapping[str, Quote | QuoteMissing],
        decisions: Mapping[str, TickerDecision],
        size: ViewSize,
    ) -> CandidateSlate:
        """``ranked`` (best first) cut to ``size``."""
        cut = size.detail + size.bench
        bench = [
            BenchLine(
                rank=rank,
                ticker=c.ticker,
                sector=c.sector.value if c.sector else "-",
                score=c.score,
                rating=decisions[c.ticker].rating if c.ticker in decisions else None,
            )
            for rank, c in enumerate(ranked[size.detail : cut], start=size.detail + 1)
        ]
        rest = ranked[cut:]
        ratings = [
            decisions[c.ticker].rating.value if c.ticker in decisions else "no decision"
            for c in rest
        ]
        beyond = (
            Beyond(
                first_rank=cut + 1,
                count=len(rest),
                by_rating={r: ratings.count(r) for r in sorted(set(ratings))},
            )
            if rest
            else None
        )
        return cls(
            total=len(ranked),
            size=size,
            detail=candidate_views(ranked[: size.detail], quotes, decisions),
            bench=bench,
            beyond=beyond,
        )


class ReviewInputs(BaseModel):
    """The holdings reviewer's material."""

    book: BookFacts
    holdings: list[HoldingView]


class MacroInputs(BaseModel):
    """The macro summarizer's material: the Scan's summary, if the run was given one."""

    portfolio: str
    as_of: AwareDatetime
    scan: ScanSummary | None = None


class MicroInputs(BaseModel):
    """The micro summarizer's material: the holdings and the candidates read in full."""

    portfolio: str
    holdings: list[HoldingView]
    candidates: list[CandidateView]


class PmInputs(BaseModel):
    """Everything the book manager decides from."""

    book: BookFacts
    holdings: list[HoldingView]
    candidates: list[CandidateView] = Field(description="the top candidates, read in full")
    bench: list[BenchLine] = Field(default_factory=list, description="the next, one line each")
    beyond: Beyond | None = Field(None, description="the rest, counted")
    risk: RiskReport
    review: HoldingsReview
    macro: MacroSummary
    micro: MicroSummary


@dataclass(frozen=True)
class BookBrief:
    """One book as of T as the Portfolio's agents read it. The workflow and ``quantdesk
    prompt show`` both build every agent's inputs from it, so a preview cannot drift
    from a run."""

    portfolio: str
    as_of: datetime
    book: BookFacts
    holdings: list[HoldingView]

    @classmethod
    def of(
        cls,
        portfolio: str,
        as_of: datetime,
        valuation: Valuation,
        limits: Limits,
        decisions: Mapping[str, TickerDecision],
    ) -> BookBrief:
        """The book's facts and every holding with its decision."""
        facts = BookFacts.of(valuation, limits)
        return cls(portfolio, as_of, facts, holding_views(valuation, decisions))

    def review(self) -> ReviewInputs:
        return ReviewInputs(book=self.book, holdings=self.holdings)

    def macro(self, scan: ScanSummary | None) -> MacroInputs:
        return MacroInputs(portfolio=self.portfolio, as_of=self.as_of, scan=scan)

    def micro(self, slate: CandidateSlate) -> MicroInputs:
        return MicroInputs(
            portfolio=self.portfolio, holdings=self.holdings, candidates=slate.detail
        )

    def pm(
        self,
        slate: CandidateSlate,
        risk: RiskReport,
        review: HoldingsReview,
        macro: MacroSummary,
        micro: MicroSummary,
    ) -> PmInputs:
        """The book manager's inputs: this brief with the candidates' view and the
        risk report, review and summaries the earlier steps gave."""
        return PmInputs(
            book=self.book,
            holdings=self.holdings,
            candidates=slate.detail,
            bench=slate.bench,
            beyond=slate.beyond,
            risk=risk,
            review=review,
            macro=macro,
            micro=micro,
        )
