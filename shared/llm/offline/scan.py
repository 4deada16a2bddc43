"""Offline analysts for the Scan's six agents: rules over their tool results and their inputs.

| agent                  | reads                                                          |
|------------------------|----------------------------------------------------------------|
| geopolitical_scanner   | tool results: get_topic_news, get_global_news                  |
| market_movers_scanner  | tool results: get_market_movers, get_indices                   |
| sector_scanner         | tool results: get_sector_performance                           |
| smart_money_scanner    | tool results: the three screens; ``ScannerInputs.sectors``     |
| industry_deep_dive     | tool results: get_industry_top_companies (one per sector);     |
|                        | ``DeepDiveInputs``: the sectors and the smart-money stocks     |
| macro_synthesis        | tool results: get_macro_series; ``SynthesisInputs``: reports,  |
|                        | sectors, indices, candidates, max_tickers                      |

Every sentence carries the number it rests on; a missing answer is a gap the
report names, never a value. The synthesis scores each candidate from its
signals (``SIGNAL_WEIGHTS``) and its sector's move, derives the thesis angle and
conviction from the same numbers, and marks ``smart_money`` only for a stock a
screen flagged that the evidence supports.
"""

from __future__ import annotations

import statistics
from collections import Counter
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from typing import Any

from pydantic import BaseModel

from shared.agents.pipeline.evidence import banded
from shared.agents.pipeline.facts import unwrap
from shared.agents.pipeline.news_analyst import TONE_BANDS
from shared.agents.scan.facts import (
    Candidate,
    Signal,
    candidates,
    found,
    index_levels,
    screen_tally,
    sector_moves,
    top_sectors,
)
from shared.agents.scan.inputs import DeepDiveInputs, ScannerInputs, SynthesisInputs
from shared.agents.scan.prompts import render_sector_moves
from shared.agents.scan.roles import (
    AGENTS,
    GEOPOLITICAL_SCANNER,
    INDUSTRY_DEEP_DIVE,
    MACRO_SYNTHESIS,
    MARKET_MOVERS_SCANNER,
    SECTOR_SCANNER,
    SMART_MONEY_SCANNER,
)
from shared.agents.scan.schemas import (
    Conviction,
    KeyTheme,
    MacroContext,
    ScannerReport,
    ScanSummary,
    StockToInvestigate,
    ThesisAngle,
)
from shared.data.contracts import (
    IndexLevel,
    IndustryCompany,
    MacroSeries,
    NewsItem,
    Sector,
    SectorPerformance,
)
from shared.errors import InvalidInput
from shared.llm.offline.engine import OfflineAnalyst, OfflineAnswer, register_analyst
from shared.llm.offline.reading import OfflineInput

INF = float("inf")
MAX_LISTED = 6
"""Tickers, risks and headlines a scanner names at most: the synthesis reads them all."""


def _answers(offline: OfflineInput) -> list[tuple[str, Any]]:
    return [(output.name, output.data) for output in offline.tool_outputs if output.ok]


def _gaps(offline: OfflineInput) -> list[str]:
    """Failed calls and "no data" answers: the report names them rather than guess."""
    return [
        f"{output.name}: {output.data}"
        for output in offline.tool_outputs
        if not output.ok or isinstance(unwrap(output.data), str)
    ]


def _unique(items: Sequence[str]) -> list[str]:
    return list(dict.fromkeys(items))


def _pct(fraction: float | None) -> str:
    return "n/a" if fraction is None else f"{fraction:+.1%}"


