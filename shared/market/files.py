"""Load OHLCV bars from a local CSV or Parquet file into a validated bar frame.

Layouts accepted, so exports from common tools load unchanged:

- column names in any case, with surrounding spaces ignored; extra columns
  (``Adj Close``, ``Dividends``...) are ignored, and ``Close`` is used as is;
- the time in a column named ``Date``, ``Datetime``, ``time`` or ``timestamp``, or
  in the first column when it is unnamed (pandas' ``to_csv`` index, as in the
  backtesting.py files) or, for Parquet, in the index;
- QuantAgent's ``Datetime,Close,High,Low,Open,Volume`` (column order is free).

Times: text is parsed as ISO 8601, other formats by pandas' inference (which
reads 01/02/2024 month first). A time with an offset is converted to UTC and a
naive one is taken to *be* UTC, the one explicit rule for files. Whole numbers
from 19000101 to 21001231 are dates written YYYYMMDD; other numbers are Unix
epoch seconds, or milliseconds when above 1e11.

Volume is optional: a file without it gets volume 0 on every bar and a logged
warning, since volume-based indicators are meaningless for it. Empty cells are
never filled: validation rejects them, naming the row.
"""

from __future__ import annotations

import importlib
import logging
from pathlib import Path

import numpy as np
import pandas as pd

from shared.errors import ConfigError, InvalidInput
from shared.extras import install_command
from shared.market.bars import COLUMNS, Timeframe, validate_bars

log = logging.getLogger(__name__)

TIME_COLUMNS = ("date", "datetime", "time", "timestamp")
CSV_SUFFIXES = (".csv", ".csv.gz")
PARQUET_SUFFIXES = (".parquet", ".pq")
_EPOCH_MS_ABOVE = 1e11  # 1e11 s is the year 5138; 1e11 ms is 1973
_YYYYMMDD = (19000101, 21001231)  # as epoch seconds these are all in August-September 1970


def is_bar_file(path: Path) -> bool:
    """Whether ``path`` has a suffix ``load_bar_file`` reads."""
    return path.name.lower().endswith(CSV_SUFFIXES + PARQUET_SUFFIXES)


def load_bar_file(
    path: str | Path, *, timeframe: Timeframe | None = None
) -> tuple[pd.DataFrame, Timeframe]:
    """The file's bars as a validated frame (see ``bars_to_frame``) and their timeframe.

    ``timeframe`` None infers it from the typical spacing of the bars; either way
    no two bars may be closer than one bar. Errors are ``InvalidInput`` whose field
    is the file's path.
    """
    path = Path(path)
    field = str(path)
    frame = read_bar_frame(path)
    validate_bars(frame, field=field)
    return frame, _check_timeframe(frame, timeframe, field)


def read_bar_frame(path: str | Path) -> pd.DataFrame:
    """The file's rows as a bar frame, parsed but not yet validated or checked for spacing.

    For callers with their own rules on what a bad row means (the evaluation's
    loader scores a window with a bad row as failed instead of stopping).
    """
    path = Path(path)
    return _normalise(_read_table(path, str(path)), str(path))


def _read_table(path: Path, field: str) -> pd.DataFrame:
    if not path.is_file():
        raise InvalidInput(field, "no such file", fix="Check the path.")
    name = path.name.lower()
    if name.endswith(CSV_SUFFIXES):
        try:
            return pd.read_csv(path)
        except (ValueError, UnicodeDecodeError) as error:  # pandas parser errors are ValueError
            raise InvalidInput(field, f"not a readable CSV file ({error})") from None
    if name.endswith(PARQUET_SUFFIXES):
        try:
            importlib.import_module("pyarrow")
        except ImportError:
            raise ConfigError(
                "pyarrow",
                f"reading the Parquet file {path} needs pyarrow, which is not installed",
                fix=f"Install the parquet extra (`{install_command('parquet')}`), or convert the file to CSV.",
            ) from None
        try:
            table = pd.read_parquet(path, engine="pyarrow")
        except (OSError, ValueError) as error:  # pyarrow's ArrowInvalid is a ValueError
            raise InvalidInput(field, f"not a readable Parquet file ({error})") from None
        return table if isinstance(table.index, pd.RangeIndex) else table.reset_index()
    raise InvalidInput(
        field, f"unsupported file type {path.suffix!r}", fix="Use a .csv or .parquet file."
    )


