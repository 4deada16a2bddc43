"""The Pipeline's twelve agents as one table: name, kind of prompt, LLM role and output schema.

A workflow step, its activity summary, its offline analyst and its memory all
find an agent by the name here. The LLM role follows TradingAgents: the two
managers, who weigh everything, get the deep model; everyone else the quick one.
"""

from __future__ import annotations

from dataclasses import dataclass
from enum import StrEnum

from pydantic import BaseModel

from shared.agents.pipeline.schemas import (
    SPEAKERS,
    AnalystKind,
    AnalystReport,
    Debate,
    DebateTurn,
    PortfolioDecision,
    ResearchPlan,
    SentimentReport,
    Speaker,
    TraderProposal,
)
from shared.llm.providers import LlmRole

MARKET_ANALYST = "market_analyst"
SOCIAL_ANALYST = "social_analyst"
NEWS_ANALYST = "news_analyst"
FUNDAMENTALS_ANALYST = "fundamentals_analyst"
BULL_RESEARCHER = "bull_researcher"
BEAR_RESEARCHER = "bear_researcher"
RESEARCH_MANAGER = "research_manager"
TRADER = "trader"
AGGRESSIVE_DEBATER = "aggressive_debater"
CONSERVATIVE_DEBATER = "conservative_debater"
NEUTRAL_DEBATER = "neutral_debater"
PORTFOLIO_MANAGER = "portfolio_manager"


class AgentKind(StrEnum):
    """The kinds of agent: one prompt builder each, parameterised by the agent's role."""

    ANALYST = "analyst"
    DEBATER = "debater"
    MANAGER = "manager"
    TRADER = "trader"


class ManagerKind(StrEnum):
    """The two managers; the values are their agent names."""

    RESEARCH_MANAGER = RESEARCH_MANAGER
    PORTFOLIO_MANAGER = PORTFOLIO_MANAGER


@dataclass(frozen=True)
class AgentRole:
    """One row: who the agent is, which builder writes its prompt, which model, which schema."""

    name: str
    kind: AgentKind
    llm_role: LlmRole
    schema: type[BaseModel]

    @property
    def schema_name(self) -> str:
        """The ``response_schema`` of its requests."""
        return self.schema.__name__


AGENTS: dict[str, AgentRole] = {
    row.name: row
    for row in (
        AgentRole(MARKET_ANALYST, AgentKind.ANALYST, LlmRole.QUICK, AnalystReport),
        AgentRole(SOCIAL_ANALYST, AgentKind.ANALYST, LlmRole.QUICK, SentimentReport),
        AgentRole(NEWS_ANALYST, AgentKind.ANALYST, LlmRole.QUICK, AnalystReport),
        AgentRole(FUNDAMENTALS_ANALYST, AgentKind.ANALYST, LlmRole.QUICK, AnalystReport),
        AgentRole(BULL_RESEARCHER, AgentKind.DEBATER, LlmRole.QUICK, DebateTurn),
        AgentRole(BEAR_RESEARCHER, AgentKind.DEBATER, LlmRole.QUICK, DebateTurn),
        AgentRole(RESEARCH_MANAGER, AgentKind.MANAGER, LlmRole.DEEP, ResearchPlan),
        AgentRole(TRADER, AgentKind.TRADER, LlmRole.QUICK, TraderProposal),
        AgentRole(AGGRESSIVE_DEBATER, AgentKind.DEBATER, LlmRole.QUICK, DebateTurn),
        AgentRole(CONSERVATIVE_DEBATER, AgentKind.DEBATER, LlmRole.QUICK, DebateTurn),
        AgentRole(NEUTRAL_DEBATER, AgentKind.DEBATER, LlmRole.QUICK, DebateTurn),
        AgentRole(PORTFOLIO_MANAGER, AgentKind.MANAGER, LlmRole.DEEP, PortfolioDecision),
    )
}
"""Every agent of the Pipeline, by name."""

ANALYST_AGENTS: dict[AnalystKind, str] = {
    AnalystKind.MARKET: MARKET_ANALYST,
    AnalystKind.SOCIAL: SOCIAL_ANALYST,
    AnalystKind.NEWS: NEWS_ANALYST,
    AnalystKind.FUNDAMENTALS: FUNDAMENTALS_ANALYST,
}

DEBATER_AGENTS: dict[Speaker, str] = {
    Speaker.BULL: BULL_RESEARCHER,
    Speaker.BEAR: BEAR_RESEARCHER,
    Speaker.AGGRESSIVE: AGGRESSIVE_DEBATER,
    Speaker.CONSERVATIVE: CONSERVATIVE_DEBATER,
    Speaker.NEUTRAL: NEUTRAL_DEBATER,
}

MANAGER_DEBATE: dict[ManagerKind, Debate] = {
    ManagerKind.RESEARCH_MANAGER: Debate.RESEARCH,
    ManagerKind.PORTFOLIO_MANAGER: Debate.RISK,
}
"""The debate each manager judges (and the only transcript it reads)."""

DEFAULT_ROUNDS: dict[Debate, int] = {Debate.RESEARCH: 1, Debate.RISK: 1}
"""TradingAgents' defaults: max_debate_rounds = max_risk_discuss_rounds = 1."""


def speaking_order(debate: Debate, rounds: int | None = None) -> list[Speaker]:
    """Every turn of ``debate`` in order: its speakers in turn, ``rounds`` times.

    The peers' stop rule (count ≥ 2·rounds for bull/bear, ≥ 3·rounds for risk) as a
    list a workflow walks, so routing never depends on counting strings.
    """
    count = DEFAULT_ROUNDS[debate] if rounds is None else rounds
    if count < 1:
        raise ValueError(f"a debate needs at least one round, not {count}")
    return list(SPEAKERS[debate]) * count