def _scanner_report(
    title: str,
    headline: str,
    findings: list[str],
    offline: OfflineInput,
    *,
    tickers: Sequence[str] = (),
    risks: Sequence[str] = (),
) -> ScannerReport:
    """A report whose Markdown shows exactly its headline, findings, names, risks and gaps."""
    gaps = _gaps(offline)
    findings = findings or [f"no data: {gap}" for gap in gaps] or ["the tools returned nothing"]
    names, risks = _unique(tickers)[:MAX_LISTED], _unique(risks)[:MAX_LISTED]
    parts = [f"# {title}", f"**{headline}**", "\n".join(f"- {f}" for f in findings)]
    if names:
        parts.append(f"Names worth a look: {', '.join(names)}")
    if risks:
        parts.append("## Risks\n" + "\n".join(f"- {r}" for r in risks))
    if gaps:
        parts.append("## Data gaps\n" + "\n".join(f"- {g}" for g in gaps))
    return ScannerReport(
        headline=headline,
        findings=findings,
        tickers=names,
        risks=risks,
        report_markdown="\n\n".join(parts),
    )


# --- geopolitical scanner ----------------------------------------------------------------

GEOPOLITICAL_TOPICS = frozenset({"geopolitics"})
RISK_TONE = -0.1
"""A geopolitical article at or below this sentiment is a risk the synthesis should weigh."""
MARKET_RISK_TONE = -0.3
"""A non-company world article this negative (energy, inflation...) is a market risk too."""
NEWSWORTHY = 0.5
"""Company news this strong either way makes a name worth a look."""


def _tone(items: Sequence[NewsItem]) -> tuple[float, str] | None:
    scored = [item.sentiment for item in items if item.sentiment is not None]
    if not scored:
        return None
    mean = statistics.fmean(scored)
    return mean, banded(mean, TONE_BANDS)[1]


def _risk_line(item: NewsItem) -> str:
    return f'"{item.title}" ({item.published_at:%Y-%m-%d}, sentiment {item.sentiment:+.2f})'


def geopolitical_report(offline: OfflineInput) -> ScannerReport:
    """The tone of geopolitical and world news, its worst headlines, and news-driven names."""
    inputs = ScannerInputs.model_validate(offline.inputs)
    answers = _answers(offline)
    topic = found(answers, "get_topic_news", NewsItem)
    world = found(answers, "get_global_news", NewsItem)
    items = list({item.id: item for item in [*topic, *world]}.values())
    geo = [i for i in items if i in topic or GEOPOLITICAL_TOPICS & set(i.topics)]
    day = f"{inputs.as_of:%Y-%m-%d}"
    findings, headline = [], f"No geopolitical news in the week to {day}"
    geo_tone = _tone(geo)
    if geo_tone:
        mean, label = geo_tone
        findings.append(
            f"{len(geo)} geopolitical articles in the week to {day}, mean sentiment "
            f"{mean:+.2f} ({label})"
        )
    world_tone = _tone(world)
    if world_tone:
        topics = Counter(t for item in world for t in item.topics).most_common(5)
        findings.append(
            f"world and market news: {len(world)} articles, mean sentiment {world_tone[0]:+.2f} "
            f"({world_tone[1]}); topics {', '.join(f'{t} {n}' for t, n in topics)}"
        )
    scored = sorted((i for i in items if i.sentiment is not None), key=lambda i: i.sentiment or 0.0)
    risky = [i for i in scored if i in geo and (i.sentiment or 0.0) <= RISK_TONE]
    risky += [
        i
        for i in scored
        if i not in geo and "company" not in i.topics and (i.sentiment or 0.0) <= MARKET_RISK_TONE
    ]
    findings += [f"headline {_risk_line(item)}" for item in risky[:3]]
    if geo_tone:
        headline = (
            f"Geopolitical news is {geo_tone[1]} ({len(geo)} articles, mean "
            f"{geo_tone[0]:+.2f}) with {len(risky)} risk headlines"
        )
    loud = sorted(
        (i for i in items if i.symbols and abs(i.sentiment or 0.0) >= NEWSWORTHY),
        key=lambda i: -abs(i.sentiment or 0.0),
    )
    return _scanner_report(
        "Geopolitical scan",
        headline,
        findings,
        offline,
        tickers=[symbol for item in loud for symbol in item.symbols],
        risks=[_risk_line(item) for item in risky],
    )


# --- market movers scanner ---------------------------------------------------------------

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


