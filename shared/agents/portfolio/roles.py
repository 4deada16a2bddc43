"""The Portfolio flow's four agents by name, and the table derived from their specs.

Named apart from the Pipeline's per-ticker ``portfolio_manager``: the
``book_manager`` decides for the whole book. It weighs everything, so it gets
the deep model; the reviewer and the two summaries the quick one.
"""

from __future__ import annotations

from typing import Any

from shared.agents.spec import AgentSpec, SpecTable, specs_by_name

HOLDINGS_REVIEWER = "holdings_reviewer"
MACRO_SUMMARIZER = "macro_summarizer"
MICRO_SUMMARIZER = "micro_summarizer"
BOOK_MANAGER = "book_manager"
PORTFOLIO_GROUP = "portfolio"
"""The spec group of the Portfolio flow's agents."""

AGENTS: SpecTable[str, AgentSpec[Any, Any]] = specs_by_name(PORTFOLIO_GROUP)
"""Every agent of the Portfolio flow, by name: its spec."""