def _normalise(raw: pd.DataFrame, field: str) -> pd.DataFrame:
    """The raw table as a bar frame: UTC ``time`` index and float ``COLUMNS``."""
    original = [str(column) for column in raw.columns]
    names = [column.strip().lower() for column in original]
    duplicated = sorted({name for name in names if names.count(name) > 1})
    if duplicated:
        raise InvalidInput(
            field,
            f"columns {', '.join(duplicated)} appear more than once (names ignore case)",
            fix="Keep one column of each name.",
        )
    table = raw.set_axis(names, axis="columns")
    time_column = _time_column(names, field)
    missing = [column for column in COLUMNS[:4] if column not in names]
    if time_column is None:
        missing.insert(0, "a time column (Date, Datetime, time or timestamp)")
    if missing:
        raise InvalidInput(
            field,
            f"missing {', '.join(missing)}; found columns: {', '.join(original) or 'none'}",
            fix="Provide time, open, high, low, close (any case) and optionally volume.",
        )
    if table.empty:
        raise InvalidInput(field, "has a header but no rows", fix="Use a file with bars in it.")
    frame = pd.DataFrame(
        {column: _numbers(table, column, field) for column in COLUMNS if column in names},
        index=pd.DatetimeIndex(_times(table[time_column], field), name="time"),
    )
    if "volume" not in names:
        log.warning("%s has no volume column: volume is 0 on every bar", field)
        frame["volume"] = 0.0
    return frame


def _time_column(names: list[str], field: str) -> str | None:
    found = [name for name in names if name in TIME_COLUMNS]
    if len(found) > 1:
        raise InvalidInput(
            field, f"several time columns ({', '.join(found)})", fix="Keep exactly one."
        )
    if found:
        return found[0]
    first = names[0] if names else None
    if first is not None and (first in ("", "index") or first.startswith("unnamed")):
        return first
    return None


def _times(column: pd.Series, field: str) -> pd.Series:
    """Parse times to UTC, naming the first value that is not a time."""
    if pd.api.types.is_numeric_dtype(column):
        present = column.dropna()
        if ((present % 1 == 0) & present.between(*_YYYYMMDD)).all():
            digits = column.astype("Int64").astype("string")
            times = pd.to_datetime(digits, format="%Y%m%d", utc=True, errors="coerce")
        else:
            unit = "ms" if column.abs().max() > _EPOCH_MS_ABOVE else "s"
            times = pd.to_datetime(column, unit=unit, utc=True, errors="coerce")
    else:
        times = pd.to_datetime(column, utc=True, errors="coerce", format="ISO8601")
        if times.isna().any():
            times = pd.to_datetime(column, utc=True, errors="coerce")
    _reject_unparsed(column, times, field, "a time")
    return times


def _numbers(table: pd.DataFrame, column: str, field: str) -> np.ndarray:
    """The column as floats; text that is not a number is an error, an empty cell stays NaN."""
    values = pd.to_numeric(table[column], errors="coerce").astype("float64")
    _reject_unparsed(table[column], values, field, f"a number in column {column}")
    return values.to_numpy()  # positional: the frame gets the time index


def _reject_unparsed(raw: pd.Series, parsed: pd.Series, field: str, what: str) -> None:
    unparsed = (parsed.isna() & raw.notna()).to_numpy()
    if unparsed.any():
        row = int(unparsed.argmax())
        raise InvalidInput(field, f"row {row}: {raw.iloc[row]!r} is not {what}")


def _check_timeframe(frame: pd.DataFrame, timeframe: Timeframe | None, field: str) -> Timeframe:
    """The declared or inferred timeframe, once no bars are closer than one bar apart."""
    steps = frame.index.to_series().diff().iloc[1:]
    if steps.empty:
        if timeframe is None:
            raise InvalidInput(
                "timeframe",
                f"{field} has a single bar, so its timeframe cannot be inferred",
                fix=f"Pass timeframe= one of: {', '.join(Timeframe)}.",
            )
        return timeframe
    resolved = timeframe or _infer_timeframe(steps.median(), field)
    shortest = pd.Timedelta(days=28) if resolved is Timeframe.MO1 else resolved.duration
    too_close = (steps < shortest).to_numpy()
    if too_close.any():
        row = int(too_close.argmax()) + 1
        gap = steps.iloc[row - 1].to_pytimedelta()
        raise InvalidInput(
            field,
            f"row {row} at {frame.index[row].isoformat()} is only {gap} after the previous bar, "
            f"less than one {resolved} bar",
            fix="Pass the file's real timeframe, or drop the extra rows.",
        )
    return resolved


def _infer_timeframe(typical: pd.Timedelta, field: str) -> Timeframe:
    """The timeframe whose bar length is the typical spacing (28-31 days for months)."""
    if pd.Timedelta(days=28) <= typical <= pd.Timedelta(days=31):
        return Timeframe.MO1
    for timeframe in Timeframe:
        if typical == timeframe.duration:
            return timeframe
    raise InvalidInput(
        "timeframe",
        f"{field}: the typical spacing of its bars, {typical.to_pytimedelta()}, "
        "is no supported timeframe",
        fix=f"Pass timeframe= one of: {', '.join(Timeframe)}.",
    )