def _index(levels: Sequence[IndexLevel], symbol: str) -> IndexLevel | None:
    return next((level for level in levels if level.symbol == symbol), None)


def _with(pool: Sequence[Candidate], signal: Signal) -> list[Candidate]:
    return [c for c in pool if signal in c.signals]


def _move(candidate: Candidate) -> str:
    volume = (
        f" on {candidate.relative_volume:.1f}x its usual volume"
        if candidate.relative_volume is not None
        else ""
    )
    return f"{candidate.ticker} {candidate.change_pct or 0.0:+.2f}%{volume}"


def market_movers_report(offline: OfflineInput) -> ScannerReport:
    """Index levels and volatility, breadth of the top lists, and moves on heavy volume."""
    answers = _answers(offline)
    levels = index_levels(answers)
    pool = candidates(answers)
    gainers, losers = _with(pool, Signal.GAINER), _with(pool, Signal.LOSER)
    active = _with(pool, Signal.MOST_ACTIVE)
    findings = [
        f"{i.name} {i.level:.6g}: {i.change_1d_pct or 0.0:+.2f}% on the day, "
        f"{i.change_21d_pct or 0.0:+.2f}% over 21 sessions"
        for i in levels
    ]
    risks = []
    vix = _index(levels, "^VIX")
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
    market = _index(levels, "^GSPC") or (levels[0] if levels else None)
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
        small = _index(levels, "^RUT")
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
    return _scanner_report(
        "Market movers scan", headline, findings, offline, tickers=tickers, risks=risks
    )


# --- sector scanner ------------------------------------------------------------------------

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


def _ranked(moves: Sequence[SectorPerformance]) -> list[SectorPerformance]:
    """Sectors by 21-day return, best first; those without one last."""
    return sorted(moves, key=lambda m: (m.return_21d is None, -(m.return_21d or 0.0)))


def sector_report(offline: OfflineInput) -> ScannerReport:
    """Leaders and laggards over 21 sessions, the rotation, and every sector's returns."""
    moves = sector_moves(_answers(offline))
    ranked = [m for m in _ranked(moves) if m.return_21d is not None]
    findings, headline, risks = [], "No sector data for the session", []
    turn = rotation(moves)
    if ranked:
        lead, lag = ranked[0], ranked[-1]
        headline = (
            f"{lead.sector.value} leads over 21 sessions ({_pct(lead.return_21d)}), "
            f"{lag.sector.value} lags ({_pct(lag.return_21d)})"
            + (f"; {turn.label}" if turn else "")
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
                    f"best over the {label}: {best.sector.value} ({_pct(getattr(best, key))})"
                )
        risks = [
            f"{m.sector.value} ({m.etf}) down {abs(m.return_21d or 0.0):.1%} over 21 sessions"
            for m in reversed(ranked)
            if (m.return_21d or 0.0) <= SECTOR_SLUMP
        ]
        if all((m.return_21d or 0.0) < 0 for m in ranked):
            risks.insert(0, f"all {len(ranked)} sectors fell over 21 sessions: a broad sell-off")
    findings += render_sector_moves(_ranked(moves)).splitlines()
    return _scanner_report(
        "Sector scan",
        headline,
        [line.removeprefix("- ") for line in findings],
        offline,
        tickers=[m.etf for m in top_sectors(moves)],
        risks=risks,
    )


# --- smart-money scanner -------------------------------------------------------------------

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


def smart_money_report(offline: OfflineInput) -> ScannerReport:
    """What each screen found, which flags agree, and which sit in leading sectors."""
    inputs = ScannerInputs.model_validate(offline.inputs)
    answers = _answers(offline)
    pool = candidates(answers)
    findings = []
    for tool, label, signal in SCREENS:
        tally = screen_tally(answers, tool)
        if tally is None:
            continue
        hits = _with(pool, signal)
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
    return _scanner_report(
        "Smart-money scan",
        headline,
        findings,
        offline,
        tickers=[c.ticker for c in ranked],
        risks=risks or ([] if pool else ["no smart-money confirmation of any trend"]),
    )


