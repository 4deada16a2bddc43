"""The typed contracts of the ``Pipeline`` workflow: its input, state, result and digest.

Kept out of ``workflows.pipeline`` for the reason ``workflows.debate_contracts`` gives: the
sandbox imports a workflow's module afresh for every run, and these models were most of
that cost.
"""

from __future__ import annotations

from datetime import datetime
from typing import Any

from pydantic import BaseModel, Field, computed_field, field_validator, model_validator

from activities.reflection import DEFAULT_HORIZON_BARS
from activities.research import StoredReport
from shared.agents.missing import MissingStep
from shared.agents.pipeline.facts import PriceFacts
from shared.agents.pipeline.inputs import AnalystReports
from shared.agents.pipeline.prompts import render_plan, render_proposal
from shared.agents.pipeline.schemas import (
    AnalystKind,
    DebateTurn,
    PortfolioDecision,
    ResearchPlan,
    TraderProposal,
)
from shared.agents.portfolio.inputs import DecisionLine
from shared.agents.reflection import stance_of
from shared.llm.contracts import LlmChoice, Usage, UsageReport
from shared.memory import MemoryRole, SourceRun
from shared.storage.objects import ObjectRef
from workflows.debate_contracts import MAX_ROUNDS, DebateInput, RiskInput
from workflows.inputs import RunInput, ZonedTime
from workflows.progress import RunProgress
from workflows.reflect import DECISION_MAX_CHARS, ReflectInput, RoleDecision

MACRO_CONTEXT_MAX = 20_000
"""Characters of macro context, inline or stored: a Scan summary is a few thousand."""


class ReflectPlan(BaseModel):
    """A ``Reflect`` to start on the decision and leave waiting out its horizon."""

    workflow_id: str = Field(min_length=1, description="the Reflect run's id")
    horizon_bars: int = Field(DEFAULT_HORIZON_BARS, ge=1)


class PipelineInput(RunInput):
    """What to analyse. ``{"symbol": "GOOG"}`` alone is enough."""

    symbol: str = Field(min_length=1, max_length=32)
    as_of: ZonedTime | None = Field(None, description="analysis time (UTC); default: latest bar")
    analysts: list[AnalystKind] = Field(
        default_factory=lambda: list(AnalystKind), min_length=1, description="which analysts run"
    )
    debate_rounds: int = Field(1, ge=1, le=MAX_ROUNDS)
    risk_rounds: int = Field(1, ge=1, le=MAX_ROUNDS)
    llm: LlmChoice = LlmChoice()
    macro_context: str | None = Field(
        None, max_length=MACRO_CONTEXT_MAX, description="a macro summary as text"
    )
    macro_context_key: ObjectRef | None = Field(
        None,
        description="where a Scan stored its summary (Markdown or JSON); read once at the start",
    )
    position: dict[str, Any] | None = Field(None, description="the portfolio's current holding")
    slim_result: bool = Field(
        False,
        description="return a PipelineDigest, the decision kept as JSON beside the report: a "
        "parent of many Pipelines keeps a line of each, not their whole results",
    )
    reflect: ReflectPlan | None = Field(
        None, description="start this Reflect on the decision (left running after the run)"
    )
    chart: ObjectRef | None = Field(
        None,
        description="draw the ticker's daily chart as of the analysis time here, beside the "
        "analysts: a parent's report then finds it drawn",
    )

    @model_validator(mode="after")
    def _one_macro_source(self) -> PipelineInput:
        if self.macro_context is not None and self.macro_context_key is not None:
            raise ValueError("give macro_context or macro_context_key, not both")
        return self

    @field_validator("analysts")
    @classmethod
    def _once_each(cls, value: list[AnalystKind]) -> list[AnalystKind]:
        if len(set(value)) != len(value):
            raise ValueError("name each analyst once")
        # Graph order, whatever order they were given in.
        return [kind for kind in AnalystKind if kind in value]


class PipelineProgress(RunProgress):
    """The answer of the ``progress`` query."""


class DataSource(BaseModel):
    """Where one analyst's data tool read from: for the report's Data section."""

    analyst: AnalystKind
    tool: str
    vendor: str | None = Field(description="the vendor(s) that answered; None for no data")
    passed_over: list[str] = Field(
        default_factory=list, description="vendors not asked for the run's time, and why"
    )


