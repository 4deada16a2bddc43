"""Reflection after the outcome is known: the schema, the facts it rests on, the prompt.

Once a decision's horizon has passed, each role that took part (bull, bear,
trader, managers, risk debaters) is asked whether its call was right given what
the stock then did against its benchmark, why, what to change, and a short
lesson that memory keeps for similar situations. One prompt builder serves
every role; the numbers it quotes are computed here, never by the model.

Correctness is judged on alpha (the stock's return minus the benchmark's over
the same bars): a long call is right when the stock beat the market, a short
call when it lagged, a flat (Hold) call when the difference stayed within
``HOLD_ALPHA_BAND``. The lesson's ``Outcome`` is the *position's* result, as
memory defines it: the stock's return signed by the stance (zero when flat),
and that minus the benchmark's return.
"""

from __future__ import annotations

import re
from datetime import datetime
from enum import StrEnum
from typing import Any

from pydantic import AwareDatetime, BaseModel, Field

from shared.agents.schemas import register_schema
from shared.llm.contracts import ChatMessage
from shared.memory.models import MemoryRole, Outcome

REFLECTOR = "reflector"
LESSON_MAX_CHARS = 400
# A Hold is right when the stock and the market moved within this of each other.
HOLD_ALPHA_BAND = 0.02

# Words that state a direction, in the order they are looked for (longest first,
# so "Underweight" is not read as a weight word of another rating).
_DIRECTION_WORDS: tuple[tuple[str, str], ...] = (
    ("underweight", "short"),
    ("overweight", "long"),
    ("bullish", "long"),
    ("bearish", "short"),
    ("neutral", "flat"),
    ("long", "long"),
    ("short", "short"),
    ("sell", "short"),
    ("buy", "long"),
    ("hold", "flat"),
    ("flat", "flat"),
    ("bull", "long"),
    ("bear", "short"),
)
# Researchers argue one side by construction; every other role must state a direction.
_ROLE_STANCE = {MemoryRole.BULL: "long", MemoryRole.BEAR: "short"}


class Stance(StrEnum):
    """The position a decision amounts to."""

    LONG = "long"
    SHORT = "short"
    FLAT = "flat"

    @property
    def sign(self) -> int:
        """+1 long, -1 short, 0 flat: what the stock's return is multiplied by."""
        return {Stance.LONG: 1, Stance.SHORT: -1, Stance.FLAT: 0}[self]


def stance_of(role: MemoryRole, text: str, direction: str | None = None) -> Stance | None:
    """The stance of ``direction`` (e.g. Buy, Overweight, SHORT), else the first direction
    word of ``text``, else the researcher's side; None when nothing states one."""
    for source in (direction, text):
        if not source:
            continue
        lowered = source.lower()
        found = [
            (match.start(), stance)
            for word, stance in _DIRECTION_WORDS
            if (match := re.search(rf"\b{word}\b", lowered))
        ]
        if found:
            return Stance(min(found)[1])
        if source is direction:
            return None
    side = _ROLE_STANCE.get(role)
    return Stance(side) if side else None


class MarketOutcome(BaseModel):
    """What the stock and its benchmark did over the horizon, with the bars measured."""

    symbol: str
    benchmark: str
    start: AwareDatetime = Field(description="the last bar at or before the decision's as_of")
    end: AwareDatetime = Field(description="the horizon-th bar after ``start``")
    horizon_bars: int = Field(ge=1, description="trading bars from start to end")
    horizon_days: int = Field(ge=1, description="calendar days from start to end")
    start_close: float
    end_close: float
    benchmark_start_close: float
    benchmark_end_close: float
    stock_return: float = Field(description="end_close / start_close - 1")
    benchmark_return: float = Field(description="the benchmark's, over the same dates")
    alpha: float = Field(description="stock_return - benchmark_return")
    vendor: str = Field(description="the data vendor both closes of the stock came from")

    def for_stance(self, stance: Stance) -> Outcome:
        """The position's ``Outcome``: signed return, and that minus the benchmark's."""
        realised = stance.sign * self.stock_return
        return Outcome(
            realised_return=realised,
            alpha=realised - self.benchmark_return,
            horizon_days=self.horizon_days,
        )


