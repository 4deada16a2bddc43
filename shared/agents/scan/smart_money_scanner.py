"""The smart-money scanner: its spec, and its offline reading of the three screens against
the leading sectors."""

from __future__ import annotations

import statistics
from collections.abc import Sequence

from shared.agents.scan.facts import (
    Candidate,
    Signal,
    candidates,
    screen_tally,
)
from shared.agents.scan.inputs import ScannerInputs
from shared.agents.scan.market_movers_scanner import with_signal
from shared.agents.scan.reading import scanner_report, scanner_spec, tool_answers
from shared.agents.scan.roles import (
    SMART_MONEY_SCANNER,
    ScannerKind,
)
from shared.agents.scan.schemas import (
    ScannerReport,
)
from shared.agents.spec import AgentSpec
from shared.data.contracts import (
    SectorPerformance,
)
from shared.llm.offline.reading import OfflineInput
from shared.tools.catalog import (
    SMART_MONEY_TOOLS,
)

SCREENS: tuple[tuple[str, str, Signal], ...] = (
    ("screen_unusual_volume", "unusual volume", Signal.UNUSUAL_VOLUME),
    ("screen_insider_buying", "insider buying", Signal.INSIDER_BUYING),
    ("screen_52_week_high_breakouts", "52-week-high breakouts", Signal.BREAKOUT),
)
"""(tool, what it finds, the signal its rows carry)."""


def _median_move(moves: Sequence[SectorPerformance]) -> float | None:
    known = [m.return_21d for m in moves if m.return_21d is not None]
    return statistics.median(known) if known else None


def _in_leading_sector(candidate: Candidate, moves: Sequence[SectorPerformance]) -> bool:
    """Whether the stock's sector moved at least as well as the median sector over 21 sessions."""
    median = _median_move(moves)
    move = next((m.return_21d for m in moves if m.sector is candidate.sector), None)
    return median is not None and move is not None and move >= median


def _flag_line(candidate: Candidate) -> str:
    facts = []
    if candidate.relative_volume is not None:
        facts.append(f"{candidate.relative_volume:.2f}x volume")
    if candidate.change_pct is not None:
        facts.append(f"{candidate.change_pct:+.2f}% on the day")
    if candidate.insider_buy_value is not None:
        facts.append(
            f"insiders bought ${candidate.insider_buy_value:,.0f} ({', '.join(candidate.insiders)})"
        )
    if candidate.breakout_pct is not None:
        facts.append(f"{candidate.breakout_pct:.2f}% above its 52-week high")
    sector = candidate.sector.value if candidate.sector else "sector unknown"
    return f"{candidate.ticker} ({sector}): {', '.join(facts)}"


def smart_money_report(
    spec: AgentSpec[ScannerInputs, ScannerReport], inputs: ScannerInputs, offline: OfflineInput
) -> ScannerReport:
    """What each screen found, which flags agree, and which sit in leading sectors."""
    answers = tool_answers(offline)
    pool = candidates(answers)
    findings = []
    for tool, label, signal in SCREENS:
        tally = screen_tally(answers, tool)
        if tally is None:
            continue
        hits = with_signal(pool, signal)
        top = f"; top {_flag_line(hits[0])}" if hits else ""
        findings.append(
            f"{label}: {tally.passed} of {tally.screened} stocks passed "
            f"({tally.without_data} without data){top}"
        )
    several = [c for c in pool if len(c.signals) > 1]
    findings += [f"flagged by {len(c.signals)} screens: {_flag_line(c)}" for c in several]
    leading = [c for c in pool if _in_leading_sector(c, inputs.sectors)]
    median = _median_move(inputs.sectors)
    if pool and median is not None:
        findings.append(
            f"{len(leading)} of {len(pool)} flagged stocks sit in sectors at or above the median "
            f"21-day move ({median:+.1%})"
            + (f": {', '.join(c.ticker for c in leading)}" if leading else "")
        )
    ranked = sorted(
        pool,
        key=lambda c: (
            c not in leading,
            -len(c.signals),
            Signal.INSIDER_BUYING not in c.signals and Signal.BREAKOUT not in c.signals,
            -(c.change_pct or 0.0),
        ),
    )
    risks = [
        f"{c.ticker} traded {c.relative_volume:.1f}x its usual volume while falling "
        f"{abs(c.change_pct or 0.0):.2f}%: possible distribution"
        for c in pool
        if Signal.UNUSUAL_VOLUME in c.signals and (c.change_pct or 0.0) < 0
    ]
    headline = (
        f"{len(pool)} stocks flagged by the smart-money screens, {len(leading)} in leading sectors"
        if pool
        else "No stock passed the smart-money screens: no confirmation from informed money"
    )
    return scanner_report(
        "Smart-money scan",
        headline,
        findings,
        offline,
        tickers=[c.ticker for c in ranked],
        risks=risks or ([] if pool else ["no smart-money confirmation of any trend"]),
    )


SPEC = scanner_spec(
    ScannerKind.SMART_MONEY,
    SMART_MONEY_SCANNER,
    title="the smart-money scanner",
    focus="Run the smart-money screens (unusual volume, insider buying, 52-week-high "
    "breakouts) and say which flagged stocks sit in the sectors the sector scanner found "
    "leading: there informed money agrees with the trend.",
    tools=SMART_MONEY_TOOLS,
    rule=smart_money_report,
)