# --- industry deep dive ----------------------------------------------------------------------

LEADERS_PER_SECTOR = 2
DEEP_FALL = -0.10


def _relative(company: IndustryCompany, move: SectorPerformance) -> float | None:
    if company.return_21d is None or move.return_21d is None:
        return None
    return company.return_21d - move.return_21d


def deep_dive_report(offline: OfflineInput) -> ScannerReport:
    """Each chosen sector's leading companies against their sector, and smart money in them."""
    inputs = DeepDiveInputs.model_validate(offline.inputs)
    companies = found(_answers(offline), "get_industry_top_companies", IndustryCompany)
    flagged = {c.ticker: c for c in inputs.smart_money}
    findings, tickers, risks = [], [], []
    for move in inputs.sectors:
        own = [c for c in companies if c.sector is move.sector]
        label = f"{move.sector.value} ({move.etf} {_pct(move.return_21d)} over 21 sessions)"
        if not own:
            findings.append(f"{label}: no companies were read")
            continue
        by_strength = sorted(own, key=lambda c: -(_relative(c, move) or -INF))
        best, worst = by_strength[0], by_strength[-1]
        largest = max(own, key=lambda c: c.market_cap or 0.0)
        findings.append(
            f"{label}: {len(own)} leading companies; strongest {best.symbol} "
            f"{_pct(best.return_21d)} ({_pct(_relative(best, move))} vs the sector), weakest "
            f"{worst.symbol} {_pct(worst.return_21d)}; largest {largest.symbol} ({largest.industry})"
        )
        smart = [c.symbol for c in own if c.symbol in flagged]
        if smart:
            findings.append(f"smart money flagged {', '.join(smart)} in {move.sector.value}")
        tickers += smart + [c.symbol for c in by_strength[:LEADERS_PER_SECTOR]]
        falling = [c for c in own if (c.return_21d or 0.0) <= DEEP_FALL]
        if (move.return_21d or 0.0) < 0:
            risks.append(
                f"{move.sector.value} fell {abs(move.return_21d or 0.0):.1%} over 21 sessions; "
                f"{len(falling)} of its {len(own)} leaders fell 10% or more"
            )
    top = inputs.sectors[0]
    headline = (
        f"{top.sector.value} moved most ({_pct(top.return_21d)} over 21 sessions); "
        f"names to dig into: {', '.join(_unique(tickers)[:MAX_LISTED]) or 'none'}"
    )
    return _scanner_report(
        "Industry deep dive", headline, findings, offline, tickers=tickers, risks=risks
    )


# --- macro synthesis ---------------------------------------------------------------------


@dataclass(frozen=True)
class Weighted:
    """One fact about a candidate: its weight in the score and its sentence."""

    weight: float
    point: str


SIGNAL_WEIGHTS: dict[Signal, float] = {
    Signal.BREAKOUT: 2.0,
    Signal.INSIDER_BUYING: 2.0,
    Signal.UNUSUAL_VOLUME: 1.5,
    Signal.GAINER: 1.0,
    Signal.INDUSTRY_LEADER: 0.75,
    Signal.MOST_ACTIVE: 0.5,
    Signal.LOSER: -0.5,
}
"""What each signal adds to a candidate's score: the smart-money screens weigh most."""
BIG_INSIDER_BUY = 1_000_000
SECTOR_TAILWIND_SCALE = 10.0
"""A sector 10% up over 21 sessions adds one point; 10% down takes one away."""
STOCK_TREND_SCALE = 5.0
"""A stock 20% ahead of its sector over 21 sessions adds one point; 20% behind takes one."""
HIGH_SCORE, MEDIUM_SCORE = 3.0, 1.5
"""Scores that earn high and medium conviction on their own."""
CORROBORATED_SCORE = 1.0
"""The score at which several independent signals raise conviction one step."""
HOLDS_UP = 0.05
"""Beating a falling sector by 5 points over 21 sessions is a defensive quality."""
TIMEFRAME = "1-3 months"


