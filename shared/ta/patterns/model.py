"""What a pattern detection answers: the sixteen pattern names, a bias, and one match."""

from __future__ import annotations

from enum import StrEnum

from pydantic import BaseModel, ConfigDict, Field, model_validator


class PatternName(StrEnum):
    """The sixteen patterns, spelled exactly as QuantAgent's pattern prompt names them."""

    INVERSE_HEAD_AND_SHOULDERS = "Inverse Head and Shoulders"
    DOUBLE_BOTTOM = "Double Bottom"
    ROUNDED_BOTTOM = "Rounded Bottom"
    HIDDEN_BASE = "Hidden Base"
    FALLING_WEDGE = "Falling Wedge"
    RISING_WEDGE = "Rising Wedge"
    ASCENDING_TRIANGLE = "Ascending Triangle"
    DESCENDING_TRIANGLE = "Descending Triangle"
    BULLISH_FLAG = "Bullish Flag"
    BEARISH_FLAG = "Bearish Flag"
    RECTANGLE = "Rectangle"
    ISLAND_REVERSAL = "Island Reversal"
    V_SHAPED_REVERSAL = "V-shaped Reversal"
    ROUNDED_TOP = "Rounded Top"
    EXPANDING_TRIANGLE = "Expanding Triangle"
    SYMMETRICAL_TRIANGLE = "Symmetrical Triangle"


class Bias(StrEnum):
    """Which way a pattern points; the values match ``shared.agents.schemas.Stance``."""

    BULLISH = "bullish"
    BEARISH = "bearish"
    NEUTRAL = "neutral"


class PatternMatch(BaseModel):
    """One detected pattern: what, which way, how sure, where, and the numbers behind it."""

    model_config = ConfigDict(frozen=True)

    name: PatternName
    bias: Bias
    confidence: float = Field(ge=0, le=1, description="product of the per-criterion scores")
    start_index: int = Field(ge=0, description="first bar of the pattern; 0 = window's first")
    end_index: int = Field(ge=0, description="last bar of the pattern, inclusive")
    description: str = Field(min_length=1, description="one sentence of the measured evidence")

    @model_validator(mode="after")
    def _span_is_ordered(self) -> PatternMatch:
        if self.end_index < self.start_index:
            raise ValueError(f"end_index {self.end_index} is before start_index {self.start_index}")
        return self
