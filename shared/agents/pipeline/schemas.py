"""The per-ticker Pipeline's structured outputs, registered by name for ``response_schema``.

Every closed set is an enum. A rule a JSON schema cannot say (it relates two
fields) is, by preference, taken out of the model's hands: a sentiment band is
derived from its score and a portfolio decision's BUY/SELL/HOLD signal from its
rating (computed fields, not asked for, so they cannot disagree; the peers let a
rating that did not parse become Hold). Where a reply can be normalised without
guessing, it is: a rebuttal of someone outside the debate becomes an opening, a
researcher's position size is dropped, and a critical abort from an analyst who
may not raise one becomes a bearish key point. What stays a check is a real
contract, and each is stated in the schema's descriptions the model reads: a
raised abort needs its reason, a trade's stop and target sit on the right sides
of its entry, and a critical abort allows only Sell or Underweight.
"""

from __future__ import annotations

import math
from enum import StrEnum
from typing import Annotated

from pydantic import BaseModel, Field, WithJsonSchema, computed_field, model_validator

from shared.agents.pipeline.kinds import ABORT_ANALYSTS, AnalystKind
from shared.agents.schemas import Confidence, Fraction, Stance, register_schema


class CriticalAbort(BaseModel):
    """A catastrophic condition (halt, delisting, bankruptcy, fraud, a >90% crash...)
    that sends the Pipeline straight to the portfolio manager with a Sell. A raised
    flag needs its reason."""

    flag: bool = Field(False, description="true only for a catastrophic condition in the data")
    reason: str | None = Field(None, description="what the data shows; required when flag is true")

    @model_validator(mode="after")
    def _reason_with_flag(self) -> CriticalAbort:
        if self.flag and not (self.reason and self.reason.strip()):
            raise ValueError("a raised critical abort needs its reason")
        if not self.flag:
            # Models often explain why there is no abort; that is not a reason to keep.
            self.reason = None
        return self


class KeyPoint(BaseModel):
    """One fact of a report and which way it points on its own.

    Typed so a debater can pick the evidence for its side without parsing prose.
    """

    point: str = Field(min_length=1, description="the fact, with its number and date")
    leans: Stance = Field(description="which way this fact alone points")


@register_schema
class AnalystReport(BaseModel):
    """What the market, news and fundamentals analysts hand to the debate."""

    analyst: AnalystKind = Field(description="which analyst you are (the task says)")
    stance: Stance
    confidence: Confidence
    key_points: list[KeyPoint] = Field(min_length=1, description="the facts, most important first")
    report_markdown: str = Field(min_length=1, description="the full report in Markdown")
    critical_abort: CriticalAbort = Field(
        default_factory=CriticalAbort,
        description="only the market and fundamentals analysts may set flag=true",
    )

    @model_validator(mode="after")
    def _abort_only_where_allowed(self) -> AnalystReport:
        # Another analyst's alarm may not skip the debate, but it is evidence: the debate
        # weighs it as a bearish fact rather than the whole report being refused.
        if self.critical_abort.flag and self.analyst not in ABORT_ANALYSTS:
            allowed = " and ".join(sorted(kind.value for kind in ABORT_ANALYSTS))
            alarm = KeyPoint(
                point=f"raised a critical abort, which only the {allowed} analysts may: "
                f"{self.critical_abort.reason}",
                leans=Stance.BEARISH,
            )
            self.key_points = [*self.key_points, alarm]
            self.critical_abort = CriticalAbort()
        return self


class SentimentBand(StrEnum):
    """The crowd's mood, from very negative to very positive."""

    VERY_NEGATIVE = "very_negative"
    NEGATIVE = "negative"
    NEUTRAL = "neutral"
    POSITIVE = "positive"
    VERY_POSITIVE = "very_positive"


SENTIMENT_BANDS: tuple[tuple[float, SentimentBand], ...] = (
    (2.0, SentimentBand.VERY_NEGATIVE),
    (4.0, SentimentBand.NEGATIVE),
    (6.0, SentimentBand.NEUTRAL),
    (8.0, SentimentBand.POSITIVE),
    (math.inf, SentimentBand.VERY_POSITIVE),
)
"""(score below which, band): the 0-10 score cut into five equal bands."""