def _clamp(value: float, bound: float = 1.0) -> float:
    return max(-bound, min(bound, value))


def _evidence(candidate: Candidate, moves: dict[Sector, float | None]) -> list[Weighted]:
    """Each signal's weight and sentence, the stock's own trend and its sector's tailwind."""
    found_: list[Weighted] = []
    for signal in candidate.signals:
        weight = SIGNAL_WEIGHTS[signal]
        if signal is Signal.BREAKOUT:
            point = f"closed {candidate.breakout_pct or 0.0:.2f}% above its 52-week high"
        elif signal is Signal.INSIDER_BUYING:
            value = candidate.insider_buy_value or 0.0
            weight += 0.5 if value >= BIG_INSIDER_BUY else 0.0
            point = f"insiders ({', '.join(candidate.insiders)}) bought ${value:,.0f}"
        elif signal is Signal.UNUSUAL_VOLUME:
            falling = (candidate.change_pct or 0.0) < 0
            weight = 0.25 if falling else weight
            point = (
                f"traded {candidate.relative_volume or 0.0:.1f}x its usual volume, "
                f"{candidate.change_pct or 0.0:+.2f}% on the day"
            )
        elif signal is Signal.GAINER:
            weight += _clamp((candidate.change_pct or 0.0) / 10)
            point = f"gained {candidate.change_pct or 0.0:.2f}% on the last session"
        elif signal is Signal.LOSER:
            point = f"fell {abs(candidate.change_pct or 0.0):.2f}% on the last session"
        elif signal is Signal.MOST_ACTIVE:
            point = "among the most active names of the session"
        else:
            industry = f" ({candidate.industry})" if candidate.industry else ""
            point = f"a leading company of its sector{industry}"
        found_.append(Weighted(weight, point))
    sector_move = moves.get(candidate.sector) if candidate.sector else None
    if candidate.return_21d is not None and sector_move is not None:
        # Relative strength: a stock holding up while its sector falls is what a desk looks at.
        relative = candidate.return_21d - sector_move
        found_.append(
            Weighted(
                _clamp(relative * STOCK_TREND_SCALE),
                f"{_pct(candidate.return_21d)} over 21 sessions, {_pct(relative)} against its "
                "sector",
            )
        )
    if sector_move is not None and candidate.sector is not None:
        found_.append(
            Weighted(
                _clamp(sector_move * SECTOR_TAILWIND_SCALE),
                f"its sector, {candidate.sector.value}, moved {_pct(sector_move)} over 21 sessions",
            )
        )
    return found_


def thesis_angle(candidate: Candidate, risk_off: bool, relative: float | None) -> ThesisAngle:
    """The angle the numbers support, most specific first; ``relative`` is the stock's 21-day
    return minus its sector's."""
    signals = set(candidate.signals)
    down = (candidate.change_pct or 0.0) < 0 or (candidate.return_21d or 0.0) < 0
    if Signal.INSIDER_BUYING in signals and (down or Signal.LOSER in signals):
        return ThesisAngle.TURNAROUND
    if Signal.BREAKOUT in signals or (
        Signal.GAINER in signals and (candidate.return_21d or 0.0) > 0
    ):
        return ThesisAngle.MOMENTUM
    if Signal.INSIDER_BUYING in signals:
        return ThesisAngle.VALUE
    if signals & {Signal.UNUSUAL_VOLUME, Signal.GAINER}:
        return ThesisAngle.CATALYST
    if risk_off and (candidate.sector in DEFENSIVE_SECTORS or (relative or 0.0) >= HOLDS_UP):
        return ThesisAngle.DEFENSIVE
    if (candidate.return_21d or 0.0) > 0:
        return ThesisAngle.GROWTH
    return ThesisAngle.VALUE


