"""The Scan's six agents as one table: name, kind of prompt, LLM role, output schema, tools.

A workflow step, its activity summary, its offline analyst and its stored report
all find an agent by the name here. As in the fork, the scanners get the quick
model and the two agents that weigh everything (the industry deep dive and the
macro synthesis) the deep one.
"""

from __future__ import annotations

from dataclasses import dataclass
from enum import StrEnum

from pydantic import BaseModel

from shared.agents.scan.schemas import ScannerReport, ScanSummary
from shared.llm.providers import LlmRole
from shared.tools.catalog import (
    GEOPOLITICAL_TOOLS,
    INDUSTRY_TOOLS,
    MACRO_TOOLS,
    MOVERS_TOOLS,
    SECTOR_TOOLS,
    SMART_MONEY_TOOLS,
)

GEOPOLITICAL_SCANNER = "geopolitical_scanner"
MARKET_MOVERS_SCANNER = "market_movers_scanner"
SECTOR_SCANNER = "sector_scanner"
SMART_MONEY_SCANNER = "smart_money_scanner"
INDUSTRY_DEEP_DIVE = "industry_deep_dive"
MACRO_SYNTHESIS = "macro_synthesis"


class ScanAgentKind(StrEnum):
    """The kinds of Scan agent: one prompt builder each."""

    SCANNER = "scanner"
    DEEP_DIVE = "deep_dive"
    SYNTHESIS = "synthesis"


class ScannerKind(StrEnum):
    """The four scanners; the values are the report names in ``ScanReports``."""

    GEOPOLITICAL = "geopolitical"
    MARKET_MOVERS = "market_movers"
    SECTOR = "sector"
    SMART_MONEY = "smart_money"


@dataclass(frozen=True)
class ScanAgent:
    """One row: who the agent is, which builder writes its prompt, which model, schema, tools."""

    name: str
    kind: ScanAgentKind
    llm_role: LlmRole
    schema: type[BaseModel]
    tools: tuple[str, ...]

    @property
    def schema_name(self) -> str:
        """The ``response_schema`` of its requests."""
        return self.schema.__name__


AGENTS: dict[str, ScanAgent] = {
    row.name: row
    for row in (
        ScanAgent(
            GEOPOLITICAL_SCANNER,
            ScanAgentKind.SCANNER,
            LlmRole.QUICK,
            ScannerReport,
            GEOPOLITICAL_TOOLS,
        ),
        ScanAgent(
            MARKET_MOVERS_SCANNER, ScanAgentKind.SCANNER, LlmRole.QUICK, ScannerReport, MOVERS_TOOLS
        ),
        ScanAgent(
            SECTOR_SCANNER, ScanAgentKind.SCANNER, LlmRole.QUICK, ScannerReport, SECTOR_TOOLS
        ),
        ScanAgent(
            SMART_MONEY_SCANNER,
            ScanAgentKind.SCANNER,
            LlmRole.QUICK,
            ScannerReport,
            SMART_MONEY_TOOLS,
        ),
        ScanAgent(
            INDUSTRY_DEEP_DIVE,
            ScanAgentKind.DEEP_DIVE,
            LlmRole.DEEP,
            ScannerReport,
            INDUSTRY_TOOLS,
        ),
        ScanAgent(MACRO_SYNTHESIS, ScanAgentKind.SYNTHESIS, LlmRole.DEEP, ScanSummary, MACRO_TOOLS),
    )
}
"""Every agent of the Scan, by name, in graph order."""

SCANNER_AGENTS: dict[ScannerKind, str] = {
    ScannerKind.GEOPOLITICAL: GEOPOLITICAL_SCANNER,
    ScannerKind.MARKET_MOVERS: MARKET_MOVERS_SCANNER,
    ScannerKind.SECTOR: SECTOR_SCANNER,
    ScannerKind.SMART_MONEY: SMART_MONEY_SCANNER,
}

PHASE_ONE: tuple[ScannerKind, ...] = (
    ScannerKind.GEOPOLITICAL,
    ScannerKind.MARKET_MOVERS,
    ScannerKind.SECTOR,
)
"""The scanners that need nobody's report and run at once; smart money waits for sector."""
