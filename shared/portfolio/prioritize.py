"""Rank the candidates for the PM: the fork's score, computed from typed fields.

A candidate is a stock of the Scan's shortlist, or a watched name that reached the
Portfolio with a Pipeline decision alone (``WatchedName``): it has no Scan thesis, so
its conviction is its Pipeline rating's and its thesis weight the middle one.

score = conviction (high 3, medium 2, low 1)
      × thesis weight (growth 3, momentum 2.5, catalyst 2.5, value 2, turnaround 1.5, defensive 1;
        2 for a watched name, which has none)
      × diversification (0 when the sector is at its cap, 0.5 above 70% of it, 1 when the book
        already holds the sector, 2 for a new one)
      × 0.5 when the book already holds the stock
      × the memory gate: 0.5 when a past PM lesson on this ticker, from a situation at least
        ``MEMORY_GATE_SCORE`` similar, lost against the benchmark.

Sectors are the data layer's GICS sectors (the Scan's own label only when the
data has none). The gate's threshold is a normalised BM25 score
(``shared.memory.retrieval``): 0.4 is where situations sharing their salient
terms start; one shared common word scores about 0.1, which must not count.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence

from pydantic import AwareDatetime, BaseModel, Field

from shared.agents.pipeline.schemas import Rating
from shared.agents.scan.schemas import Conviction, StockToInvestigate, ThesisAngle
from shared.data.contracts import Sector
from shared.portfolio.limits import Limits, sector_bucket
from shared.portfolio.models import from_fields
from shared.portfolio.valuation import Valuation

CONVICTION_POINTS: dict[Conviction, float] = {
    Conviction.HIGH: 3.0,
    Conviction.MEDIUM: 2.0,
    Conviction.LOW: 1.0,
}
THESIS_WEIGHTS: dict[ThesisAngle, float] = {
    ThesisAngle.GROWTH: 3.0,
    ThesisAngle.MOMENTUM: 2.5,
    ThesisAngle.CATALYST: 2.5,
    ThesisAngle.VALUE: 2.0,
    ThesisAngle.TURNAROUND: 1.5,
    ThesisAngle.DEFENSIVE: 1.0,
}
NO_THESIS_WEIGHT = 2.0
"""A watched name has no Scan thesis: the middle weight neither favours nor buries it."""
CONVICTION_OF_RATING: dict[Rating, Conviction] = {
    Rating.BUY: Conviction.HIGH,
    Rating.OVERWEIGHT: Conviction.MEDIUM,
    Rating.HOLD: Conviction.LOW,
    Rating.UNDERWEIGHT: Conviction.LOW,
    Rating.SELL: Conviction.LOW,
}
"""A watched name's conviction: its Pipeline's rating, the only judgement it has."""
NEAR_CAP = 0.7
"""Above this share of the sector cap a sector only half-counts as room to diversify."""
HELD_PENALTY = 0.5
MEMORY_GATE_SCORE = 0.4
MEMORY_PENALTY = 0.5


class LessonMatch(BaseModel):
    """The closest past PM lesson on a ticker, as the memory recalled it."""

    score: float = Field(ge=0, le=1, description="normalised BM25 similarity of the situations")
    alpha: float = Field(description="what that decision earned over the benchmark")
    lesson: str
    as_of: AwareDatetime


class WatchedName(BaseModel):
    """A candidate known by its Pipeline decision alone (a watchlist's name, not on the
    Scan's shortlist): scored like a Scan stock from the fields it has."""

    ticker: str
    name: str
    sector: Sector | None = Field(None, description="none of its own: the data layer's counts")
    rationale: str
    thesis_angle: None = None
    conviction: Conviction
    key_catalysts: list[str] = Field(default_factory=list)
    risks: list[str] = Field(default_factory=list)
    smart_money: bool = False

    @classmethod
    def of_rating(cls, ticker: str, rating: Rating, summary: str) -> WatchedName:
        """A watched name at the conviction its Pipeline's rating gives it."""
        return cls(
            ticker=ticker,
            name=ticker,
            rationale=f"watched; its Pipeline rates it {rating.value}: {summary}",
            conviction=CONVICTION_OF_RATING[rating],
        )


Idea = StockToInvestigate | WatchedName
"""What a candidate is scored from."""


class ScoredCandidate(BaseModel):
    """A candidate with its score, each factor of it, and the reasons in words."""

    ticker: str
    name: str
    sector: Sector | None = Field(description="the data layer's sector (the Scan's if it has none)")
    thesis_angle: ThesisAngle | None = Field(description="None: a watched name, no Scan thesis")
    conviction: Conviction
    rationale: str
    key_catalysts: list[str]
    risks: list[str]
    smart_money: bool
    held: bool
    score: float
    factors: dict[str, float]
    reasons: list[str]
    lesson: LessonMatch | None = None

    @property
    def angle(self) -> str:
        """The thesis angle in a word ("watched" for a name without a Scan thesis)."""
        return self.thesis_angle.value if self.thesis_angle else "watched"


class Prioritized(BaseModel):
    """Every candidate, best first, and those scored out."""

    ranked: list[ScoredCandidate] = Field(description="positive scores, best first")
    dropped: list[ScoredCandidate] = Field(description="score 0: a sector at its cap")


def situation_of(stock: Idea) -> str:
    """The text a candidate's past lessons are matched on."""
    return " ".join(
        [
            stock.ticker,
            *([stock.thesis_angle.value] if stock.thesis_angle else []),
            stock.rationale,
            *stock.key_catalysts,
            *stock.risks,
        ]
    )


def diversification(
    bucket: str | None, weights: Mapping[str | None, float], limits: Limits
) -> tuple[float, str]:
    """The factor for adding to ``bucket`` given the book's weight per bucket, and why."""
    weight, cap = weights.get(bucket, 0.0), limits.max_sector_weight
    if bucket is None:
        return 1.0, "a cash equivalent: no sector"
    if weight >= cap:
        return 0.0, f"{bucket} is at its {cap:.0%} cap ({weight:.1%} of the book)"
    if weight > NEAR_CAP * cap:
        return 0.5, f"{bucket} is near its {cap:.0%} cap ({weight:.1%} of the book)"
    if weight > 0:
        return 1.0, f"the book already holds {bucket} ({weight:.1%})"
    return 2.0, f"{bucket} is a new sector for the book"


def _memory_gate(lesson: LessonMatch | None) -> tuple[float, str | None]:
    if lesson is None:
        return 1.0, None
    when = lesson.as_of.date().isoformat()
    if lesson.score < MEMORY_GATE_SCORE:
        return 1.0, None
    if lesson.alpha < 0:
        return MEMORY_PENALTY, (
            f"a similar set-up ({lesson.score:.2f} similar, {when}) lost {lesson.alpha:+.1%} "
            f"against the benchmark: {lesson.lesson}"
        )
    return 1.0, f"a similar set-up ({lesson.score:.2f} similar, {when}) earned {lesson.alpha:+.1%}"


def score_candidate(
    stock: Idea,
    sector: Sector | None,
    weights: Mapping[str | None, float],
    held: bool,
    limits: Limits,
    lesson: LessonMatch | None = None,
) -> ScoredCandidate:
    """One candidate's score with every factor and its reason."""
    reasons = []
    if sector is None and stock.sector is not None:
        sector = stock.sector
        reasons.append(f"the data layer has no sector for {stock.ticker}: using the Scan's")
    elif sector is not None and stock.sector is not None and sector is not stock.sector:
        reasons.append(f"the data layer classifies it {sector.value}, not {stock.sector.value}")
    spread, why = diversification(sector_bucket(stock.ticker, sector), weights, limits)
    reasons.append(why)
    gate, remembered = _memory_gate(lesson)
    if remembered:
        reasons.append(remembered)
    if held:
        reasons.append(f"already held: × {HELD_PENALTY}")
    factors = {
        "conviction": CONVICTION_POINTS[stock.conviction],
        "thesis": THESIS_WEIGHTS[stock.thesis_angle] if stock.thesis_angle else NO_THESIS_WEIGHT,
        "diversification": spread,
        "held": HELD_PENALTY if held else 1.0,
        "memory": gate,
    }
    score = 1.0
    for factor in factors.values():
        score *= factor
    return from_fields(
        ScoredCandidate,
        stock,
        sector=sector,
        held=held,
        score=round(score, 6),
        factors=factors,
        reasons=reasons,
        lesson=lesson,
    )


def bucket_weights(valuation: Valuation) -> dict[str | None, float]:
    """The book's weight per sector bucket (None: cash equivalents)."""
    weights: dict[str | None, float] = {}
    for p in valuation.positions:
        bucket = sector_bucket(p.symbol, p.sector)
        weights[bucket] = weights.get(bucket, 0.0) + p.weight
    return weights


def prioritize(
    stocks: Sequence[Idea],
    valuation: Valuation,
    sectors: Mapping[str, Sector | None],
    limits: Limits,
    lessons: Mapping[str, LessonMatch | None] | None = None,
) -> Prioritized:
    """Every candidate scored and ranked; how many the PM reads in full is the view's
    business (``shared.agents.portfolio.view``), which knows the context window."""
    weights = bucket_weights(valuation)
    held = {p.symbol for p in valuation.positions}
    found = lessons or {}
    scored = [
        score_candidate(
            stock,
            sectors.get(stock.ticker),
            weights,
            stock.ticker in held,
            limits,
            found.get(stock.ticker),
        )
        for stock in stocks
    ]
    order = sorted(scored, key=lambda c: (-c.score, -CONVICTION_POINTS[c.conviction], c.ticker))
    return Prioritized(
        ranked=[c for c in order if c.score > 0], dropped=[c for c in order if c.score <= 0]
    )
