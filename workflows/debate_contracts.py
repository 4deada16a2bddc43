"""The typed contracts of the ``Debate`` and ``Risk`` workflows: their inputs, results and
progress.

Kept out of ``workflows.debates`` so the workflow sandbox does not build these models again
for every run: a workflow module is imported afresh for each run it hosts, and a module
imported through ``imports_passed_through`` once per worker. Building a model's schema is
most of what importing a workflow module costs (a Pipeline and its two debates took 24 ms
of the worker's event loop each, now 8).
"""

from __future__ import annotations

from pydantic import AwareDatetime, BaseModel, Field

from shared.agents.pipeline.inputs import AnalystReports
from shared.agents.pipeline.schemas import DebateTurn, ResearchPlan, TraderProposal
from shared.llm.contracts import LlmChoice, UsageReport
from shared.memory import MemoryRole
from workflows.inputs import RunInput
from workflows.progress import RunProgress

MAX_ROUNDS = 5
"""Each round adds 2 (research) or 3 (risk) calls and their transcript to every later prompt."""


class DebateProgress(RunProgress):
    """The answer of a debate's ``progress`` query, with the transcript so far."""

    transcript: list[DebateTurn]


class DebateInput(RunInput):
    """What the bull/bear debate argues over; a Pipeline's ``state`` holds all of it."""

    symbol: str = Field(min_length=1, max_length=32)
    as_of: AwareDatetime
    reports: AnalystReports
    rounds: int = Field(1, ge=1, le=MAX_ROUNDS)
    memories: dict[MemoryRole, str] = Field(
        default_factory=dict, description="each role's recalled lessons; missing: none"
    )
    llm: LlmChoice = LlmChoice()
    macro_context: str | None = Field(None, description="the Scan's summary the manager reads")


class RiskInput(DebateInput):
    """The risk debate also argues over the trader's proposal (and keeps the plan it follows)."""

    proposal: TraderProposal
    research_plan: ResearchPlan


class DebateResult(BaseModel):
    """The bull/bear transcript and the research manager's plan."""

    transcript: list[DebateTurn]
    research_plan: ResearchPlan
    usage: UsageReport


class RiskResult(BaseModel):
    """The risk transcript, for the portfolio manager."""

    transcript: list[DebateTurn]
    usage: UsageReport
