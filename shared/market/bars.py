"""OHLCV bars: the one price record every source returns and every analysis reads.

A ``Bar`` is labelled with the *start* of its period, in UTC: the daily bar of
2024-01-02 has ``time`` 2024-01-02T00:00:00Z whatever its exchange, and the
monthly bar of January 2024 has 2024-01-01T00:00:00Z.

A ``Bar`` checks what one field can check alone (a timezone, finite positive
prices, volume >= 0). ``validate_bars`` checks what needs several fields or the
neighbouring rows, and names the offending row, because a sequence of bars is
only usable for analysis as a whole.

Workflow code imports ``Bar`` and ``Timeframe`` as contract types, so pandas is
imported inside the frame helpers only: importing this module stays cheap in
Temporal's workflow sandbox.
"""

from __future__ import annotations

from collections.abc import Iterator, Sequence
from datetime import UTC, datetime, timedelta
from enum import StrEnum
from typing import TYPE_CHECKING, Any

from pydantic import BaseModel, ConfigDict, Field, field_validator

from shared.errors import InvalidInput

if TYPE_CHECKING:
    import numpy as np
    import pandas as pd

COLUMNS = ("open", "high", "low", "close", "volume")
"""The columns of a bar frame, in order."""


class Timeframe(StrEnum):
    """The bar lengths quantdesk supports; the values are the names requests use."""

    M1 = "1m"
    M5 = "5m"
    M15 = "15m"
    M30 = "30m"
    H1 = "1h"
    H4 = "4h"
    D1 = "1d"
    W1 = "1wk"
    MO1 = "1mo"

    @property
    def duration(self) -> timedelta:
        """The length of one bar; nominal (30 days) for ``1mo``, whose months vary."""
        return _DURATIONS[self]

    @classmethod
    def parse(cls, value: str, *, field: str = "timeframe") -> Timeframe:
        """The timeframe named ``value``, or an error listing the supported ones."""
        try:
            return cls(value)
        except ValueError:
            raise InvalidInput(
                field, f"unknown timeframe {value!r}", fix=f"Use one of: {', '.join(cls)}."
            ) from None


_DURATIONS = {
    Timeframe.M1: timedelta(minutes=1),
    Timeframe.M5: timedelta(minutes=5),
    Timeframe.M15: timedelta(minutes=15),
    Timeframe.M30: timedelta(minutes=30),
    Timeframe.H1: timedelta(hours=1),
    Timeframe.H4: timedelta(hours=4),
    Timeframe.D1: timedelta(days=1),
    Timeframe.W1: timedelta(weeks=1),
    Timeframe.MO1: timedelta(days=30),
}


class Bar(BaseModel):
    """One OHLCV bar. Immutable, so cached bars can be handed out safely."""

    model_config = ConfigDict(frozen=True)

    time: datetime = Field(
        description="start of the bar's period, timezone-aware, normalised to UTC"
    )
    open: float = Field(gt=0, allow_inf_nan=False, description="first traded price")
    high: float = Field(gt=0, allow_inf_nan=False, description="highest price in the period")
    low: float = Field(gt=0, allow_inf_nan=False, description="lowest price in the period")
    close: float = Field(gt=0, allow_inf_nan=False, description="last traded price")
    volume: float = Field(
        ge=0, allow_inf_nan=False, description="amount traded; its unit depends on the source"
    )

    @field_validator("time")
    @classmethod
    def _utc(cls, value: datetime) -> datetime:
        """Reject naive times: guessing their zone would shift every bar silently."""
        if value.tzinfo is None or value.utcoffset() is None:
            raise ValueError(
                "naive datetime; give a timezone, e.g. 2024-01-02T00:00:00Z "
                "(file sources localise naive times to UTC themselves)"
            )
        return value.astimezone(UTC)


def bars_to_frame(bars: Sequence[Bar]) -> pd.DataFrame:
    """The bars as a frame: a UTC ``DatetimeIndex`` named ``time`` and the ``COLUMNS``."""
    import pandas as pd

    index = pd.DatetimeIndex([bar.time for bar in bars], name="time", dtype="datetime64[us, UTC]")
    data = {column: [getattr(bar, column) for bar in bars] for column in COLUMNS}
    return pd.DataFrame(data, index=index, columns=list(COLUMNS), dtype="float64")


def frame_to_bars(frame: pd.DataFrame, *, field: str = "frame") -> list[Bar]:
    """The rows of a bar frame as bars, after ``validate_bars`` so errors name the row."""
    validate_bars(frame, field=field)
    rows = zip(frame.index.to_pydatetime(), *(frame[column] for column in COLUMNS), strict=True)
    return [
        Bar(time=time, open=open_, high=high, low=low, close=close, volume=volume)
        for time, open_, high, low, close, volume in rows
    ]