def band_for_score(score: float) -> SentimentBand:
    """The band a 0-10 sentiment score falls in."""
    return next(band for below, band in SENTIMENT_BANDS if score < below)


@register_schema
class SentimentReport(AnalystReport):
    """The social analyst's report: an ``AnalystReport`` plus the crowd's mood.

    A subclass, so it goes wherever an analyst report goes (the debate, the
    managers) and the sentiment fields travel with it. The band is derived from
    the score, never asked for: models gave bands that disagreed with their scores.
    """

    analyst: Annotated[AnalystKind, WithJsonSchema({"type": "string", "const": "social"})] = (
        AnalystKind.SOCIAL
    )
    score: float = Field(
        ge=0,
        le=10,
        description="0 = very negative, 5 = neutral, 10 = very positive; the band (very "
        "negative below 2, negative below 4, neutral below 6, positive below 8, else very "
        "positive) is derived from it",
    )
    narrative: str = Field(min_length=1, description="what the crowd says and how loudly")

    @model_validator(mode="after")
    def _social_only(self) -> SentimentReport:
        if self.analyst is not AnalystKind.SOCIAL:
            raise ValueError(f"a sentiment report is the social analyst's, not {self.analyst}'s")
        return self

    @computed_field  # type: ignore[prop-decorator]
    @property
    def band(self) -> SentimentBand:
        """The crowd's mood in words: the band ``score`` falls in."""
        return band_for_score(self.score)


class Debate(StrEnum):
    """The Pipeline's two debates."""

    RESEARCH = "research"
    RISK = "risk"


class Speaker(StrEnum):
    """Who speaks in a debate."""

    BULL = "bull"
    BEAR = "bear"
    AGGRESSIVE = "aggressive"
    CONSERVATIVE = "conservative"
    NEUTRAL = "neutral"


SPEAKERS: dict[Debate, tuple[Speaker, ...]] = {
    Debate.RESEARCH: (Speaker.BULL, Speaker.BEAR),
    Debate.RISK: (Speaker.AGGRESSIVE, Speaker.CONSERVATIVE, Speaker.NEUTRAL),
}
"""Each debate's speakers, in speaking order."""

DEBATE_OF: dict[Speaker, Debate] = {
    speaker: debate for debate, speakers in SPEAKERS.items() for speaker in speakers
}


@register_schema
class DebateTurn(BaseModel):
    """One turn of the bull/bear or the risk debate.

    ``rebuttal_of`` names another speaker of the same debate (else the turn counts as
    an opening) and only risk debaters argue a ``position_sizing`` (a researcher's is
    dropped): both are normalised, not refused, since neither changes the argument.
    The debate loop, not the model, sets ``speaker`` and ``round``.
    """

    speaker: Speaker
    round: int = Field(ge=1, description="the speaker's own turn number, from 1")
    argument: str = Field(min_length=1, description="the case, citing the reports")
    rebuttal_of: Speaker | None = Field(
        None,
        description="the other speaker of this debate whose last argument this answers; null "
        "for an opening",
    )
    key_points: list[str] = Field(min_length=1, description="the evidence this turn rests on")
    position_sizing: Fraction | None = Field(
        None,
        description="risk debaters: the fraction of the portfolio they argue for; "
        "researchers: null",
    )

    @model_validator(mode="after")
    def _within_its_debate(self) -> DebateTurn:
        debate = DEBATE_OF[self.speaker]
        if self.rebuttal_of is not None and (
            self.rebuttal_of is self.speaker or DEBATE_OF[self.rebuttal_of] is not debate
        ):
            self.rebuttal_of = None
        if debate is not Debate.RISK:
            self.position_sizing = None
        return self


class Action(StrEnum):
    """What to do with the ticker: the research plan's and the trader's call."""

    BUY = "Buy"
    HOLD = "Hold"
    SELL = "Sell"


