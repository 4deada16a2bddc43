"""What each kind of Pipeline agent is given: the data of its prompt, which its request carries.

One model per kind of agent. The workflow builds it, the prompt builder renders
it, and ``model_dump(mode="json")`` is the ``ChatRequest.inputs`` the offline
analyst validates back: prompt and offline analyst read the same data by
construction. Reports travel by kind (``reports.get(AnalystKind.FUNDAMENTALS)`` holds
only the fundamentals analyst's report), so nobody can be handed the news
report as the fundamentals one, which is what TradingAgents' risk manager read.

| agent kind (builder)            | inputs model     | fields                                                         |
|---------------------------------|------------------|----------------------------------------------------------------|
| analysts (``analyst_messages``) | ``AnalystInputs``  | symbol, as_of, macro_context, position, names (+ tool results) |
| researchers, risk debaters      | ``DebaterInputs``  | symbol, reports, transcript, memories, proposal (risk only)    |
| trader (``trader_messages``)    | ``TraderInputs``   | symbol, reports, research_plan, memories, last_price, atr,     |
|                                 |                  | volatility                                                     |
| managers (``manager_messages``) | ``ManagerInputs``  | symbol, reports, transcript, memories, research_plan and       |
|                                 |                  | proposal (portfolio manager), last_price, macro_context        |
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from typing import Any

from pydantic import (
    AwareDatetime,
    BaseModel,
    Field,
    SerializeAsAny,
    SerializerFunctionWrapHandler,
    model_serializer,
    model_validator,
)

from shared.agents.missing import MissingStep
from shared.agents.pipeline.facts import PriceFacts, positive
from shared.agents.pipeline.roles import ANALYST_SCHEMAS
from shared.agents.pipeline.schemas import (
    DEBATE_OF,
    SPEAKERS,
    AnalystKind,
    AnalystReport,
    DebateTurn,
    ResearchPlan,
    Speaker,
    TraderProposal,
)
from shared.ta.indicator_names import IndicatorByName

MISSING = "missing"
"""The key of the missing reports in the flat JSON (no analyst may be named so)."""

MARKET_INDICATORS: tuple[IndicatorByName, ...] = (
    IndicatorByName.SMA_50,
    IndicatorByName.SMA_200,
    IndicatorByName.EMA_10,
    IndicatorByName.MACD,
    IndicatorByName.MACDS,
    IndicatorByName.MACDH,
    IndicatorByName.RSI,
    IndicatorByName.BOLL_UB,
    IndicatorByName.BOLL_LB,
    IndicatorByName.ATR,
)
"""The market analyst's complementary set: trend, momentum, bands and volatility."""


class AnalystReports(BaseModel):
    """The analysts' reports, each under its analyst's kind, and the ones the run went without.

    A mapping, not a field per analyst, so a new analyst's report travels like the
    others. Its JSON stays flat and readable: ``{"market": {...}, "news": {...},
    "missing": {"social": {...}}}``, each report validated as its analyst's schema.
    ``missing`` says which analysts ran but gave no usable report, and why: every agent
    that reads the reports is told, so an absent report never passes for a quiet one.
    """

    reports: dict[AnalystKind, SerializeAsAny[AnalystReport]] = Field(default_factory=dict)
    missing: dict[AnalystKind, MissingStep] = Field(
        default_factory=dict, description="analysts whose report the run went on without"
    )

    @model_validator(mode="before")
    @classmethod
    def _flat(cls, data: Any) -> Any:
        """The flat JSON (or keyword arguments) read back into ``reports`` by kind."""
        if not isinstance(data, Mapping) or "reports" in data:
            return data
        reports = {}
        for name, report in data.items():
            if name == MISSING or report is None:
                continue
            kind = AnalystKind(name)
            schema = ANALYST_SCHEMAS.get(kind, AnalystReport)
            reports[kind] = report if isinstance(report, schema) else schema.model_validate(report)
        return {"reports": reports, "missing": data.get(MISSING, {})}

    @model_serializer(mode="wrap")
    def _flatten(self, handler: SerializerFunctionWrapHandler) -> dict[str, Any]:
        dumped = handler(self)
        return {**dumped["reports"], MISSING: dumped["missing"]}

    @model_validator(mode="after")
    def _each_under_its_name(self) -> AnalystReports:
        for kind, report in self.reports.items():
            if report.analyst != kind:
                raise ValueError(f"the {report.analyst.value} report was given as {kind.value}")
            if kind in self.missing:
                raise ValueError(f"the {kind.value} report is given and also marked missing")
        return self

    @classmethod
    def of(
        cls,
        reports: Iterable[AnalystReport],
        missing: Mapping[AnalystKind, MissingStep] | None = None,
    ) -> AnalystReports:
        """The reports, each put under its own analyst's kind, and the missing ones."""
        return cls(reports={r.analyst: r for r in reports}, missing=dict(missing or {}))

    def get(self, kind: AnalystKind) -> AnalystReport | None:
        """The report of ``kind``'s analyst; None when it was not run or is missing."""
        return self.reports.get(kind)

    def by_kind(self) -> dict[AnalystKind, AnalystReport]:
        """The reports given, in the analysts' order."""
        return {kind: self.reports[kind] for kind in AnalystKind if kind in self.reports}

    def critical_abort(self) -> AnalystReport | None:
        """The first report that raised a critical abort, if any: the Pipeline's typed route."""
        return next((r for r in self.by_kind().values() if r.critical_abort.flag), None)


