"""The macro synthesis: its spec, and the offline rules that score every candidate and
write the Scan's summary.

The synthesis scores each candidate from its signals (``SIGNAL_WEIGHTS``) and its
sector's move, derives the thesis angle and conviction from the same numbers, and
marks ``smart_money`` only for a stock a screen flagged that the evidence supports.
"""

from __future__ import annotations

from collections import Counter
from collections.abc import Sequence
from dataclasses import dataclass, field

from shared.agents.pipeline.evidence import banded
from shared.agents.scan.facts import (
    Candidate,
    Signal,
    found,
)
from shared.agents.scan.inputs import SynthesisInputs
from shared.agents.scan.market_movers_scanner import CORRECTION_PCT, index_named
from shared.agents.scan.prompts import (
    report_json,
    synthesis_prompt,
)
from shared.agents.scan.reading import INF, pct, tool_answers, unique
from shared.agents.scan.roles import (
    MACRO_SYNTHESIS,
    SYNTHESIS,
)
from shared.agents.scan.schemas import (
    Conviction,
    KeyTheme,
    MacroContext,
    ScanSummary,
    StockToInvestigate,
    ThesisAngle,
)
from shared.agents.scan.sector_scanner import (
    DEFENSIVE_SECTORS,
    ROTATION_GAP,
    ranked_sectors,
    rotation,
)
from shared.agents.spec import AgentSpec
from shared.data.contracts import (
    IndexLevel,
    MacroSeries,
    Sector,
)
from shared.errors import InvalidInput
from shared.llm.offline.reading import OfflineInput
from shared.llm.providers import LlmRole
from shared.tools.catalog import (
    MACRO_TOOLS,
)


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
                f"{pct(candidate.return_21d)} over 21 sessions, {pct(relative)} against its sector",
            )
        )
    if sector_move is not None and candidate.sector is not None:
        found_.append(
            Weighted(
                _clamp(sector_move * SECTOR_TAILWIND_SCALE),
                f"its sector, {candidate.sector.value}, moved {pct(sector_move)} over 21 sessions",
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
    market = index_named(inputs.indices, "^GSPC")
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
    ranked = [m for m in ranked_sectors(inputs.sectors) if m.return_21d is not None]
    if ranked:
        lead, lag = ranked[0], ranked[-1]
        themes.append(
            KeyTheme(
                theme=f"{lead.sector.value} leadership",
                description=f"{lead.sector.value} ({lead.etf}) {pct(lead.return_21d)} over 21 "
                f"sessions against {lag.sector.value} ({lag.etf}) {pct(lag.return_21d)}",
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
    market = index_named(inputs.indices, "^GSPC")
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
                description=f"{market.name} at {market.level:.6g}, {pct(month)} over 21 sessions",
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


def macro_summary(
    spec: AgentSpec[SynthesisInputs, ScanSummary], inputs: SynthesisInputs, offline: OfflineInput
) -> ScanSummary:
    """The synthesis: macro context from the series, themes, the scored shortlist, risks."""
    series = {s.series: s for s in found(tool_answers(offline), "get_macro_series", MacroSeries)}
    market = index_named(inputs.indices, "^GSPC")
    stocks = shortlist(inputs)
    themes = key_themes(inputs, stocks)
    reports = inputs.reports.given()
    geopolitical = reports.get("geopolitical")
    cycle, bank = economic_cycle(series, market), central_bank_stance(series)
    risk_factors = unique(
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


SPEC: AgentSpec[SynthesisInputs, ScanSummary] = AgentSpec(
    name=MACRO_SYNTHESIS,
    group=SYNTHESIS,
    llm_role=LlmRole.DEEP,
    inputs=SynthesisInputs,
    output=ScanSummary,
    title="the chief macro strategist",
    brief="Write the macro synthesis as of {as_of}: the timeframe of your "
    "view, an executive summary, the macro context (economic cycle, central bank stance, "
    "geopolitical risks), the key themes with their conviction and timeframe, then at most "
    "{max_tickers} stocks to investigate, best first. Each stock needs its GICS "
    "sector exactly as the data spells it, a rationale with numbers, a thesis angle "
    "(growth, value, catalyst, turnaround, defensive or momentum), a conviction (high, "
    "medium or low), catalysts and risks. Choose only among the candidates below, which "
    "exist in the data as of the scan; set smart_money to true only for a stock a "
    "smart-money screen flagged that fits your macro thesis. End with the risk factors. "
    "The macro series {series} are read for you first; your tools can read more.",
    prompt=synthesis_prompt,
    offline=macro_summary,
    as_text=report_json,
    tools=MACRO_TOOLS,
)
