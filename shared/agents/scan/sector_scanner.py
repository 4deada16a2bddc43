"""The sector-rotation scanner: its spec, and its offline reading of the sector ETFs."""

from __future__ import annotations

import statistics
from collections.abc import Sequence
from dataclasses import dataclass

from shared.agents.scan.facts import (
    sector_moves,
    top_sectors,
)
from shared.agents.scan.inputs import ScannerInputs
from shared.agents.scan.prompts import (
    render_sector_moves,
)
from shared.agents.scan.reading import pct, scanner_report, scanner_spec, tool_answers
from shared.agents.scan.roles import (
    SECTOR_SCANNER,
    ScannerKind,
)
from shared.agents.scan.schemas import (
    ScannerReport,
)
from shared.agents.spec import AgentSpec
from shared.data.contracts import (
    Sector,
    SectorPerformance,
)
from shared.llm.offline.reading import OfflineInput
from shared.tools.catalog import (
    SECTOR_TOOLS,
)

DEFENSIVE_SECTORS = frozenset(
    {Sector.UTILITIES, Sector.CONSUMER_STAPLES, Sector.HEALTH_CARE, Sector.REAL_ESTATE}
)
"""Sectors money hides in when it fears a downturn; the other seven are the cyclicals."""
ROTATION_GAP = 0.01
"""Defensives beating cyclicals by more than a point over 21 sessions is a risk-off rotation."""
SECTOR_SLUMP = -0.05


@dataclass(frozen=True)
class Rotation:
    """Defensives against cyclicals over 21 sessions."""

    gap: float  # defensive mean minus cyclical mean, fraction
    label: str


def rotation(moves: Sequence[SectorPerformance]) -> Rotation | None:
    """Whether money rotates into defensives (risk-off) or cyclicals (risk-on)."""
    defensive = [
        m.return_21d for m in moves if m.sector in DEFENSIVE_SECTORS and m.return_21d is not None
    ]
    cyclical = [
        m.return_21d
        for m in moves
        if m.sector not in DEFENSIVE_SECTORS and m.return_21d is not None
    ]
    if not defensive or not cyclical:
        return None
    gap = statistics.fmean(defensive) - statistics.fmean(cyclical)
    if gap > ROTATION_GAP:
        label = f"risk-off: defensives beat cyclicals by {gap * 100:.1f} points"
    elif gap < -ROTATION_GAP:
        label = f"risk-on: cyclicals beat defensives by {-gap * 100:.1f} points"
    else:
        label = f"no clear rotation: defensives and cyclicals within {abs(gap) * 100:.1f} points"
    return Rotation(gap, label)


def ranked_sectors(moves: Sequence[SectorPerformance]) -> list[SectorPerformance]:
    """Sectors by 21-day return, best first; those without one last."""
    return sorted(moves, key=lambda m: (m.return_21d is None, -(m.return_21d or 0.0)))


def sector_report(
    spec: AgentSpec[ScannerInputs, ScannerReport], inputs: ScannerInputs, offline: OfflineInput
) -> ScannerReport:
    """Leaders and laggards over 21 sessions, the rotation, and every sector's returns."""
    moves = sector_moves(tool_answers(offline))
    ranked = [m for m in ranked_sectors(moves) if m.return_21d is not None]
    findings, headline, risks = [], "No sector data for the session", []
    turn = rotation(moves)
    if ranked:
        lead, lag = ranked[0], ranked[-1]
        headline = (
            f"{lead.sector.value} leads over 21 sessions ({pct(lead.return_21d)}), "
            f"{lag.sector.value} lags ({pct(lag.return_21d)})" + (f"; {turn.label}" if turn else "")
        )
        if turn:
            findings.append(f"rotation: {turn.label}")
        for label, key in (
            ("day", "return_1d"),
            ("week", "return_5d"),
            ("year to date", "return_ytd"),
        ):
            known = [m for m in moves if getattr(m, key) is not None]
            if known:
                best = max(known, key=lambda m: getattr(m, key))
                findings.append(
                    f"best over the {label}: {best.sector.value} ({pct(getattr(best, key))})"
                )
        risks = [
            f"{m.sector.value} ({m.etf}) down {abs(m.return_21d or 0.0):.1%} over 21 sessions"
            for m in reversed(ranked)
            if (m.return_21d or 0.0) <= SECTOR_SLUMP
        ]
        if all((m.return_21d or 0.0) < 0 for m in ranked):
            risks.insert(0, f"all {len(ranked)} sectors fell over 21 sessions: a broad sell-off")
    findings += render_sector_moves(ranked_sectors(moves)).splitlines()
    return scanner_report(
        "Sector scan",
        headline,
        [line.removeprefix("- ") for line in findings],
        offline,
        tickers=[m.etf for m in top_sectors(moves)],
        risks=risks,
    )


SPEC = scanner_spec(
    ScannerKind.SECTOR,
    SECTOR_SCANNER,
    title="the sector-rotation scanner",
    focus="Read the 11 SPDR sector ETFs' 1-day, 5-day, 21-day and year-to-date returns: which "
    "sectors lead and lag, and whether money rotates into defensives (utilities, staples, "
    "health care, real estate) or into cyclicals.",
    tools=SECTOR_TOOLS,
    rule=sector_report,
)
