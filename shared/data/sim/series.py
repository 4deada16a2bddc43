"""A sim symbol's bars at one timeframe, turned into ``Bar`` records only for the window read.

Holding every symbol's ten years as ``Bar`` objects would cost ~3 MB per symbol
and timeframe; a frame costs a twentieth of that, and a read of a few hundred
bars builds them in about a millisecond. The point-in-time rules are the market
layer's (``shared.market.resample``): a weekly or monthly bar is served only
once complete, and buckets cut by the world's ends never.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np
import pandas as pd

from shared.market.bars import Bar, Timeframe, frame_to_bars
from shared.market.resample import resample


@dataclass(frozen=True)
class Series:
    """Bars labelled by their period's start, and the instant (ns) each becomes complete."""

    frame: pd.DataFrame
    complete_ns: np.ndarray

    @classmethod
    def of(cls, daily: pd.DataFrame, timeframe: Timeframe) -> Series:
        """``daily`` itself, or resampled to ``timeframe`` keeping whole buckets only."""
        if timeframe is Timeframe.D1:
            return cls(daily, daily.index.as_unit("ns").asi8)
        coarse, complete_at = resample(daily, Timeframe.D1, timeframe)
        whole = (coarse.index >= daily.index[0]) & (complete_at <= daily.index[-1])
        return cls(coarse[whole], complete_at[whole].as_unit("ns").asi8)

    def first_complete(self) -> int | None:
        """When the first bar is complete (ns), None if there is no whole bar."""
        return int(self.complete_ns[0]) if len(self.complete_ns) else None

    def window(self, cutoff_ns: int, lookback: int | None) -> list[Bar]:
        """The last ``lookback`` (None: all) bars complete at ``cutoff_ns``, oldest first."""
        end = int(np.searchsorted(self.complete_ns, cutoff_ns, side="right"))
        start = 0 if lookback is None else max(0, end - lookback)
        return frame_to_bars(self.frame.iloc[start:end])