class AnalystInputs(BaseModel):
    """An analyst's brief; its data comes from its tools, read as of ``as_of``."""

    symbol: str = Field(min_length=1)
    as_of: AwareDatetime = Field(description="the analysis time; the tools read nothing after it")
    macro_context: str | None = Field(None, description="the Scan's macro summary, if any")
    position: dict[str, Any] | None = Field(None, description="the portfolio's current holding")
    names: list[IndicatorByName] = Field(
        default_factory=lambda: list(MARKET_INDICATORS),
        description="the indicators get_indicators is asked for when the offline engine "
        "calls it (an LLM chooses its own)",
    )


class DebaterInputs(BaseModel):
    """A debater's material: the reports, its debate so far, lessons, and (risk) the proposal."""

    symbol: str = Field(min_length=1)
    reports: AnalystReports
    transcript: list[DebateTurn] = Field(default_factory=list, description="this debate, in order")
    memories: str = Field("", description="reflections from similar past situations")
    proposal: TraderProposal | None = Field(None, description="the risk debate's subject")

    def answering(self, speaker: Speaker) -> list[DebateTurn]:
        """The last turn of each other speaker of ``speaker``'s debate, most recent first."""
        others = set(SPEAKERS[DEBATE_OF[speaker]]) - {speaker}
        latest: dict[Speaker, DebateTurn] = {}
        for turn in reversed(self.transcript):
            if turn.speaker in others:
                latest.setdefault(turn.speaker, turn)
        return list(latest.values())

    def next_round(self, speaker: Speaker) -> int:
        """The round ``speaker`` speaks in now: its own turns so far, plus one."""
        return 1 + sum(1 for turn in self.transcript if turn.speaker is speaker)


class TraderInputs(BaseModel):
    """The trader's material: the research plan, the reports and the price facts for levels."""

    symbol: str = Field(min_length=1)
    reports: AnalystReports
    research_plan: ResearchPlan
    memories: str = ""
    last_price: float | None = Field(None, gt=0, description="the last close the market tools read")
    atr: float | None = Field(None, gt=0, description="average true range, in price units")
    volatility: float | None = Field(None, ge=0, description="stdev of daily close returns")

    @classmethod
    def of(
        cls,
        symbol: str,
        reports: AnalystReports,
        research_plan: ResearchPlan,
        price: PriceFacts | None,
        memories: str = "",
    ) -> TraderInputs:
        """The trader's inputs with the price facts it may use (zero and negatives dropped)."""
        price = price or PriceFacts()
        return cls(
            symbol=symbol,
            reports=reports,
            research_plan=research_plan,
            memories=memories,
            last_price=positive(price.last_close),
            atr=positive(price.atr),
            volatility=price.volatility if price.volatility and price.volatility >= 0 else None,
        )


class ManagerInputs(BaseModel):
    """A manager's material. The research manager judges the bull/bear transcript; the
    portfolio manager the risk transcript, with the plan and the proposal."""

    symbol: str = Field(min_length=1)
    reports: AnalystReports
    transcript: list[DebateTurn] = Field(default_factory=list, description="the judged debate")
    memories: str = ""
    research_plan: ResearchPlan | None = None
    proposal: TraderProposal | None = None
    last_price: float | None = Field(None, gt=0)
    macro_context: str | None = Field(None, description="the Scan's macro summary, if any")