def validate_bars(
    bars: Sequence[Bar] | pd.DataFrame, *, min_bars: int | None = None, field: str = "bars"
) -> None:
    """Raise ``InvalidInput`` naming the first bad row, or return if the bars are usable.

    Checks, in order: enough bars (``min_bars``), times present, timezone-aware,
    strictly increasing; prices finite and positive; high >= low, high >= max(open,
    close) and low <= min(open, close); volume finite and >= 0. Accepts a frame as produced by
    ``bars_to_frame`` so file loaders can check data before it becomes ``Bar``.
    """
    import pandas as pd

    frame = bars if isinstance(bars, pd.DataFrame) else bars_to_frame(bars)
    if min_bars is not None and len(frame) < min_bars:
        raise InvalidInput(
            field,
            f"the analysis needs at least {min_bars} bars but {len(frame)} were given",
            fix="Ask for a longer lookback, a later as_of or a finer timeframe.",
        )
    missing = [column for column in COLUMNS if column not in frame.columns]
    if missing:
        raise InvalidInput(field, f"missing columns {', '.join(missing)}")
    _check_times(frame.index, field)
    for mask, problem, value, limit, fix in _value_checks(frame):
        if mask.any():
            row = int(mask.argmax())
            quoted = str(float(value[row]))
            if limit is not None:
                quoted += f" vs {float(limit[row])}"
            raise InvalidInput(
                field,
                f"row {row} at {frame.index[row].isoformat()}: {problem} ({quoted}){_more(mask)}",
                fix=fix,
            )


_PRICE_FIX = "Correct or drop the row: prices must be finite and positive."
_RANGE_FIX = "Correct or drop the row: high must be >= open and close, low <= both."
_VOLUME_FIX = "Correct or drop the row: volume must be a finite number >= 0."


def _value_checks(frame: pd.DataFrame) -> Iterator[tuple[np.ndarray, str, np.ndarray, Any, str]]:
    """(bad-row mask, problem, value, limit or None, fix) for each value rule, in order."""
    import numpy as np

    for column in COLUMNS[:4]:
        values = frame[column].to_numpy(dtype="float64")
        yield ~np.isfinite(values), f"{column} is not finite", values, None, _PRICE_FIX
        yield values <= 0, f"{column} is not positive", values, None, _PRICE_FIX
    open_, high, low, close = (frame[c].to_numpy(dtype="float64") for c in COLUMNS[:4])
    top, bottom = np.maximum(open_, close), np.minimum(open_, close)
    yield high < low, "high is below low", high, low, _RANGE_FIX
    yield high < top, "high is below max(open, close)", high, top, _RANGE_FIX
    yield low > bottom, "low is above min(open, close)", low, bottom, _RANGE_FIX
    volume = frame["volume"].to_numpy(dtype="float64")
    yield ~np.isfinite(volume), "volume is not finite", volume, None, _VOLUME_FIX
    yield volume < 0, "volume is negative", volume, None, _VOLUME_FIX


def _check_times(index: pd.Index, field: str) -> None:
    """Times must be real, zoned instants in strictly increasing order."""
    import numpy as np
    import pandas as pd

    if not isinstance(index, pd.DatetimeIndex):
        raise InvalidInput(field, f"times must be datetimes, got a {type(index).__name__}")
    if index.tz is None:
        raise InvalidInput(
            field, "times have no timezone", fix="Localise them, e.g. frame.tz_localize('UTC')."
        )
    missing = np.asarray(index.isna())
    if missing.any():
        row = int(missing.argmax())
        raise InvalidInput(field, f"row {row}: time is missing", fix="Drop or date the row.")
    steps = np.diff(index.asi8)
    out_of_order = steps <= 0
    if out_of_order.any():
        row = int(out_of_order.argmax()) + 1
        problem = "the same as" if steps[row - 1] == 0 else "earlier than"
        raise InvalidInput(
            field,
            f"row {row} at {index[row].isoformat()}: time is {problem} row {row - 1}"
            f"{_more(out_of_order)}",
            fix="Sort the bars by time and drop duplicates.",
        )


def _more(mask: np.ndarray) -> str:
    """How many other rows share the problem, so one message shows its extent."""
    others = int(mask.sum()) - 1
    if not others:
        return ""
    return f"; {others} other rows have it too" if others > 1 else "; 1 other row has it too"
