"""The Pipeline's agents by name, and the tables derived from their specs.

A workflow step, its activity summary, its offline analyst and its memory all
find an agent by the name here; every table is a live view of the registered
specs (``shared.agents.spec``), so a new analyst's spec puts it in all of them. The
LLM role follows TradingAgents: the two managers, who weigh everything, get the deep
model; everyone else the quick one.
"""

from __future__ import annotations

from enum import StrEnum
from typing import Any

from shared.agents.pipeline.kinds import ANALYST_GROUP
from shared.agents.pipeline.schemas import SPEAKERS, AnalystKind, AnalystReport, Debate, Speaker
from shared.agents.spec import AgentSpec, SpecTable, by_key, specs_by_key, specs_by_name

SOCIAL_ANALYST = "social_analyst"
NEWS_ANALYST = "news_analyst"
BULL_RESEARCHER = "bull_researcher"
BEAR_RESEARCHER = "bear_researcher"
RESEARCH_MANAGER = "research_manager"
TRADER = "trader"
AGGRESSIVE_DEBATER = "aggressive_debater"
CONSERVATIVE_DEBATER = "conservative_debater"
NEUTRAL_DEBATER = "neutral_debater"
PORTFOLIO_MANAGER = "portfolio_manager"


ANALYST = ANALYST_GROUP
DEBATER = "pipeline.debater"
MANAGER = "pipeline.manager"
TRADING = "pipeline.trader"
GROUPS: tuple[str, ...] = (ANALYST, DEBATER, MANAGER, TRADING)
"""The kinds of Pipeline agent: one prompt builder each, parameterised by the agent's spec."""


class ManagerKind(StrEnum):
    """The two managers; the values are their agent names."""

    RESEARCH_MANAGER = RESEARCH_MANAGER
    PORTFOLIO_MANAGER = PORTFOLIO_MANAGER


AGENTS: SpecTable[str, AgentSpec[Any, Any]] = specs_by_name(*GROUPS)
"""Every agent of the Pipeline, by name: its spec (LLM role, schema, brief, offline rule)."""

ANALYST_SPECS: SpecTable[AnalystKind, AgentSpec[Any, Any]] = specs_by_key(ANALYST, AnalystKind)
"""The analysts' specs, by kind, in registration order (the order reports appear in)."""

ANALYST_AGENTS: SpecTable[AnalystKind, str] = by_key(ANALYST, AnalystKind, lambda spec: spec.name)

ANALYST_SCHEMAS: SpecTable[AnalystKind, type[AnalystReport]] = by_key(
    ANALYST, AnalystKind, lambda spec: spec.schema
)
"""The schema each analyst's report is validated as (the social one adds the crowd's mood)."""

DEBATER_AGENTS: SpecTable[Speaker, str] = by_key(DEBATER, Speaker, lambda spec: spec.name)

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


def all_analysts() -> str:
    """Every registered analyst's kind, comma-separated: the CLI's default ``--analysts``."""
    return ",".join(kind.value for kind in AnalystKind)