@register_schema
class ResearchPlan(BaseModel):
    """The research manager's verdict on the bull/bear debate."""

    recommendation: Action
    rationale: str = Field(min_length=1, description="why, weighing both sides' best points")
    strategic_actions: list[str] = Field(min_length=1, description="concrete steps for the trader")


LEVEL_ORDER: dict[Action, tuple[str, ...]] = {
    Action.BUY: ("stop_loss", "entry_price", "take_profit"),
    Action.SELL: ("take_profit", "entry_price", "stop_loss"),
}
"""A trade's price levels from lowest to highest: a long's stop is below its entry, a
short's above; Hold places no order."""


@register_schema
class TraderProposal(BaseModel):
    """The trader's order, for the risk debate to size and the portfolio manager to judge.

    The levels given must be in order: for a Buy stop_loss < entry_price < take_profit,
    for a Sell take_profit < entry_price < stop_loss; a Hold places no order.
    """

    action: Action
    reasoning: str = Field(min_length=1)
    entry_price: float | None = Field(None, gt=0, description="limit price; null: at market")
    stop_loss: float | None = Field(None, gt=0, description="Buy: below entry; Sell: above")
    take_profit: float | None = Field(None, gt=0, description="Buy: above entry; Sell: below")
    position_sizing: Fraction = Field(
        description="fraction of the portfolio for this position (0.05 = 5%)"
    )

    @model_validator(mode="after")
    def _levels_in_order(self) -> TraderProposal:
        names = LEVEL_ORDER.get(self.action, ())
        given = [(name, getattr(self, name)) for name in names if getattr(self, name) is not None]
        for (low_name, low), (high_name, high) in zip(given, given[1:], strict=False):
            if not low < high:
                raise ValueError(
                    f"for a {self.action.value}, {low_name} ({low:g}) must be below "
                    f"{high_name} ({high:g})"
                )
        return self


class Rating(StrEnum):
    """The portfolio manager's five-step rating."""

    BUY = "Buy"
    OVERWEIGHT = "Overweight"
    HOLD = "Hold"
    UNDERWEIGHT = "Underweight"
    SELL = "Sell"


class TradeSignal(StrEnum):
    """The order a rating comes down to."""

    BUY = "BUY"
    SELL = "SELL"
    HOLD = "HOLD"


SIGNAL_OF_RATING: dict[Rating, TradeSignal] = {
    Rating.BUY: TradeSignal.BUY,
    Rating.OVERWEIGHT: TradeSignal.BUY,
    Rating.HOLD: TradeSignal.HOLD,
    Rating.UNDERWEIGHT: TradeSignal.SELL,
    Rating.SELL: TradeSignal.SELL,
}

ABORT_RATINGS: frozenset[Rating] = frozenset({Rating.SELL, Rating.UNDERWEIGHT})
"""The ratings a critical abort allows."""


@register_schema
class PortfolioDecision(BaseModel):
    """The Pipeline's final word on the ticker. After a critical abort the rating is Sell or
    Underweight, with abort_reason; otherwise abort_reason is null."""

    rating: Rating
    executive_summary: str = Field(min_length=1)
    investment_thesis: str = Field(min_length=1)
    price_target: float | None = Field(None, gt=0)
    time_horizon: str = Field(min_length=1, description="e.g. 3-6 months")
    abort_reason: str | None = Field(
        None,
        description="only when a critical abort decided it (the rating is then Sell or "
        "Underweight); otherwise null",
    )

    @computed_field  # type: ignore[prop-decorator]
    @property
    def signal(self) -> TradeSignal:
        """The order the rating comes down to: derived, so it cannot contradict the rating."""
        return SIGNAL_OF_RATING[self.rating]

    @model_validator(mode="after")
    def _abort_rating(self) -> PortfolioDecision:
        if self.abort_reason is not None and self.rating not in ABORT_RATINGS:
            raise ValueError(
                f"a critical abort allows only Sell or Underweight, not {self.rating.value}"
            )
        return self