def conviction(score: float, signals: int) -> Conviction:
    """From the score; three (two) signals agreeing on a score of at least
    ``CORROBORATED_SCORE`` count as high (medium) too."""
    corroborated = score >= CORROBORATED_SCORE
    if score >= HIGH_SCORE or (signals >= 3 and corroborated):
        return Conviction.HIGH
    if score >= MEDIUM_SCORE or (signals >= 2 and corroborated):
        return Conviction.MEDIUM
    return Conviction.LOW


@dataclass
class Scored:
    """A candidate with its evidence and the score it adds up to."""

    candidate: Candidate
    evidence: list[Weighted] = field(default_factory=list)

    @property
    def score(self) -> float:
        """The sum of the evidence's weights."""
        return sum(item.weight for item in self.evidence)


def fits_thesis(scored: Scored) -> bool:
    """A smart-money flag that fits the thesis: the screen read buying (insiders bought, a
    breakout, or heavy volume on an up day; heavy volume on a down day reads as selling) and
    the evidence as a whole is net positive."""
    candidate = scored.candidate
    signals = set(candidate.signals)
    buying = bool({Signal.INSIDER_BUYING, Signal.BREAKOUT} & signals) or (
        Signal.UNUSUAL_VOLUME in signals and (candidate.change_pct or 0.0) >= 0
    )
    return buying and scored.score > 0


def _stock(scored: Scored, inputs: SynthesisInputs, risk_off: bool) -> StockToInvestigate:
    candidate = scored.candidate
    assert candidate.sector is not None
    good = [item.point for item in scored.evidence if item.weight > 0]
    bad = [item.point for item in scored.evidence if item.weight < 0]
    sector_move = next((m.return_21d for m in inputs.sectors if m.sector is candidate.sector), None)
    relative = (
        candidate.return_21d - sector_move
        if candidate.return_21d is not None and sector_move is not None
        else None
    )
    angle = thesis_angle(candidate, risk_off, relative)
    rationale = (
        f"{candidate.name} ({candidate.ticker}, {candidate.sector.value}): "
        + "; ".join(item.point for item in scored.evidence)
        + f". Score {scored.score:+.2f} from {len(candidate.signals)} scanner signal(s) points "
        f"to a {angle.value} case."
    )
    market = _index(inputs.indices, "^GSPC")
    if market is not None and market.change_21d_pct is not None:
        bad.append(f"market risk: the S&P 500 moved {market.change_21d_pct:+.1f}% over 21 sessions")
    return StockToInvestigate(
        ticker=candidate.ticker,
        name=candidate.name,
        sector=candidate.sector,
        rationale=rationale,
        thesis_angle=angle,
        conviction=conviction(scored.score, len(candidate.signals)),
        key_catalysts=good,
        risks=bad,
        smart_money=fits_thesis(scored),
    )


def shortlist(inputs: SynthesisInputs) -> list[StockToInvestigate]:
    """The best-scoring candidates of known sector, at most ``max_tickers``, net-positive first.

    Only if no candidate scores above zero does the best of the rest stand in: a shortlist is
    never empty, and the rationale shows its score.
    """
    moves = {m.sector: m.return_21d for m in inputs.sectors}
    scored = [Scored(c, _evidence(c, moves)) for c in inputs.candidates if c.sector is not None]
    if not scored:
        raise InvalidInput(
            "candidates",
            "no scanner named a stock of known sector, so there is nothing to shortlist",
            fix="Check that the movers, smart-money and industry tools returned data.",
        )
    scored.sort(key=lambda s: (-s.score, s.candidate.ticker))
    picked = [s for s in scored if s.score > 0][: inputs.max_tickers] or scored[:1]
    turn = rotation(inputs.sectors)
    risk_off = turn is not None and turn.gap > ROTATION_GAP
    return [_stock(s, inputs, risk_off) for s in picked]


MIN_CHANGE = 0.3
"""Points a rate must move over a year to count as a change of direction."""
YEAR = 12


def _yearly(series: MacroSeries | None) -> tuple[float, float] | None:
    """(value a year before the latest, latest) of a monthly series."""
    if series is None or not series.points:
        return None
    points = series.points
    return points[max(0, len(points) - 1 - YEAR)].value, points[-1].value


