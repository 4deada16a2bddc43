"""The Portfolio flow's agents, registered in the order they run."""

from __future__ import annotations

from typing import Any

from shared.agents.portfolio import (
    book_manager,
    holdings_reviewer,
    macro_summarizer,
    micro_summarizer,
)
from shared.agents.spec import AgentSpec, register_agent

PORTFOLIO: tuple[AgentSpec[Any, Any], ...] = (
    holdings_reviewer.SPEC,
    macro_summarizer.SPEC,
    micro_summarizer.SPEC,
    book_manager.SPEC,
)
"""The reviewer, the two summaries, then the book manager."""

for _spec in PORTFOLIO:
    register_agent(_spec)
