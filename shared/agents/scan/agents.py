"""The Scan's agents, registered in graph order."""

from __future__ import annotations

from typing import Any

from shared.agents.scan import (
    geopolitical_scanner,
    industry_deep_dive,
    macro_synthesis,
    market_movers_scanner,
    sector_scanner,
    smart_money_scanner,
)
from shared.agents.spec import AgentSpec, register_agent

SCAN: tuple[AgentSpec[Any, Any], ...] = (
    geopolitical_scanner.SPEC,
    market_movers_scanner.SPEC,
    sector_scanner.SPEC,
    smart_money_scanner.SPEC,
    industry_deep_dive.SPEC,
    macro_synthesis.SPEC,
)
"""The four scanners, the industry deep dive, then the macro synthesis."""

for _spec in SCAN:
    register_agent(_spec)