class PipelineState(BaseModel):
    """Everything the run has produced so far (the ``state`` query); the debates restart
    from it."""

    workflow_id: str
    symbol: str
    as_of: datetime | None = None
    analysts: list[AnalystKind]
    debate_rounds: int
    risk_rounds: int
    llm: LlmChoice
    macro_context: str | None = Field(None, description="the macro summary every agent read")
    reports: AnalystReports = AnalystReports()
    abort_reason: str | None = Field(None, description="the critical abort that ended the run")
    memories: dict[MemoryRole, str] = Field(default_factory=dict)
    price: PriceFacts | None = None
    research_transcript: list[DebateTurn] = Field(default_factory=list)
    research_plan: ResearchPlan | None = None
    proposal: TraderProposal | None = None
    risk_transcript: list[DebateTurn] = Field(default_factory=list)
    decision: PortfolioDecision | None = None
    report: StoredReport | None = None
    usage: UsageReport = UsageReport()
    data: list[DataSource] = Field(
        default_factory=list, description="each analyst's data tools and the vendors they read"
    )

    @computed_field  # type: ignore[prop-decorator]
    @property
    def missing(self) -> list[MissingStep]:
        """The steps the run went on without (so far only analysts can be)."""
        return list(self.reports.missing.values())

    def role_decisions(self) -> dict[MemoryRole, RoleDecision]:
        """Each role's last words with their direction, as ``Reflect`` grades them (the run
        has decided). A risk debater whose turn states no direction is left out rather than
        guessed."""
        assert self.decision is not None, "the run has not decided yet"
        decisions: dict[MemoryRole, RoleDecision] = {}
        for turn in [*self.research_transcript, *self.risk_transcript]:
            role = MemoryRole(turn.speaker.value)
            if stance_of(role, turn.argument) is not None:
                decisions[role] = RoleDecision(text=turn.argument[:DECISION_MAX_CHARS])
        if self.research_plan is not None:
            decisions[MemoryRole.RESEARCH_MANAGER] = RoleDecision(
                text=render_plan(self.research_plan)[:DECISION_MAX_CHARS],
                direction=self.research_plan.recommendation.value,
            )
        if self.proposal is not None:
            decisions[MemoryRole.TRADER] = RoleDecision(
                text=render_proposal(self.proposal)[:DECISION_MAX_CHARS],
                direction=self.proposal.action.value,
            )
        decision = self.decision
        decisions[MemoryRole.PORTFOLIO_MANAGER] = RoleDecision(
            text=f"{decision.rating.value}: {decision.executive_summary}"[:DECISION_MAX_CHARS],
            direction=decision.rating.value,
        )
        return decisions

    def debate_input(self) -> DebateInput:
        """The ``Debate`` child's input, to re-run the bull/bear debate from this state."""
        if self.as_of is None or not self.reports.by_kind():
            raise ValueError("the run has no analyst reports yet: nothing to debate")
        return DebateInput(
            symbol=self.symbol,
            as_of=self.as_of,
            reports=self.reports,
            rounds=self.debate_rounds,
            memories=self.memories,
            llm=self.llm,
            macro_context=self.macro_context,
        )

    def risk_input(self) -> RiskInput:
        """The ``Risk`` child's input, to re-run the risk debate from this state."""
        if self.proposal is None or self.research_plan is None:
            raise ValueError("the run has no trader proposal yet: nothing to debate")
        return RiskInput(
            **{**self.debate_input().model_dump(), "rounds": self.risk_rounds},
            proposal=self.proposal,
            research_plan=self.research_plan,
        )


class PipelineResult(PipelineState):
    """The decision with everything it was based on, and the stored report."""

    as_of: datetime
    decision: PortfolioDecision
    report: StoredReport
    run_id: str = Field(description="the Temporal run that made the decision")

    def reflect_input(
        self, *, horizon_bars: int = DEFAULT_HORIZON_BARS, llm: LlmChoice | None = None
    ) -> ReflectInput:
        """What ``Reflect`` grades once the horizon has passed: each role's last words with
        their direction (``role_decisions``), on the situation the lessons will be matched
        against later."""
        return ReflectInput(
            source=SourceRun(workflow_id=self.workflow_id, run_id=self.run_id),
            symbol=self.symbol,
            as_of=self.as_of,
            situation=situation_of(self.reports),
            decisions=self.role_decisions(),
            horizon_bars=horizon_bars,
            llm=llm or self.llm,
        )


class PipelineDigest(BaseModel):
    """What a slim Pipeline returns (``slim_result``): the decision in a line, the usage, and
    where the rest is. A whole result is about 11 KB of the parent's history; this is a few
    hundred bytes, so a parent of a hundred Pipelines stays small."""

    workflow_id: str
    run_id: str
    decision: DecisionLine
    stored_decision: ObjectRef = Field(description="the whole TickerDecision, as JSON")
    usage: Usage = Field(description="the total: each agent's share is in the run's own state")
    reflection: str | None = Field(None, description="the Reflect run started on the decision")


def whole(result: PipelineResult | PipelineDigest) -> PipelineResult:
    """The result of a Pipeline started without ``slim_result``, which is always whole."""
    if isinstance(result, PipelineDigest):
        raise TypeError(f"{result.workflow_id} was started with slim_result: it returns a digest")
    return result


def situation_of(reports: AnalystReports) -> str:
    """The market as the analysts saw it: what lessons are recorded under and recalled by."""
    return "\n\n".join(report.report_markdown for report in reports.by_kind().values())
