"""A benchmark window and the protocol's split of it into what the agent sees and the truth.

The split lives here once, so the loader, the workflow and the scorer cannot
disagree on which bars are held out: ``visible`` is what may reach an agent or a
baseline, ``truth`` is the only thing computed from the held-out bars.
"""

from __future__ import annotations

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