def economic_cycle(series: dict[str, MacroSeries], market: IndexLevel | None) -> str:
    """The cycle as unemployment's direction over a year says, with the market's month."""
    jobs = _yearly(series.get("UNRATE"))
    tape = (
        f"; the {market.name} moved {market.change_21d_pct:+.1f}% over 21 sessions"
        if market is not None and market.change_21d_pct is not None
        else ""
    )
    if jobs is None:
        return f"unknown: no unemployment data{tape}"
    before, now = jobs
    if now <= before - MIN_CHANGE:
        phase = "expansion: unemployment fell"
    elif now >= before + MIN_CHANGE:
        phase = "slowdown: unemployment rose"
    else:
        phase = "steady: unemployment held"
    return f"{phase} from {before:.1f}% to {now:.1f}% over a year{tape}"


def central_bank_stance(series: dict[str, MacroSeries]) -> str:
    """Easing, tightening or on hold, from the policy rate's year, with core inflation."""
    rate = _yearly(series.get("FEDFUNDS"))
    prices = _yearly(series.get("CPI"))
    inflation = (
        f"; core inflation {prices[1] / prices[0] - 1:.1%} year on year"
        if prices is not None and prices[0] > 0
        else ""
    )
    if rate is None:
        return f"unknown: no policy-rate data{inflation}"
    before, now = rate
    if now >= before + MIN_CHANGE:
        stance = f"tightening: fed funds up from {before:.2f}% to {now:.2f}% over a year"
    elif now <= before - MIN_CHANGE:
        stance = f"easing: fed funds down from {before:.2f}% to {now:.2f}% over a year"
    elif now < 0.25:
        stance = f"on hold at the zero bound: fed funds {now:.2f}%"
    else:
        stance = f"on hold: fed funds {now:.2f}% (a year ago {before:.2f}%)"
    return stance + inflation


MAGNITUDE_BANDS: tuple[tuple[float, Conviction], ...] = (
    (0.02, Conviction.LOW),
    (0.05, Conviction.MEDIUM),
    (INF, Conviction.HIGH),
)
"""A move's size (fraction) and the conviction a theme built on it deserves."""
CONVICTION_ORDER = {Conviction.HIGH: 0, Conviction.MEDIUM: 1, Conviction.LOW: 2}


def key_themes(inputs: SynthesisInputs, stocks: Sequence[StockToInvestigate]) -> list[KeyTheme]:
    """Sector leadership, rotation, the market's month and where smart money clusters."""
    themes = []
    ranked = [m for m in _ranked(inputs.sectors) if m.return_21d is not None]
    if ranked:
        lead, lag = ranked[0], ranked[-1]
        themes.append(
            KeyTheme(
                theme=f"{lead.sector.value} leadership",
                description=f"{lead.sector.value} ({lead.etf}) {_pct(lead.return_21d)} over 21 "
                f"sessions against {lag.sector.value} ({lag.etf}) {_pct(lag.return_21d)}",
                conviction=banded(abs(lead.return_21d or 0.0), MAGNITUDE_BANDS),
                timeframe=TIMEFRAME,
            )
        )
    turn = rotation(inputs.sectors)
    if turn is not None:
        themes.append(
            KeyTheme(
                theme="Risk appetite",
                description=turn.label,
                conviction=banded(abs(turn.gap) * 2, MAGNITUDE_BANDS),
                timeframe=TIMEFRAME,
            )
        )
    market = _index(inputs.indices, "^GSPC")
    if market is not None and market.change_21d_pct is not None:
        month = market.change_21d_pct / 100
        name = (
            "Market correction"
            if month <= CORRECTION_PCT / 100
            else ("Broad rally" if month >= -CORRECTION_PCT / 100 else "Range-bound market")
        )
        themes.append(
            KeyTheme(
                theme=name,
                description=f"{market.name} at {market.level:.6g}, {_pct(month)} over 21 sessions",
                conviction=banded(abs(month), MAGNITUDE_BANDS),
                timeframe="2-6 weeks",
            )
        )
    smart = Counter(s.sector for s in stocks if s.smart_money)
    if smart:
        sector, count = smart.most_common(1)[0]
        themes.append(
            KeyTheme(
                theme=f"Smart money in {sector.value}",
                description=f"{count} shortlisted {sector.value} stock(s) confirmed by the "
                "smart-money screens",
                conviction=Conviction.MEDIUM if count >= 2 else Conviction.LOW,
                timeframe=TIMEFRAME,
            )
        )
    themes.sort(key=lambda t: CONVICTION_ORDER[t.conviction])
    return themes or [
        KeyTheme(
            theme="No clear signal",
            description="the scanners returned too little sector and index data for a theme",
            conviction=Conviction.LOW,
            timeframe=TIMEFRAME,
        )
    ]


