"""The facts in the scanners' tool results, read back into typed records.

The workflow needs some of them to route the graph (the sector moves that pick
the deep dive's sectors, in code, not by a model) and to brief the synthesis
(the stocks every scanner saw, with their numbers); the offline analysts need
all of them. Both read them here, so what the workflow routes on and what an
analyst reasons from are the same numbers. A tool called several times (the deep
dive's three sectors) keeps every answer; nothing missing is filled in.
"""

from __future__ import annotations

import json
from collections.abc import Iterable, Sequence
from enum import StrEnum
from typing import Any, TypeVar

from pydantic import BaseModel, Field

from shared.agents.pipeline.facts import records, unwrap
from shared.data.contracts import (
    IndexLevel,
    IndustryCompany,
    Mover,
    Sector,
    SectorPerformance,
)
from shared.llm.contracts import ToolResult
from shared.tools.screens import Breakout, InsiderBuying, VolumeSpike

R = TypeVar("R", bound=BaseModel)

Answers = Sequence[tuple[str, Any]]
"""(tool name, parsed answer) of every successful call, in call order."""

DEEP_DIVE_SECTORS = 3
"""The fork's deep dive looks at the three sectors that moved most over a month."""


def answers_of_results(results: Iterable[ToolResult]) -> list[tuple[str, Any]]:
    """The successful results of a tool loop as ``Answers`` (what a workflow holds)."""
    found = []
    for result in results:
        if result.ok:
            try:
                found.append((result.name, json.loads(result.content)))
            except json.JSONDecodeError:
                found.append((result.name, result.content))
    return found


def _payloads(answers: Answers, tool: str) -> list[Any]:
    return [unwrap(answer) for name, answer in answers if name == tool]


def found(answers: Answers, tool: str, model: type[R], key: str | None = None) -> list[R]:
    """Every valid ``model`` record in every answer of ``tool`` (under ``key`` of a dict
    answer, e.g. a screen's ``rows``); preview markers and malformed items are skipped."""
    rows: list[R] = []
    for payload in _payloads(answers, tool):
        if key is not None:
            payload = payload.get(key, []) if isinstance(payload, dict) else []
        rows += records(payload, model)
    return rows


class ScreenTally(BaseModel):
    """How a screen's universe fared: looked at, without data, passed."""

    tool: str
    screened: int
    without_data: int
    passed: int


def screen_tally(answers: Answers, tool: str) -> ScreenTally | None:
    """The counts of the last answer of screen ``tool``; None if it was not run."""
    tallies = [
        ScreenTally.model_validate({**payload, "tool": tool})
        for payload in _payloads(answers, tool)
        if isinstance(payload, dict) and {"screened", "without_data", "passed"} <= set(payload)
    ]
    return tallies[-1] if tallies else None


def sector_moves(answers: Answers) -> list[SectorPerformance]:
    """The sector ETFs' returns the sector scanner read, one per sector (the last answer wins)."""
    moves = found(answers, "get_sector_performance", SectorPerformance)
    return list({move.sector: move for move in moves}.values())


def top_sectors(
    moves: Sequence[SectorPerformance], count: int = DEEP_DIVE_SECTORS
) -> list[SectorPerformance]:
    """The ``count`` sectors with the largest absolute 21-day move, largest first.

    Sectors without a 21-day return are left out; ties go to the sector name so the
    choice never depends on the order a vendor listed them in.
    """
    known = [move for move in moves if move.return_21d is not None]
    known.sort(key=lambda move: (-abs(move.return_21d or 0.0), move.sector.value))
    return known[:count]


def index_levels(answers: Answers) -> list[IndexLevel]:
    """The index levels the movers scanner read."""
    return found(answers, "get_indices", IndexLevel)


class Signal(StrEnum):
    """Why a scanner named a stock."""

    GAINER = "gainer"
    LOSER = "loser"
    MOST_ACTIVE = "most_active"
    UNUSUAL_VOLUME = "unusual_volume"
    INSIDER_BUYING = "insider_buying"
    BREAKOUT = "52_week_high_breakout"
    INDUSTRY_LEADER = "industry_leader"


