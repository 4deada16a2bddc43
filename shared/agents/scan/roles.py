"""The Scan's six agents by name, and the tables derived from their specs.

A workflow step, its activity summary, its offline analyst and its stored report
all find an agent by the name here. As in the fork, the scanners get the quick
model and the two agents that weigh everything (the industry deep dive and the
macro synthesis) the deep one.
"""

from __future__ import annotations

from enum import StrEnum
from typing import Any

from shared.agents.spec import AgentSpec, SpecTable, by_key, specs_by_key, specs_by_name

GEOPOLITICAL_SCANNER = "geopolitical_scanner"
MARKET_MOVERS_SCANNER = "market_movers_scanner"
SECTOR_SCANNER = "sector_scanner"
SMART_MONEY_SCANNER = "smart_money_scanner"
INDUSTRY_DEEP_DIVE = "industry_deep_dive"
MACRO_SYNTHESIS = "macro_synthesis"


SCANNER = "scan.scanner"
DEEP_DIVE = "scan.deep_dive"
SYNTHESIS = "scan.synthesis"
GROUPS: tuple[str, ...] = (SCANNER, DEEP_DIVE, SYNTHESIS)
"""The kinds of Scan agent: one prompt builder each."""


class ScannerKind(StrEnum):
    """The four scanners; the values are the report names in ``ScanReports``."""

    GEOPOLITICAL = "geopolitical"
    MARKET_MOVERS = "market_movers"
    SECTOR = "sector"
    SMART_MONEY = "smart_money"


AGENTS: SpecTable[str, AgentSpec[Any, Any]] = specs_by_name(*GROUPS)
"""Every agent of the Scan, by name, in graph order: its spec."""

SCANNER_SPECS: SpecTable[ScannerKind, AgentSpec[Any, Any]] = specs_by_key(SCANNER, ScannerKind)
SCANNER_AGENTS: SpecTable[ScannerKind, str] = by_key(SCANNER, ScannerKind, lambda spec: spec.name)

PHASE_ONE: tuple[ScannerKind, ...] = (
    ScannerKind.GEOPOLITICAL,
    ScannerKind.MARKET_MOVERS,
    ScannerKind.SECTOR,
)
"""The scanners that need nobody's report and run at once; smart money waits for sector."""