RISKS_PER_REPORT = 2


def macro_summary(offline: OfflineInput) -> ScanSummary:
    """The synthesis: macro context from the series, themes, the scored shortlist, risks."""
    inputs = SynthesisInputs.model_validate(offline.inputs)
    series = {s.series: s for s in found(_answers(offline), "get_macro_series", MacroSeries)}
    market = _index(inputs.indices, "^GSPC")
    stocks = shortlist(inputs)
    themes = key_themes(inputs, stocks)
    reports = inputs.reports.given()
    geopolitical = reports.get("geopolitical")
    cycle, bank = economic_cycle(series, market), central_bank_stance(series)
    risk_factors = _unique(
        [
            risk
            for name, report in reports.items()
            if name != "geopolitical"
            for risk in report.risks[:RISKS_PER_REPORT]
        ]
    )
    confirmed = [s.ticker for s in stocks if s.smart_money]
    lead = ", ".join(
        f"{s.ticker} ({s.thesis_angle.value}, {s.conviction.value})" for s in stocks[:3]
    )
    summary = (
        f"As of {inputs.as_of:%Y-%m-%d}: {themes[0].description}. Economy: {cycle}. Central "
        f"bank: {bank}. The shortlist holds {len(stocks)} stock(s), led by {lead}"
        + (f"; smart money confirms {', '.join(confirmed)}." if confirmed else ".")
    )
    return ScanSummary(
        timeframe=TIMEFRAME,
        executive_summary=summary,
        macro_context=MacroContext(
            economic_cycle=cycle,
            central_bank_stance=bank,
            geopolitical_risks=list(geopolitical.risks) if geopolitical else [],
        ),
        key_themes=themes,
        stocks_to_investigate=stocks,
        risk_factors=risk_factors,
    )


# --- registration ------------------------------------------------------------------------

BUILDERS: dict[str, Callable[[OfflineInput], BaseModel]] = {
    GEOPOLITICAL_SCANNER: geopolitical_report,
    MARKET_MOVERS_SCANNER: market_movers_report,
    SECTOR_SCANNER: sector_report,
    SMART_MONEY_SCANNER: smart_money_report,
    INDUSTRY_DEEP_DIVE: deep_dive_report,
    MACRO_SYNTHESIS: macro_summary,
}
"""Every agent of the Scan, by name, with the rules that answer for it offline."""


def _offline(agent: str, build: Callable[[OfflineInput], BaseModel]) -> OfflineAnalyst:
    """``build`` as an offline analyst that writes only its agent's schema."""
    expected = AGENTS[agent].schema_name

    def answer(offline: OfflineInput, schema: str | None) -> OfflineAnswer:
        if schema not in (None, expected):
            raise InvalidInput(
                "response_schema",
                f"the offline {agent} writes {expected}, not {schema!r}",
                fix=f"Ask {agent} for {expected}.",
            )
        result = build(offline)
        return OfflineAnswer(text=result.model_dump_json(), structured=result)

    return answer


for _agent, _build in BUILDERS.items():
    register_analyst(_agent, _offline(_agent, _build))
