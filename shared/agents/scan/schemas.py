"""The Scan's structured outputs, registered by name for ``response_schema``.

``ScanSummary`` is the fork's macro summary, typed: closed sets are enums (thesis
angle, conviction, the GICS sector), tickers are normalised and listed once (a
repeat is dropped, the first kept), and a stock is marked ``smart_money`` only when a smart-money screen flagged it and it
fits the thesis. Whether each ticker exists in the data universe as of the scan
date is not knowable from the object alone; the Scan checks it against the data
router (``shared.agents.scan.shortlist``) and asks for a repair when it does not.

``ScannerReport`` is what each scanner and the industry deep dive hand on: a
Markdown report with the findings it rests on, so the synthesis (and a human
reading S3) sees the same text.
"""

from __future__ import annotations

from enum import StrEnum
from typing import Annotated

from pydantic import BaseModel, BeforeValidator, Field, StringConstraints, model_validator

from shared.agents.schemas import first_of_each, register_schema
from shared.data.contracts import Sector

Ticker = Annotated[
    str,
    # Normalised before the pattern is checked, which StringConstraints alone does not do.
    BeforeValidator(lambda value: value.strip().upper() if isinstance(value, str) else value),
    StringConstraints(min_length=1, max_length=12, pattern=r"^[A-Z0-9.\-]+$"),
]
"""A listed symbol as the data layer spells it (upper case, letters, digits, '.' and '-')."""


class ThesisAngle(StrEnum):
    """Why a stock is worth a closer look."""

    GROWTH = "growth"
    VALUE = "value"
    CATALYST = "catalyst"
    TURNAROUND = "turnaround"
    DEFENSIVE = "defensive"
    MOMENTUM = "momentum"


class Conviction(StrEnum):
    """How strongly the evidence supports a theme or a stock."""

    HIGH = "high"
    MEDIUM = "medium"
    LOW = "low"


class MacroContext(BaseModel):
    """Where the economy and policy stand, and what could upset them."""

    economic_cycle: str = Field(
        min_length=1, description="e.g. early expansion, late cycle, contraction, with the evidence"
    )
    central_bank_stance: str = Field(
        min_length=1, description="e.g. easing, on hold, tightening, with the rate it rests on"
    )
    geopolitical_risks: list[str] = Field(
        default_factory=list, description="the geopolitical risks in the news, most serious first"
    )


class KeyTheme(BaseModel):
    """One market theme the scan found."""

    theme: str = Field(min_length=1, description="a short name, e.g. 'energy leadership'")
    description: str = Field(min_length=1, description="what the data shows, with numbers")
    conviction: Conviction
    timeframe: str = Field(min_length=1, description="how long it should play out, e.g. 1-3 months")


class StockToInvestigate(BaseModel):
    """One shortlisted stock for the per-ticker Pipeline to analyse."""

    ticker: Ticker
    name: str = Field(min_length=1)
    sector: Sector = Field(description="its GICS sector, spelled as in the universe")
    rationale: str = Field(min_length=1, description="why it is on the list, with numbers")
    thesis_angle: ThesisAngle
    conviction: Conviction
    key_catalysts: list[str] = Field(default_factory=list, description="what could move it")
    risks: list[str] = Field(default_factory=list, description="what could go wrong")
    smart_money: bool = Field(
        False,
        description="true only if a smart-money screen (unusual volume, insider buying, "
        "52-week-high breakout) flagged it and it fits the macro thesis",
    )


@register_schema
class ScanSummary(BaseModel):
    """The macro synthesis: the market picture and the stocks to investigate."""

    timeframe: str = Field(min_length=1, description="the horizon of the view, e.g. 1-3 months")
    executive_summary: str = Field(min_length=1)
    macro_context: MacroContext
    key_themes: list[KeyTheme] = Field(min_length=1, description="strongest first")
    # The model is asked for at least one (the schema's minItems), and an empty reply is a
    # problem for the repair turn (``shortlist_problems``); but a shortlist the data emptied
    # (every ticker named outside the universe) is a valid outcome the scan reports.
    stocks_to_investigate: list[StockToInvestigate] = Field(
        description="highest conviction first; each ticker once (repeats dropped)",
        json_schema_extra={"minItems": 1},
    )
    risk_factors: list[str] = Field(default_factory=list, description="what would change the view")

    @model_validator(mode="after")
    def _each_ticker_once(self) -> ScanSummary:
        self.stocks_to_investigate = first_of_each(
            self.stocks_to_investigate, lambda stock: stock.ticker
        )
        return self

    def tickers(self) -> list[str]:
        """The shortlisted tickers, in the summary's order."""
        return [stock.ticker for stock in self.stocks_to_investigate]


@register_schema
class ScannerReport(BaseModel):
    """A scanner's (or the deep dive's) report for the synthesis."""

    headline: str = Field(min_length=1, description="the finding in one sentence")
    findings: list[str] = Field(min_length=1, description="the facts, each with its number")
    tickers: list[Ticker] = Field(
        default_factory=list, description="symbols the report names as worth a look, best first"
    )
    risks: list[str] = Field(default_factory=list, description="what could hurt, worst first")
    report_markdown: str = Field(min_length=1, description="the full report in Markdown")
