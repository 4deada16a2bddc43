"""The generic offline analyst: reads every number it was given and says what moved.

Agents without a dedicated offline analyst get this one. It finds the numeric
series in the context and in tool results, measures each one's change, and
takes a stance from the price series if there is one (else from the balance of
the series). With no numbers it says so and takes no view: it never invents.
"""

from __future__ import annotations

import math
from typing import Any

from pydantic import BaseModel

from shared.agents.schemas import AnalystNote, Stance
from shared.llm.offline.reading import OfflineInput

PRICE_NAMES = ("close", "price", "adj_close")
# A move smaller than this (in percent) is noise for the stance.
NEUTRAL_BAND_PCT = 1.0
MAX_POINTS = 6


class SeriesReading(BaseModel):
    """How one numeric series moved over the values given."""

    name: str
    first: float
    last: float
    count: int

    @property
    def change_pct(self) -> float:
        """Percent change from first to last (0 when first is 0)."""
        return 0.0 if self.first == 0 else (self.last - self.first) / abs(self.first) * 100

    @property
    def direction(self) -> int:
        """+1 rising, -1 falling, 0 flat within the neutral band."""
        if abs(self.change_pct) < NEUTRAL_BAND_PCT:
            return 0
        return 1 if self.change_pct > 0 else -1

    def describe(self) -> str:
        """One key point, with the numbers."""
        word = {1: "rising", -1: "falling", 0: "flat"}[self.direction]
        return (
            f"{self.name}: {self.first:.4g} → {self.last:.4g} ({self.change_pct:+.2f}%) "
            f"over {self.count} values, {word}"
        )


def _finite(values: list[Any]) -> list[float]:
    return [
        float(v)
        for v in values
        if isinstance(v, int | float) and not isinstance(v, bool) and math.isfinite(v)
    ]


def find_series(data: Any, name: str = "") -> list[SeriesReading]:
    """Every list of at least two finite numbers in ``data``, named by its path."""
    found: list[SeriesReading] = []
    if isinstance(data, dict):
        for key, value in data.items():
            found += find_series(value, f"{name}.{key}" if name else str(key))
    elif isinstance(data, list) and data and all(isinstance(row, dict) for row in data):
        keys = [k for k in data[0] if isinstance(data[0][k], int | float)]
        for key in keys:
            found += find_series([row.get(key) for row in data], f"{name}.{key}" if name else key)
    elif isinstance(data, list):
        values = _finite(data)
        if len(values) >= 2:
            found.append(
                SeriesReading(
                    name=name or "values", first=values[0], last=values[-1], count=len(values)
                )
            )
    return found


def _is_price(reading: SeriesReading) -> bool:
    return reading.name.rsplit(".", 1)[-1].lower() in PRICE_NAMES


def analyse(offline: OfflineInput) -> AnalystNote:
    """A stance with its confidence and the measured facts behind it."""
    readings = find_series(offline.inputs)
    for output in offline.tool_outputs:
        if output.ok:
            readings += find_series(output.data, output.name)
    if not readings:
        return AnalystNote(
            stance=Stance.NEUTRAL,
            confidence=0.1,
            key_points=["No numeric data was provided, so no view is taken."],
            summary=f"{offline.agent}: no data to read; neutral by default, not by evidence.",
        )
    prices = [r for r in readings if _is_price(r)]
    if prices:
        basis = prices[0]
        vote = basis.direction
        confidence = min(0.9, 0.5 + abs(basis.change_pct) / 20)
        why = f"price moved {basis.change_pct:+.2f}%"
    else:
        total = sum(r.direction for r in readings)
        vote = (total > 0) - (total < 0)
        agreeing = sum(1 for r in readings if r.direction == vote)
        confidence = round(0.8 * agreeing / len(readings), 3)
        why = f"{agreeing} of {len(readings)} series agree"
    stance = {1: Stance.BULLISH, -1: Stance.BEARISH, 0: Stance.NEUTRAL}[vote]
    ranked = sorted(readings, key=lambda r: (not _is_price(r), -abs(r.change_pct)))
    return AnalystNote(
        stance=stance,
        confidence=round(confidence, 3),
        key_points=[r.describe() for r in ranked[:MAX_POINTS]],
        summary=f"{offline.agent}: {stance.value}, because {why} ({len(readings)} series read).",
    )


def render_note(note: AnalystNote) -> str:
    """The note as the Markdown report an LLM analyst would write."""
    points = "\n".join(f"- {point}" for point in note.key_points)
    return (
        f"**Stance:** {note.stance.value} (confidence {note.confidence:.2f})\n\n"
        f"{points}\n\n{note.summary}"
    )
