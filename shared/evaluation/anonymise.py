"""Disguising a window so that nothing an agent is shown names the asset or the period.

A model that has read the news of a period can "predict" it from memory. An
anonymised run shows the same chart shapes with the identity stripped:

- the ticker becomes a placeholder (``ASSET-042``), which names no listed asset;
- every bar time moves forward by a whole number of weeks, 100 to 150 years, so
  weekdays and times of day stay as they were, and no date of the shown period
  is one a model has read about (or one that shares a year with the real one);
- prices scale by a factor at least ``MIN_FACTOR_EXPONENT`` decades away from 1
  (up or down), so the real price level is nowhere on the page; volumes scale by
  an independent factor, since a volume can identify an asset too.

The charts and prompts are then built from the transformed bars by the same code
as always, so a redrawn chart carries only disguised labels. Every parameter
comes from a seeded generator keyed by the window, so a window is disguised the
same way on every run with the same seed, in whatever order windows are analysed.
A positive factor preserves every direction: a window's truth is the same.
"""

from __future__ import annotations

import random
from collections.abc import Sequence
from datetime import timedelta

from pydantic import BaseModel, ConfigDict, Field

from shared.market.bars import Bar

PLACEHOLDER_PREFIX = "ASSET-"
MIN_SHIFT_WEEKS = 100 * 52
MAX_SHIFT_WEEKS = 150 * 52
MIN_FACTOR_EXPONENT = 0.7
"""Prices move at least 10**0.7 ≈ 5x away from the real level..."""
MAX_FACTOR_EXPONENT = 1.7
"""...and at most 10**1.7 ≈ 50x, so prices stay ordinary numbers."""


class Disguise(BaseModel):
    """How one window is disguised: the placeholder, the time shift and the two factors."""

    model_config = ConfigDict(frozen=True)

    placeholder: str = Field(description="the symbol the agents are shown")
    shift: timedelta = Field(description="added to every bar time")
    price_factor: float = Field(gt=0, description="every price is multiplied by it")
    volume_factor: float = Field(gt=0, description="every volume is multiplied by it")

    @classmethod
    def seeded(cls, seed: int, key: str) -> Disguise:
        """The disguise of the window ``key`` under ``seed``: the same pair, the same disguise."""
        rng = random.Random(f"anonymise:{seed}:{key}")
        return cls(
            placeholder=f"{PLACEHOLDER_PREFIX}{rng.randrange(1000):03d}",
            shift=timedelta(weeks=rng.randint(MIN_SHIFT_WEEKS, MAX_SHIFT_WEEKS)),
            price_factor=_factor(rng),
            volume_factor=_factor(rng),
        )


def _factor(rng: random.Random) -> float:
    """10 to a power between the two exponents, up or down with equal chance."""
    exponent = rng.uniform(MIN_FACTOR_EXPONENT, MAX_FACTOR_EXPONENT)
    return 10 ** (exponent if rng.random() < 0.5 else -exponent)


def disguise_bars(bars: Sequence[Bar], disguise: Disguise) -> list[Bar]:
    """``bars`` shifted in time and rescaled: the same shapes, another period and level."""
    price = disguise.price_factor
    return [
        Bar(
            time=bar.time + disguise.shift,
            open=bar.open * price,
            high=bar.high * price,
            low=bar.low * price,
            close=bar.close * price,
            volume=bar.volume * disguise.volume_factor,
        )
        for bar in bars
    ]
