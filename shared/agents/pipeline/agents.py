"""The Pipeline's agents, registered in the order they run (and their reports appear).

Adding an analyst: write its module (its focus, tools and offline ``Desk``, with
``analyst_spec``) and add its ``SPEC`` here; every table, prompt, run input and
report takes it from the registry.
"""

from __future__ import annotations

from typing import Any

from shared.agents.pipeline import (
    debaters,
    fundamentals_analyst,
    market_analyst,
    news_analyst,
    portfolio_manager,
    research_manager,
    social_analyst,
    trader,
)
from shared.agents.spec import AgentSpec, register_agent

PIPELINE: tuple[AgentSpec[Any, Any], ...] = (
    market_analyst.SPEC,
    social_analyst.SPEC,
    news_analyst.SPEC,
    fundamentals_analyst.SPEC,
    *debaters.SPECS[:2],
    research_manager.SPEC,
    trader.SPEC,
    *debaters.SPECS[2:],
    portfolio_manager.SPEC,
)
"""The Pipeline's agents in running order: the analysts, the bull/bear debate and its judge,
the trader, the risk debate, the portfolio manager."""

for _spec in PIPELINE:
    register_agent(_spec)
