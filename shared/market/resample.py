"""Coarser bars from finer ones, without look-ahead.

Buckets are calendar-aligned in UTC: intraday and daily buckets from the Unix
epoch (so 4h buckets start at 00:00, 04:00, ... UTC), weeks on Monday, months on
the 1st. A bucket is labelled with its start, like every ``Bar``.

A source reading "as of" a time returns the bars labelled at or before it, the
analysis standing at the close of that bar. A coarse bucket is therefore complete
as of the label of the *last* fine bar it can hold (its end minus one fine bar),
and ``resample`` returns that instant with each bucket so a reader can drop the
buckets still forming. Gaps inside a bucket (weekends, holidays) are simply
absent bars; a bucket is complete once its time has passed. Buckets cut by the
start or end of the data are partial, and ``series.build_series`` drops them.
"""

from __future__ import annotations

import pandas as pd

from shared.market.bars import Timeframe

_FLOOR = {
    Timeframe.M1: "1min",
    Timeframe.M5: "5min",
    Timeframe.M15: "15min",
    Timeframe.M30: "30min",
    Timeframe.H1: "1h",
    Timeframe.H4: "4h",
    Timeframe.D1: "1D",
}
_CALENDAR = (Timeframe.W1, Timeframe.MO1)


def bucket_starts(times: pd.DatetimeIndex, timeframe: Timeframe) -> pd.DatetimeIndex:
    """The start of the ``timeframe`` bucket holding each of ``times`` (UTC)."""
    if timeframe in _FLOOR:
        return times.floor(_FLOOR[timeframe])
    midnight = times.normalize()
    if timeframe is Timeframe.W1:
        return midnight - pd.to_timedelta(times.day_of_week, unit="D")
    return midnight - pd.to_timedelta(times.day - 1, unit="D")


def bucket_ends(starts: pd.DatetimeIndex, timeframe: Timeframe) -> pd.DatetimeIndex:
    """The exclusive end of the buckets starting at ``starts``."""
    if timeframe is Timeframe.MO1:
        return bucket_starts(starts + pd.Timedelta(days=32), Timeframe.MO1)
    return starts + timeframe.duration


def is_aligned(times: pd.DatetimeIndex, timeframe: Timeframe) -> bool:
    """Whether every time is a bucket start of ``timeframe``, so resampling is exact."""
    return bool((bucket_starts(times, timeframe) == times).all())


def can_resample(source: Timeframe, target: Timeframe) -> bool:
    """Whether whole ``source`` bars tile every ``target`` bucket.

    Fixed lengths must divide; weeks and months need bars of a day or less (a week
    straddles months, so weekly bars cannot make monthly ones).
    """
    if target.duration <= source.duration:
        return False
    if target in _CALENDAR:
        return source.duration <= Timeframe.D1.duration
    return target.duration % source.duration == pd.Timedelta(0)


def resample(
    frame: pd.DataFrame, source: Timeframe, target: Timeframe
) -> tuple[pd.DataFrame, pd.DatetimeIndex]:
    """Aggregate aligned ``source`` bars to ``target`` bars, with each one's completion time.

    Open is the first open, high the highest high, low the lowest low, close the
    last close and volume the sum. The second value is, per target bar, the label
    of the last source bar its bucket can hold: the earliest ``as_of`` at which
    the bar is final. A caller must drop bars completing after its ``as_of``.
    """
    starts = bucket_starts(frame.index, target)
    grouped = frame.groupby(starts, sort=True)
    coarse = pd.DataFrame(
        {
            "open": grouped["open"].first(),
            "high": grouped["high"].max(),
            "low": grouped["low"].min(),
            "close": grouped["close"].last(),
            "volume": grouped["volume"].sum(),
        }
    )
    coarse.index = pd.DatetimeIndex(coarse.index, name="time")
    complete_at = bucket_ends(coarse.index, target) - source.duration
    return coarse, complete_at
