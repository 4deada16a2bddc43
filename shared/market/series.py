"""One symbol's bars at one timeframe, and the as-of window every read goes through.

Sources differ in where bars come from; the point-in-time rules live here once:
no bar labelled after ``as_of`` is ever returned, resampled bars only once
complete, and ``lookback`` counts back from ``as_of``.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from datetime import datetime

import pandas as pd

from shared.errors import InvalidInput
from shared.market.bars import Bar, Timeframe, frame_to_bars, validate_bars
from shared.market.resample import can_resample, is_aligned, resample


def parse_as_of(as_of: datetime | None) -> pd.Timestamp | None:
    """``as_of`` as a UTC timestamp; a naive one is refused rather than guessed."""
    if as_of is None:
        return None
    if not isinstance(as_of, datetime):
        raise InvalidInput("as_of", f"expected a datetime, got {type(as_of).__name__}")
    if as_of.tzinfo is None or as_of.utcoffset() is None:
        raise InvalidInput(
            "as_of",
            f"{as_of.isoformat()} has no timezone",
            fix="Pass a timezone-aware datetime, e.g. datetime(2024, 1, 2, tzinfo=UTC).",
        )
    return pd.Timestamp(as_of).tz_convert("UTC")


def unknown_symbol(symbol: str, available: Sequence[str]) -> InvalidInput:
    """The error for a symbol a source does not have, listing the ones it has."""
    return InvalidInput(
        "symbol", f"unknown symbol {symbol!r}", fix=f"Use one of: {', '.join(available)}."
    )


def check_lookback(lookback: int | None) -> None:
    """A lookback counts bars, so it must be a positive whole number."""
    if lookback is None:
        return
    if isinstance(lookback, bool) or not isinstance(lookback, int) or lookback < 1:
        raise InvalidInput(
            "lookback", f"{lookback!r} is not a positive number of bars", fix="Use 1 or more."
        )


def resample_targets(base: Timeframe, times: pd.DatetimeIndex) -> tuple[Timeframe, ...]:
    """What bars at ``base`` and ``times`` can serve: their own timeframe and exact coarser ones."""
    if not is_aligned(times, base):
        return (base,)
    return (base, *(target for target in Timeframe if can_resample(base, target)))


@dataclass(frozen=True)
class BarSeries:
    """The full history of one symbol at one timeframe, ready to window by ``as_of``.

    ``complete_at[i]`` is the earliest ``as_of`` at which row ``i`` of ``frame`` is final:
    its own time for native bars, the label of the last bar its bucket can hold for
    resampled ones.

    The history stays a validated frame, and only a read's window becomes ``Bar`` objects:
    sources cache series for many symbols, and 10,000 daily bars as models are 20,000
    objects the garbage collector walks. A worker of a 500-name desk held 1.5 million of
    them, and its full collections stopped workflow tasks for 1.8 s, close to the 2 s after
    which Temporal fails a task as a deadlock.
    """

    symbol: str
    timeframe: Timeframe
    frame: pd.DataFrame
    complete_at: pd.DatetimeIndex
    data_start: pd.Timestamp
    data_end: pd.Timestamp

    def window(self, as_of: pd.Timestamp | None, lookback: int | None) -> list[Bar]:
        """The last ``lookback`` (default all) bars complete at ``as_of`` (default latest).

        An ``as_of`` past the data's end reads as the end: the data cannot say
        whether a bucket still forming at its last bar was ever completed.
        """
        cutoff = self.data_end if as_of is None else min(as_of, self.data_end)
        if self.empty:
            raise InvalidInput(
                "timeframe",
                f"{self.symbol} has no complete {self.timeframe} bar: its data covers only "
                f"{self.data_start.isoformat()} to {self.data_end.isoformat()}",
                fix="Use a finer timeframe.",
            )
        first = self.complete_at[0]
        if cutoff < first:
            if first == self.data_start:
                problem = f"first {self.timeframe} bar, at {first.isoformat()} (the data's start)"
            else:
                problem = (
                    f"first complete {self.timeframe} bar, complete at {first.isoformat()} "
                    f"(the data starts {self.data_start.isoformat()})"
                )
            raise InvalidInput(
                "as_of",
                f"{cutoff.isoformat()} is before {self.symbol}'s {problem}",
                fix=f"Use an as_of on or after {first.isoformat()}.",
            )
        end = int(self.complete_at.searchsorted(cutoff, side="right"))
        start = 0 if lookback is None else max(0, end - lookback)
        return frame_to_bars(self.frame.iloc[start:end], field=self.symbol)

    @property
    def empty(self) -> bool:
        """No complete bar at this timeframe (the data is shorter than one bucket)."""
        return self.frame.empty


def build_series(
    symbol: str, frame: pd.DataFrame, base: Timeframe, timeframe: Timeframe
) -> BarSeries:
    """The ``timeframe`` series of a validated, non-empty ``base`` frame, resampled if coarser.

    Raises ``InvalidInput`` on ``timeframe`` when the frame cannot serve it, saying
    which timeframes it can.
    """
    supported = resample_targets(base, frame.index)
    if timeframe not in supported:
        why = f"its bars are {base}"
        if not is_aligned(frame.index, base):
            why += f" not starting on whole {base} periods of UTC time, so they cannot be resampled"
        raise InvalidInput(
            "timeframe",
            f"{symbol} has no {timeframe} bars ({why})",
            fix=f"Use one of: {', '.join(supported)}.",
        )
    if timeframe is base:
        bars_frame, complete_at = frame, frame.index
    else:
        bars_frame, complete_at = resample(frame, base, timeframe)
        # Buckets cut by either end of the data would be partial bars: never serve them.
        whole = (bars_frame.index >= frame.index[0]) & (complete_at <= frame.index[-1])
        bars_frame, complete_at = bars_frame[whole], complete_at[whole]
    return BarSeries(
        symbol=symbol,
        timeframe=timeframe,
        frame=_validated(bars_frame, symbol),
        complete_at=complete_at,
        data_start=frame.index[0],
        data_end=frame.index[-1],
    )


def _validated(frame: pd.DataFrame, symbol: str) -> pd.DataFrame:
    """``frame`` once ``validate_bars`` passes it, so a bad row is named when the series is
    built, not on the first read that reaches it."""
    validate_bars(frame, field=symbol)
    return frame
