"""The Portfolio flow's four agents: name, LLM role and output schema.

Named apart from the Pipeline's per-ticker ``portfolio_manager``: the
``book_manager`` decides for the whole book. It weighs everything, so it gets
the deep model; the reviewer and the two summaries the quick one.
"""

from __future__ import annotations

from dataclasses import dataclass

from pydantic import BaseModel

from shared.agents.portfolio.schemas import (
    AllocationDecision,
    HoldingsReview,
    MacroSummary,
    MicroSummary,
)
from shared.llm.providers import LlmRole

HOLDINGS_REVIEWER = "holdings_reviewer"
MACRO_SUMMARIZER = "macro_summarizer"
MICRO_SUMMARIZER = "micro_summarizer"
BOOK_MANAGER = "book_manager"


@dataclass(frozen=True)
class PortfolioAgent:
    """One row: the agent, its model role and the schema it answers in."""

    name: str
    llm_role: LlmRole
    schema: type[BaseModel]

    @property
    def schema_name(self) -> str:
        """The ``response_schema`` of its requests."""
        return self.schema.__name__


AGENTS: dict[str, PortfolioAgent] = {
    row.name: row
    for row in (
        PortfolioAgent(HOLDINGS_REVIEWER, LlmRole.QUICK, HoldingsReview),
        PortfolioAgent(MACRO_SUMMARIZER, LlmRole.QUICK, MacroSummary),
        PortfolioAgent(MICRO_SUMMARIZER, LlmRole.QUICK, MicroSummary),
        PortfolioAgent(BOOK_MANAGER, LlmRole.DEEP, AllocationDecision),
    )
}
"""Every agent of the Portfolio flow, by name."""