def judged_correct(stance: Stance, alpha: float) -> bool:
    """The rule of thumb the prompt states and the offline reflector applies."""
    if stance is Stance.LONG:
        return alpha > 0
    if stance is Stance.SHORT:
        return alpha < 0
    return abs(alpha) <= HOLD_ALPHA_BAND


@register_schema
class Reflection(BaseModel):
    """One role's look back at its decision once the outcome is known."""

    was_correct: bool = Field(description="whether the decision was right given the returns")
    why: str = Field(min_length=1, description="what in the situation made it right or wrong")
    what_to_change: str = Field(min_length=1, description="what to weigh differently next time")
    lesson: str = Field(
        min_length=1,
        max_length=LESSON_MAX_CHARS,
        description="a sentence or two to remember for similar situations",
    )


def _pct(value: float) -> str:
    return f"{value * 100:+.2f}%"


def reflection_context(
    role: MemoryRole, stance: Stance, decision_text: str, outcome: MarketOutcome
) -> dict[str, Any]:
    """The numbers behind the prompt, for the request's ``inputs`` (the offline engine
    reads them; the Web UI shows them)."""
    position = outcome.for_stance(stance)
    return {
        "role": role.value,
        "stance": stance.value,
        "decision": decision_text,
        "symbol": outcome.symbol,
        "benchmark": outcome.benchmark,
        "start": outcome.start.isoformat(),
        "end": outcome.end.isoformat(),
        "horizon_bars": outcome.horizon_bars,
        "horizon_days": outcome.horizon_days,
        "stock_return": outcome.stock_return,
        "benchmark_return": outcome.benchmark_return,
        "alpha": outcome.alpha,
        "position_return": position.realised_return,
        "position_alpha": position.alpha,
        "hold_alpha_band": HOLD_ALPHA_BAND,
    }


class ReflectionInputs(BaseModel):
    """What the reflector reads about one role's decision: the situation, the call, what
    followed."""

    role: MemoryRole
    stance: Stance
    situation: str
    decision: str
    outcome: MarketOutcome

    def numbers(self) -> dict[str, Any]:
        """The numbers behind the prompt (``reflection_context``)."""
        return reflection_context(self.role, self.stance, self.decision, self.outcome)


def _date(value: datetime) -> str:
    return value.date().isoformat()


def reflection_messages(
    role: MemoryRole,
    situation: str,
    decision_text: str,
    outcome: MarketOutcome,
    stance: Stance,
) -> list[ChatMessage]:
    """The reflector's turns for one role: the situation, the call, and what followed."""
    name = role.value.replace("_", " ")
    return [
        ChatMessage(
            role="system",
            content=(
                f"You review the past decisions of the {name} on a trading desk. Judge the "
                "decision by what followed, using only the numbers given; never invent values."
            ),
        ),
        ChatMessage(
            role="user",
            content=(
                f"Situation the {name} saw on {outcome.symbol}:\n{situation}\n\n"
                f"Its decision ({stance.value}):\n{decision_text}\n\n"
                f"What followed over {outcome.horizon_bars} trading days "
                f"({_date(outcome.start)} to {_date(outcome.end)}, {outcome.horizon_days} "
                f"calendar days): {outcome.symbol} {_pct(outcome.stock_return)} "
                f"({outcome.start_close:g} to {outcome.end_close:g}), {outcome.benchmark} "
                f"{_pct(outcome.benchmark_return)}, alpha {_pct(outcome.alpha)}.\n\n"
                "A long call is right when alpha is positive, a short call when it is "
                f"negative, a flat (Hold) call when |alpha| is at most {_pct(HOLD_ALPHA_BAND)}. "
                "Say whether the decision was right, why (which facts of the situation it "
                "weighed well or badly), what to change next time, and a lesson of at most "
                f"{LESSON_MAX_CHARS} characters for similar situations."
            ),
        ),
    ]
