"""The typed contracts of the ``Portfolio`` workflow: its input, the approval's request and
answer, its progress, the plan an approver sees, and its result.

Kept apart from the workflow's graph and approval wait (``workflows.portfolio``, which imports
them back, so callers may import them from either), as ``workflows.pipeline_contracts`` is.
"""

from __future__ import annotations

import hashlib
import json
from enum import StrEnum

from pydantic import AwareDatetime, BaseModel, Field, field_validator, model_validator

from activities.services import StoredReport
from shared.agents.portfolio.inputs import TickerDecision
from shared.agents.portfolio.report import PortfolioOutcome
from shared.agents.portfolio.schemas import AllocationDecision
from shared.llm.contracts import LlmChoice
from shared.portfolio.costs import Costs
from shared.portfolio.limits import Limits
from shared.portfolio.models import NAME_PATTERN, BrokerKind, DecisionStatus
from shared.portfolio.orders import OrderPlan
from shared.storage.objects import ObjectRef
from workflows.broker_orders import ExecutionPolicy
from workflows.inputs import RunInput
from workflows.progress import RunProgress

DEFAULT_APPROVAL_MINUTES = 24 * 60
MAX_APPROVAL_MINUTES = 30 * 24 * 60
MAX_DECISIONS = 500
"""Candidates at most: the agents see a bounded view of them (``shared.agents.portfolio.view``,
tried up to 500 in ``tests/test_portfolio_view.py``), and the decisions travel by key."""


class Approval(StrEnum):
    """Whether the plan trades at once or waits for a person."""

    AUTO = "auto"
    REQUIRED = "required"


class PortfolioInput(RunInput):
    """One decision for one book. ``{"portfolio": "demo", "as_of": "2012-06-01T00:00:00Z"}``
    manages the holdings alone; a Scan summary and Pipeline decisions add candidates."""

    portfolio: str = Field(pattern=NAME_PATTERN)
    as_of: AwareDatetime = Field(description="prices, risk and fills are as of this time")
    scan_summary: ObjectRef | None = Field(None, description="S3 key of a Scan's ScanSummary")
    decisions: list[TickerDecision] = Field(
        default_factory=list,
        max_length=MAX_DECISIONS,
        description="Pipeline decisions for candidates and holdings (TickerDecision.of)",
    )
    decisions_key: ObjectRef | None = Field(
        None,
        description="S3 key of the decisions as a JSON list, read at the start instead of "
        "`decisions`: a parent of many Pipelines keeps them out of its history",
    )
    llm: LlmChoice = LlmChoice()
    approval: Approval = Approval.AUTO
    approval_timeout_minutes: int = Field(DEFAULT_APPROVAL_MINUTES, ge=1, le=MAX_APPROVAL_MINUTES)
    costs: Costs | None = Field(None, description="fees and slippage; None: the worker's settings")
    limits: Limits = Limits()
    broker: BrokerKind | None = Field(
        None, description="the book's broker, checked: a book bound to another is refused"
    )
    execution: ExecutionPolicy = Field(
        default_factory=ExecutionPolicy, description="how orders are worked at a real broker"
    )

    @field_validator("decisions")
    @classmethod
    def _one_per_symbol(cls, value: list[TickerDecision]) -> list[TickerDecision]:
        symbols = [d.symbol for d in value]
        repeated = sorted({s for s in symbols if symbols.count(s) > 1})
        if repeated:
            raise ValueError(f"give one decision per symbol; repeated: {', '.join(repeated)}")
        return value

    @model_validator(mode="after")
    def _one_source_of_decisions(self) -> PortfolioInput:
        if self.decisions and self.decisions_key is not None:
            raise ValueError("give decisions or decisions_key, not both")
        return self


class ApprovalRequest(BaseModel):
    """Who answers the approval, and why (both optional); with ``plan_hash``, the answer holds
    only for the plan of that hash (``PendingPlan.digest``), so what a person saw is what
    they approved."""

    by: str = Field("", max_length=200)
    note: str = Field("", max_length=2000)
    plan_hash: str | None = Field(
        None, pattern=r"^[0-9a-f]{16}$", description="the digest of the plan being answered"
    )


class ApprovalAnswer(BaseModel):
    """What the approve/reject update did."""

    status: DecisionStatus
    message: str


class PortfolioProgress(RunProgress):
    """The ``progress`` answer, and whether the run waits for an approval."""

    awaiting_approval: bool = False
    status: DecisionStatus | None = None


class PendingPlan(BaseModel):
    """What an approver approves: the PM's decision and the sized plan (``plan`` query)."""

    portfolio: str
    decision: AllocationDecision
    plan: OrderPlan
    awaiting_approval: bool

    def digest(self) -> str:
        """16 hex digits of the SHA-256 of the decision and plan (not of whether they wait),
        the same in the workflow and in any client that read the ``plan`` query."""
        shown = self.model_dump(mode="json", exclude={"awaiting_approval"})
        canonical = json.dumps(shown, sort_keys=True, separators=(",", ":"))
        return hashlib.sha256(canonical.encode()).hexdigest()[:16]


class PortfolioResult(PortfolioOutcome):
    """The run's outcome and its stored Markdown report."""

    report: StoredReport