SMART_MONEY_SIGNALS: frozenset[Signal] = frozenset(
    {Signal.UNUSUAL_VOLUME, Signal.INSIDER_BUYING, Signal.BREAKOUT}
)
"""The signals of the smart-money screens: only these may mark a stock ``smart_money``."""


class Candidate(BaseModel):
    """A stock some scanner named, with every number the scanners gave about it."""

    ticker: str
    name: str
    sector: Sector | None = Field(None, description="None when no tool that named it said")
    industry: str | None = None
    signals: list[Signal] = Field(default_factory=list, description="in the order found")
    last: float | None = Field(None, description="last close")
    change_pct: float | None = Field(None, description="last session's change, %")
    relative_volume: float | None = Field(None, description="last volume / 20-session average")
    return_21d: float | None = Field(None, description="fraction, 0.05 = +5%")
    market_cap: float | None = None
    insider_buy_value: float | None = Field(None, description="dollars bought by insiders")
    insiders: list[str] = Field(default_factory=list)
    breakout_pct: float | None = Field(None, description="% above the prior 52-week high")

    @property
    def smart_money(self) -> bool:
        """Whether a smart-money screen flagged it."""
        return any(signal in SMART_MONEY_SIGNALS for signal in self.signals)


def _mover_facts(mover: Mover) -> dict[str, Any]:
    return {
        "name": mover.name,
        "last": mover.last,
        "change_pct": mover.change_pct,
        "relative_volume": mover.relative_volume,
    }


def _sightings(answers: Answers) -> list[tuple[str, Signal, dict[str, Any]]]:
    """(ticker, signal, facts) for every stock every tool named, in call order."""
    seen: list[tuple[str, Signal, dict[str, Any]]] = []
    movers = _payloads(answers, "get_market_movers")
    for payload in movers:
        for key, signal in (
            ("gainers", Signal.GAINER),
            ("losers", Signal.LOSER),
            ("most_active", Signal.MOST_ACTIVE),
        ):
            rows = payload.get(key, []) if isinstance(payload, dict) else []
            seen += [(m.symbol, signal, _mover_facts(m)) for m in records(rows, Mover)]
    for spike in found(answers, "screen_unusual_volume", VolumeSpike, "rows"):
        facts = spike.model_dump(include={"name", "sector", "change_pct", "relative_volume"})
        seen.append((spike.symbol, Signal.UNUSUAL_VOLUME, {**facts, "last": spike.close}))
    for buying in found(answers, "screen_insider_buying", InsiderBuying, "rows"):
        facts = {
            "name": buying.name,
            "sector": buying.sector,
            "insider_buy_value": buying.buy_value,
            "insiders": buying.insiders,
        }
        seen.append((buying.symbol, Signal.INSIDER_BUYING, facts))
    for breakout in found(answers, "screen_52_week_high_breakouts", Breakout, "rows"):
        facts = breakout.model_dump(include={"name", "sector", "change_pct", "relative_volume"})
        facts |= {"last": breakout.close, "breakout_pct": breakout.pct_above}
        seen.append((breakout.symbol, Signal.BREAKOUT, facts))
    for company in found(answers, "get_industry_top_companies", IndustryCompany):
        facts = company.model_dump(
            include={"name", "sector", "industry", "market_cap", "return_21d"}
        )
        seen.append((company.symbol, Signal.INDUSTRY_LEADER, facts))
    return seen


def candidates(answers: Answers) -> list[Candidate]:
    """Every stock the movers, smart-money and industry tools named, merged by ticker in the
    order first seen; each fact comes from the first tool that gave it."""
    merged: dict[str, dict[str, Any]] = {}
    for ticker, signal, facts in _sightings(answers):
        row = merged.setdefault(ticker, {"ticker": ticker, "signals": []})
        if signal not in row["signals"]:
            row["signals"].append(signal)
        for name, value in facts.items():
            if value is not None and value != [] and row.get(name) is None:
                row[name] = value
    return [Candidate.model_validate(row) for row in merged.values()]


def flagged(pool: Iterable[Candidate]) -> list[str]:
    """The tickers a smart-money screen flagged, in pool order."""
    return [candidate.ticker for candidate in pool if candidate.smart_money]
