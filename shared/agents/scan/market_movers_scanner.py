"""The market-movers scanner: its spec, and its offline reading of movers and indices."""

from __future__ import annotations

import statistics
from collections.abc import Sequence

from shared.agents.pipeline.evidence import banded
from shared.agents.scan.facts import (
    Candidate,
    Signal,
    candidates,
    index_levels,
)
from shared.agents.scan.inputs import ScannerInputs
from shared.agents.scan.reading import INF, scanner_report, scanner_spec, tool_answers
from shared.agents.scan.roles import (
    MARKET_MOVERS_SCANNER,
    ScannerKind,
)
from shared.agents.scan.schemas import (
    ScannerReport,
)
from shared.agents.spec import AgentSpec
from shared.data.contracts import (
    IndexLevel,
)
from shared.llm.offline.reading import OfflineInput
from shared.tools.catalog import (
    MOVERS_TOOLS,
)

VIX_BANDS: tuple[tuple[float, str], ...] = (
    (15.0, "calm"),
    (20.0, "normal"),
    (30.0, "elevated"),
    (INF, "stressed"),
)
ELEVATED_VIX = 20.0
CORRECTION_PCT = -5.0
"""An index down this much over 21 sessions is in a correction."""
HEAVY_VOLUME = 2.0
"""Volume this many times the 20-session average marks a move that mattered."""
SMALL_CAP_LAG = 2.0
"""Points of 21-day underperformance of the Russell 2000 that say breadth is narrowing."""


def index_named(levels: Sequence[IndexLevel], symbol: str) -> IndexLevel | None:
    return next((level for level in levels if level.symbol == symbol), None)


def with_signal(pool: Sequence[Candidate], signal: Signal) -> list[Candidate]:
    return [c for c in pool if signal in c.signals]


def _move(candidate: Candidate) -> str:
    volume = (
        f" on {candidate.relative_volume:.1f}x its usual volume"
        if candidate.relative_volume is not None
        else ""
    )
    return f"{candidate.ticker} {candidate.change_pct or 0.0:+.2f}%{volume}"


def market_movers_report(
    spec: AgentSpec[ScannerInputs, ScannerReport], inputs: ScannerInputs, offline: OfflineInput
) -> ScannerReport:
    """Index levels and volatility, breadth of the top lists, and moves on heavy volume."""
    answers = tool_answers(offline)
    levels = index_levels(answers)
    pool = candidates(answers)
    gainers, losers = with_signal(pool, Signal.GAINER), with_signal(pool, Signal.LOSER)
    active = with_signal(pool, Signal.MOST_ACTIVE)
    findings = [
        f"{i.name} {i.level:.6g}: {i.change_1d_pct or 0.0:+.2f}% on the day, "
        f"{i.change_21d_pct or 0.0:+.2f}% over 21 sessions"
        for i in levels
    ]
    risks = []
    vix = index_named(levels, "^VIX")
    if vix is not None:
        band = banded(vix.level, VIX_BANDS)
        findings.append(f"VIX {vix.level:.1f}: volatility is {band}")
        if vix.level >= ELEVATED_VIX:
            risks.append(f"VIX at {vix.level:.1f}: volatility is {band}")
    if gainers or losers:
        best = f" (best {_move(gainers[0])})" if gainers else ""
        worst = f" (worst {_move(losers[0])})" if losers else ""
        findings.append(f"top lists: {len(gainers)} gainers{best}, {len(losers)} losers{worst}")
    if active:
        mean = statistics.fmean(c.change_pct or 0.0 for c in active)
        findings.append(f"the {len(active)} most active names moved {mean:+.2f}% on average")
    heavy = [c for c in pool if (c.relative_volume or 0.0) >= HEAVY_VOLUME]
    findings += [f"{_move(c)}" for c in heavy[:3]]
    risks += [
        f"{c.ticker} fell {abs(c.change_pct or 0.0):.2f}% on {c.relative_volume:.1f}x its "
        "usual volume: selling pressure"
        for c in losers
        if (c.relative_volume or 0.0) >= HEAVY_VOLUME
    ]
    market = index_named(levels, "^GSPC") or (levels[0] if levels else None)
    headline = "No index data for the session"
    if market is not None:
        month = market.change_21d_pct or 0.0
        tone = f", VIX {vix.level:.1f} ({banded(vix.level, VIX_BANDS)})" if vix else ""
        headline = (
            f"{market.name} {month:+.1f}% over 21 sessions and "
            f"{market.change_1d_pct or 0.0:+.1f}% on the day{tone}"
        )
        if month <= CORRECTION_PCT:
            risks.insert(0, f"{market.name} down {abs(month):.1f}% over 21 sessions: a correction")
        small = index_named(levels, "^RUT")
        if (
            small
            and (market.change_21d_pct or 0.0) - (small.change_21d_pct or 0.0) >= SMALL_CAP_LAG
        ):
            risks.append(
                f"small caps lag: Russell 2000 {small.change_21d_pct or 0.0:+.1f}% vs "
                f"{market.name} {month:+.1f}% over 21 sessions"
            )
    # Gainers on heavy volume first: a rise that big money joined.
    ranked = sorted(
        gainers, key=lambda c: ((c.relative_volume or 0.0) < HEAVY_VOLUME, -(c.change_pct or 0.0))
    )
    tickers = [c.ticker for c in ranked] + [c.ticker for c in active if (c.change_pct or 0.0) > 0]
    return scanner_report(
        "Market movers scan", headline, findings, offline, tickers=tickers, risks=risks
    )


SPEC = scanner_spec(
    ScannerKind.MARKET_MOVERS,
    MARKET_MOVERS_SCANNER,
    title="the market-movers scanner",
    focus="Read the last session's top gainers, losers and most active stocks and the major "
    "indices (S&P 500, Dow, NASDAQ, VIX, Russell 2000): breadth, leadership, volatility, "
    "and who moved on unusual volume.",
    tools=MOVERS_TOOLS,
    rule=market_movers_report,
)
