"""The typed contracts of the ``AutoRun`` workflow: its input, its progress and its result.

Kept apart from the workflow's graph (``workflows.autorun``, which imports them back, so
callers may import them from either), as ``workflows.pipeline_contracts`` is.
"""

from __future__ import annotations

from decimal import Decimal

from pydantic import AwareDatetime, BaseModel, Field, field_validator, model_validator

from activities.autorun import RunReportFiles
from shared.agents.pipeline.schemas import AnalystKind
from shared.agents.portfolio.inputs import DecisionLine
from shared.agents.scan.schemas import Conviction
from shared.llm.contracts import LlmChoice, Usage, UsageReport
from shared.portfolio.models import NAME_PATTERN, BrokerKind
from shared.reports.autorun import TickerFailure
from shared.watchlists.symbols import list_problem, normalized
from workflows.broker_orders import ExecutionPolicy
from workflows.debate_contracts import MAX_ROUNDS
from workflows.inputs import RunInput
from workflows.portfolio_contracts import Approval
from workflows.progress import RunProgress
from workflows.scan import MAX_TICKERS

DEFAULT_CASH = Decimal(100_000)
MAX_CONCURRENCY = 64
"""Pipelines at once, at most. Each has one model call in flight most of its time, so a
provider at R calls a second, L seconds a call, is kept busy only by about R x L of them:
64 serve R = 50 at L = 1 s with room for the phases where a Pipeline waits on a tool."""


class AutoRunInput(RunInput):
    """Every field is optional: ``{}`` runs the desk offline on the latest data."""

    portfolio: str = Field("desk", pattern=NAME_PATTERN, description="created if missing")
    initial_cash: Decimal = Field(DEFAULT_CASH, gt=0, description="cash of a new portfolio")
    as_of: AwareDatetime | None = Field(
        None, description="analysis time; default: a schedule's time, else the latest data"
    )
    watchlist: str | None = Field(
        None,
        pattern=NAME_PATTERN,
        description="analyse this watchlist's names (`quantdesk watchlist`)",
    )
    symbols: list[str] | None = Field(None, description="analyse these names (no watchlist)")
    scan: bool | None = Field(
        None, description="add the Scan's shortlist; default: only without watchlist or symbols"
    )
    max_tickers: int = Field(10, ge=1, le=MAX_TICKERS)
    min_conviction: Conviction = Field(Conviction.MEDIUM, description="of the Scan's shortlist")
    analysts: list[AnalystKind] = Field(default_factory=lambda: list(AnalystKind), min_length=1)
    debate_rounds: int = Field(1, ge=1, le=MAX_ROUNDS)
    risk_rounds: int = Field(1, ge=1, le=MAX_ROUNDS)
    llm: LlmChoice = LlmChoice()
    concurrency: int = Field(4, ge=1, le=MAX_CONCURRENCY, description="Pipelines at once")
    approval: Approval = Approval.AUTO
    broker: BrokerKind | None = Field(
        None,
        description="where the book's orders go: a new book is bound to it (default paper); "
        "an existing one must already be (default: the broker it has)",
    )
    execution: ExecutionPolicy = Field(
        default_factory=ExecutionPolicy, description="how orders are worked at a real broker"
    )
    reflect: bool = Field(True, description="start one Reflect per decision")
    reflect_horizon_bars: int = Field(5, ge=1, le=250)

    @field_validator("analysts")
    @classmethod
    def _once_each(cls, value: list[AnalystKind]) -> list[AnalystKind]:
        if len(set(value)) != len(value):
            raise ValueError("name each analyst once")
        return value

    @field_validator("symbols")
    @classmethod
    def _a_list(cls, value: list[str] | None) -> list[str] | None:
        if value is None:
            return None
        symbols = normalized(value)
        found = list_problem(symbols)
        if found is not None:
            raise ValueError(f"{found[0]}; {found[1]}")
        return symbols

    @model_validator(mode="after")
    def _names_from_one_place(self) -> AutoRunInput:
        if self.watchlist is not None and self.symbols is not None:
            raise ValueError("give watchlist or symbols, not both")
        if self.scan is False and not self.names_given:
            raise ValueError("without the Scan, give a watchlist or symbols to analyse")
        return self

    @property
    def names_given(self) -> bool:
        """Whether the run was given its names (a watchlist or symbols)."""
        return self.watchlist is not None or self.symbols is not None

    @property
    def scans(self) -> bool:
        """Whether the run scans: as asked, else only when it was given no names."""
        return self.scan if self.scan is not None else not self.names_given


class AutoRunProgress(RunProgress):
    """The ``progress`` answer, with the tickers' count."""

    tickers_total: int = 0
    tickers_done: int = 0
    tickers_failed: int = 0


class AutoRunResult(BaseModel):
    """What the run decided and did, and where its report is."""

    workflow_id: str
    portfolio: str
    as_of: AwareDatetime
    shortlist: list[str]
    candidates: list[str]
    decisions: list[DecisionLine] = Field(description="each in a line; the report has them whole")
    failures: list[TickerFailure]
    portfolio_status: str
    trades: int
    refused: int
    report: RunReportFiles
    report_url: str = Field(description="presigned URL of the HTML report")
    reflections: list[str] = Field(description="ids of the Reflect runs left waiting")
    usage: UsageReport
    usage_by_part: dict[str, Usage]
