"""The walk-forward schedule: on which trading dates a flow runs, and the closes it is marked at.

The dates come from the data, never from a calendar: the bars between ``start``
and ``end`` (both inclusive), and a step on every ``every``-th of them starting
with the first. The last bar of the range is never a step, because a decision
there would have no next close to be judged against; each step's position is
held from its own close to the next step's close (the last step's to the last
close of the range).

Reading the prices of the whole range is not look-ahead: the schedule is the
evaluator's, and the flow at each step still reads strictly as of its date.
"""

from __future__ import annotations

from collections.abc import Sequence
from datetime import date, datetime

from pydantic import AwareDatetime, BaseModel, ConfigDict, Field

from shared.errors import InvalidInput

SLACK_DAYS = 5
"""Calendar days the data may stop short of ``end`` (a weekend plus holidays) before ``end``
counts as outside the data."""


class PricePoint(BaseModel):
    """One daily close."""

    model_config = ConfigDict(frozen=True)

    time: AwareDatetime = Field(description="the bar's label (start of its day, UTC)")
    close: float = Field(gt=0, allow_inf_nan=False)


class WalkForward(BaseModel):
    """Every close of the range, and which of them are steps."""

    prices: list[PricePoint] = Field(min_length=2, description="the range's closes, oldest first")
    steps: list[int] = Field(min_length=1, description="indices into prices where the flow runs")
    every: int = Field(ge=1, description="bars from one step to the next")

    @property
    def step_times(self) -> list[datetime]:
        """The analysis time of each step: its bar's label, which includes that bar's close."""
        return [self.prices[index].time for index in self.steps]

    def holding(self, step: int) -> tuple[int, int]:
        """The price indices step ``step`` holds its position between (open close, close close)."""
        start = self.steps[step]
        stop = self.steps[step + 1] if step + 1 < len(self.steps) else len(self.prices) - 1
        return start, stop


def walk_forward(bars: Sequence[PricePoint], start: date, end: date, every: int) -> WalkForward:
    """The schedule of ``bars`` between ``start`` and ``end``, a step every ``every`` bars.

    ``bars`` are the data's daily closes up to ``end``, oldest first, reaching back
    before ``start`` wherever the data does: a first bar after ``start`` means the
    data begins too late. Raises ``InvalidInput`` naming ``every``, ``start`` or
    ``end`` with what the data covers.
    """
    if every < 1:
        raise InvalidInput("every", f"{every} is below 1", fix="Run the flow every 1 or more bars.")
    if start > end:
        raise InvalidInput(
            "start", f"{start} is after end {end}", fix="Give a start on or before the end."
        )
    if not bars:
        raise InvalidInput("end", f"no daily bars up to {end}", fix="Use dates the data covers.")
    first, last = bars[0].time.date(), bars[-1].time.date()
    covered = f"the data covers {first} to {last}"
    if first > start:
        raise InvalidInput(
            "start", f"{start} is before the data's first bar", fix=f"Start later: {covered}."
        )
    if (end - last).days > SLACK_DAYS:
        raise InvalidInput(
            "end", f"{end} is after the data's last bar", fix=f"End earlier: {covered}."
        )
    prices = [bar for bar in bars if start <= bar.time.date() <= end]
    if len(prices) < 2:
        raise InvalidInput(
            "end",
            f"{len(prices)} bar(s) between {start} and {end}: a position needs an opening and a "
            "later close",
            fix="Widen the range.",
        )
    return WalkForward(prices=prices, steps=list(range(0, len(prices) - 1, every)), every=every)
