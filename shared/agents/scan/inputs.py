"""What each kind of Scan agent is given: the data of its prompt, which its request carries.

As in the Pipeline, one model per kind of agent: the workflow builds it, the
prompt builder renders it, and ``model_dump(mode="json")`` is the request's
``inputs`` the offline analyst validates back, so prompt and offline analyst
read the same data by construction.

| agent kind (builder)                 | inputs model       | holds                                          |
|--------------------------------------|--------------------|------------------------------------------------|
| scanners (``scanner_messages``)      | ``ScannerInputs``  | as_of, topic; smart money: the sector report   |
|                                      |                    | and the sector moves                           |
| deep dive (``deep_dive_messages``)   | ``DeepDiveInputs`` | as_of, the three sectors chosen in code, the   |
|                                      |                    | smart-money report and the stocks it flagged   |
| synthesis (``synthesis_messages``)   | ``SynthesisInputs``| as_of, max_tickers, the five reports, sector   |
|                                      |                    | moves, index levels, every candidate, series   |
"""

from __future__ import annotations

from pydantic import AwareDatetime, BaseModel, Field

from shared.agents.missing import MissingStep
from shared.agents.scan.facts import Candidate
from shared.agents.scan.roles import ScannerKind
from shared.agents.scan.schemas import ScannerReport
from shared.data.contracts import IndexLevel, Sector, SectorPerformance
from shared.llm.contracts import ToolCall
from shared.tools.catalog import SMART_MONEY_TOOLS

GEOPOLITICAL_TOPIC = "geopolitics"
"""The news topic the geopolitical scanner reads first (an LLM may ask for more)."""

MACRO_SERIES: tuple[str, ...] = ("FEDFUNDS", "CPI", "UNRATE")
"""The macro dashboard the synthesis always reads: policy rate, inflation, jobs."""

SCANNER_PREFETCH: dict[ScannerKind, tuple[str, ...]] = {
    ScannerKind.SECTOR: ("get_sector_performance",),
    ScannerKind.SMART_MONEY: SMART_MONEY_TOOLS,
}
"""Calls the workflow makes for a scanner before its first turn, because the graph depends on
their answers whatever a model would have asked for: the sector moves pick the deep dive's
sectors, and the screens decide which stocks may be marked smart money."""

MAX_TICKERS = 25
"""The most stocks a shortlist may hold: each becomes a Pipeline run downstream."""


class ScanReports(BaseModel):
    """The scanners' and the deep dive's reports, each under its own name (missing: null),
    and why each missing one is missing."""

    geopolitical: ScannerReport | None = None
    market_movers: ScannerReport | None = None
    sector: ScannerReport | None = None
    smart_money: ScannerReport | None = None
    industry_deep_dive: ScannerReport | None = None
    missing: list[MissingStep] = Field(
        default_factory=list, description="agents whose report the scan went on without"
    )

    def given(self) -> dict[str, ScannerReport]:
        """The reports present, in graph order."""
        found = {name: getattr(self, name) for name in type(self).model_fields}
        return {name: r for name, r in found.items() if isinstance(r, ScannerReport)}


class ScannerInputs(BaseModel):
    """A scanner's brief; its data comes from its tools, read as of ``as_of``."""

    as_of: AwareDatetime = Field(description="the scan time; the tools read nothing after it")
    topic: str = Field(
        GEOPOLITICAL_TOPIC,
        description="the topic get_topic_news is asked for when the offline engine calls it "
        "(an LLM chooses its own)",
    )
    sector_report: ScannerReport | None = Field(
        None, description="the sector scanner's report (the smart-money scanner's context)"
    )
    sectors: list[SectorPerformance] = Field(
        default_factory=list, description="the sector moves behind that report"
    )
    missing: list[MissingStep] = Field(
        default_factory=list, description="reports this scanner would have read that are missing"
    )


def scanner_prefetch(kind: ScannerKind) -> list[ToolCall]:
    """The calls ``SCANNER_PREFETCH`` names for ``kind``, with their default arguments."""
    return [_call(index, tool) for index, tool in enumerate(SCANNER_PREFETCH.get(kind, ()))]


class DeepDiveInputs(BaseModel):
    """The industry deep dive's brief: which sectors (chosen in code) and what smart money did."""

    as_of: AwareDatetime
    sectors: list[SectorPerformance] = Field(
        min_length=1, description="the sectors to dig into, largest absolute 21-day move first"
    )
    smart_money_report: ScannerReport | None = Field(
        None, description="the smart-money scanner's report; null when it is missing"
    )
    smart_money: list[Candidate] = Field(
        default_factory=list, description="the stocks the smart-money screens flagged"
    )
    missing: list[MissingStep] = Field(
        default_factory=list, description="reports the deep dive would have read that are missing"
    )

    @property
    def sector_names(self) -> list[Sector]:
        """The chosen sectors, in order."""
        return [move.sector for move in self.sectors]

    def prefetch(self) -> list[ToolCall]:
        """The calls the workflow makes before the first turn: each sector's leading companies,
        so the deep dive reads all three sectors whatever the model would have asked for."""
        return [
            _call(index, "get_industry_top_companies", sector=sector.value)
            for index, sector in enumerate(self.sector_names)
        ]


class SynthesisInputs(BaseModel):
    """Everything the macro synthesis weighs; its macro series come from its own tools."""

    as_of: AwareDatetime
    max_tickers: int = Field(ge=1, le=MAX_TICKERS)
    reports: ScanReports
    sectors: list[SectorPerformance] = Field(default_factory=list, description="all 11 sectors")
    deep_dive_sectors: list[Sector] = Field(default_factory=list)
    indices: list[IndexLevel] = Field(default_factory=list)
    candidates: list[Candidate] = Field(
        default_factory=list, description="every stock the scanners named, with its numbers"
    )
    series: list[str] = Field(
        default_factory=lambda: list(MACRO_SERIES), description="the macro series read for it"
    )

    def prefetch(self) -> list[ToolCall]:
        """The calls the workflow makes before the first turn: the macro dashboard."""
        return [
            _call(index, "get_macro_series", series=name) for index, name in enumerate(self.series)
        ]


def _call(index: int, tool: str, **arguments: str) -> ToolCall:
    """A call the workflow makes on the agent's behalf; the id says so."""
    return ToolCall(id=f"prefetch_{index}_{tool}", name=tool, arguments=arguments)
