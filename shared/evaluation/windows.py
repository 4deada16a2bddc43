"""A benchmark window and the protocol's split of it into what the agent sees and the truth.

The split lives here once, so the loader, the workflow and the scorer cannot
disagree on which bars are held out: ``visible`` is what may reach an agent or a
baseline, ``truth`` is the only thing computed from the held-out bars.

Published benchmark data is not evenly spaced: a DST shift written in local time
makes one 4h step 3 or 5 hours, a market holiday or a missing bar makes a longer
one. Those bars are real, so a window keeps them and ``spacing_notes`` says where
the steps differ from one bar. Only a window whose rows are invalid (a bad price,
times out of order) becomes an ``InvalidWindow``, scored as failed with its reason.
"""

from __future__ import annotations

from collections.abc import Sequence
from datetime import datetime, timedelta
from typing import Annotated

from pydantic import BaseModel, ConfigDict, Field

from shared.agents.quantagent import TREND_WINDOW, Direction
from shared.market.bars import Bar, Timeframe

HELD_OUT = 3
"""Bars at the end of each window the agent never sees; the call is for this horizon."""

MIN_WINDOW_BARS = TREND_WINDOW + HELD_OUT
"""The trend chart needs 50 visible bars, the most of any QuantAgent step."""

MAX_WINDOW_BARS = 500
"""Keeps one window's visible bars (~130 bytes each) a small inline child input."""

MAX_ASSET_LENGTH = 32
"""QuantAgent's limit on a symbol, which the asset becomes."""


class Window(BaseModel):
    """One benchmark window of consecutive bars, oldest first."""

    model_config = ConfigDict(frozen=True)

    window_id: str = Field(min_length=1, description="unique in an evaluation, e.g. BTC_4h_12")
    asset: str = Field(
        min_length=1, max_length=MAX_ASSET_LENGTH, description="what the bars are of, e.g. BTC"
    )
    timeframe: Timeframe
    bars: list[Bar] = Field(min_length=MIN_WINDOW_BARS, max_length=MAX_WINDOW_BARS)

    @property
    def visible(self) -> list[Bar]:
        """The bars the agent and the baselines may read: all but the held-out ones."""
        return self.bars[:-HELD_OUT]

    @property
    def last_seen_close(self) -> float:
        """The close the call is measured from."""
        return self.bars[-HELD_OUT - 1].close

    @property
    def future_close(self) -> float:
        """The close ``HELD_OUT`` bars after the last seen one."""
        return self.bars[-1].close

    @property
    def truth(self) -> Direction:
        """LONG if price rose over the held-out bars; a flat close makes LONG wrong."""
        return Direction.LONG if self.future_close > self.last_seen_close else Direction.SHORT


class SpacingNote(BaseModel):
    """Every step of one length between consecutive bars of a window that is not one bar."""

    model_config = ConfigDict(frozen=True)

    gap: timedelta = Field(description="time from one bar to the next")
    count: int = Field(ge=1, description="steps of this length in the window")
    first_row: int = Field(ge=1, description="row of the first bar this far from the one before")
    first_time: datetime = Field(description="that bar's time")

    def describe(self) -> str:
        """E.g. ``3:00:00 between bars once at row 79 (2024-11-03T03:00:00+00:00)``."""
        times = "once" if self.count == 1 else f"{self.count} times, first"
        return (
            f"{self.gap} between bars {times} at row {self.first_row} "
            f"({self.first_time.isoformat()})"
        )


def is_one_bar(gap: timedelta, timeframe: Timeframe) -> bool:
    """Whether ``gap`` is one bar of ``timeframe``; months are one bar from 28 to 31 days."""
    if timeframe is Timeframe.MO1:
        return timedelta(days=28) <= gap <= timedelta(days=31)
    return gap == timeframe.duration


def spacing_notes(bars: Sequence[Bar], timeframe: Timeframe) -> list[SpacingNote]:
    """The steps of ``bars`` that are not one bar, grouped by length, in order of first row."""
    notes: dict[timedelta, SpacingNote] = {}
    for row in range(1, len(bars)):
        gap = bars[row].time - bars[row - 1].time
        if is_one_bar(gap, timeframe):
            continue
        seen = notes.get(gap)
        notes[gap] = (
            seen.model_copy(update={"count": seen.count + 1})
            if seen
            else SpacingNote(gap=gap, count=1, first_row=row, first_time=bars[row].time)
        )
    return sorted(notes.values(), key=lambda note: note.first_row)


def describe_spacing(notes: Sequence[SpacingNote], timeframe: Timeframe) -> str:
    """One line for a window's notes, e.g. in the evaluation's Markdown."""
    steps = "; ".join(note.describe() for note in notes)
    return f"{steps} (one {timeframe} bar is {timeframe.duration})"


class InvalidWindow(BaseModel):
    """A window whose rows cannot be analysed (a bad price, times out of order, too few bars):
    scored as failed with ``error``, so one bad file never stops an evaluation."""

    model_config = ConfigDict(frozen=True)

    window_id: str = Field(min_length=1)
    asset: str = Field(min_length=1, max_length=MAX_ASSET_LENGTH)
    timeframe: Timeframe
    error: str = Field(min_length=1, description="what is wrong, naming the file and the row")


LoadedWindow = Annotated[Window | InvalidWindow, Field(union_mode="left_to_right")]
"""What a loader gives for one window; a stored page holds both kinds, in evaluation order."""


def bar_count(window: Window | InvalidWindow) -> int:
    """Bars the window holds (none when it is invalid)."""
    return len(window.bars) if isinstance(window, Window) else 0


class VisibleWindow(BaseModel):
    """The agent's share of a window: everything but the held-out bars."""

    window_id: str
    asset: str
    timeframe: Timeframe
    bars: list[Bar]

    @classmethod
    def of(cls, window: Window) -> VisibleWindow:
        """``window`` without its held-out bars."""
        return cls(
            window_id=window.window_id,
            asset=window.asset,
            timeframe=window.timeframe,
            bars=window.visible,
        )
