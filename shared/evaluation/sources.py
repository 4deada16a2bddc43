"""Where benchmark windows come from: QuantAgent's directory layout, or cuts from a bar source.

- ``BenchmarkDirectory``: ``<dir>/<asset>/<ASSET>_<tf>_<n>.csv``, each file one
  window with the header ``Datetime,Close,High,Low,Open,Volume`` (QuantAgent's
  benchmark ships 100 bars a file). Every error names the file, and the row or
  column when there is one. A layout error (no such directory, no window files,
  a file name that is not ``<ASSET>_<tf>_<n>.csv``, a header without the
  benchmark's columns, two files for one window, every window invalid) fails the
  whole input at once: the directory is not a benchmark. A bad row (a price that
  is not a number, an empty cell, high below low, times out of order, too few
  bars, an empty file) makes only its window an ``InvalidWindow``, scored as
  failed. Uneven spacing (DST shifts, missing bars) is data, not an error: the
  window keeps its bars and the scorer notes the spacing.
- ``CutWindows``: ``count`` non-overlapping windows per symbol from any source
  (bundled, csv, yfinance), placed by ``seed``: the same data and seed give the
  same windows, so an evaluation can be repeated exactly.

``load_windows`` takes either and returns the windows (valid or not) sorted by
asset, timeframe and position.
"""

from __future__ import annotations

import csv
import random
import re
from collections.abc import Sequence
from pathlib import Path
from typing import Annotated, Literal

from pydantic import BaseModel, Field

from shared.errors import InvalidInput
from shared.evaluation.windows import (
    MAX_ASSET_LENGTH,
    MAX_WINDOW_BARS,
    MIN_WINDOW_BARS,
    InvalidWindow,
    Window,
    is_one_bar,
)
from shared.market.bars import Bar, Timeframe, frame_to_bars
from shared.market.files import read_bar_frame
from shared.market.sources import open_source

BENCHMARK_COLUMNS = ("Datetime", "Close", "High", "Low", "Open", "Volume")
BENCHMARK_HEADER = ",".join(BENCHMARK_COLUMNS)
_FILE_NAME = re.compile(r"^(?P<asset>.+)_(?P<timeframe>[^_]+)_(?P<number>\d+)\.csv$", re.IGNORECASE)
_LAYOUT = "<asset>/<ASSET>_<tf>_<n>.csv"
MAX_CUT_WINDOWS = 2000
"""Per symbol; the benchmark itself has 1,600 windows in all."""


class BenchmarkDirectory(BaseModel):
    """A directory in QuantAgent's benchmark layout, read by the tools worker."""

    kind: Literal["directory"] = "directory"
    path: str = Field(min_length=1, description=f"holds {_LAYOUT} files")


class CutWindows(BaseModel):
    """Windows cut from a bar source: ``count`` per symbol, placed by ``seed``."""

    kind: Literal["cut"] = "cut"
    symbols: list[Annotated[str, Field(min_length=1, max_length=MAX_ASSET_LENGTH)]] = Field(
        min_length=1
    )
    timeframe: Timeframe
    count: int = Field(ge=1, le=MAX_CUT_WINDOWS, description="windows per symbol")
    seed: int = Field(0, description="where the windows fall; same seed, same windows")
    bars: int = Field(100, ge=MIN_WINDOW_BARS, le=MAX_WINDOW_BARS, description="bars per window")
    source: Literal["bundled", "csv", "yfinance"] = "bundled"
    csv_path: str | None = Field(None, description="for source=csv: a file or a directory")


WindowSpec = Annotated[BenchmarkDirectory | CutWindows, Field(discriminator="kind")]
"""Either way of naming an evaluation's windows."""


def load_windows(spec: BenchmarkDirectory | CutWindows) -> list[Window | InvalidWindow]:
    """The windows ``spec`` names, validated, sorted by asset, timeframe and time."""
    if isinstance(spec, BenchmarkDirectory):
        return load_benchmark_directory(spec.path)
    return [*cut_windows(spec)]


# --- QuantAgent's directory layout -------------------------------------------------------


def load_benchmark_directory(path: str | Path) -> list[Window | InvalidWindow]:
    """Every ``<asset>/<ASSET>_<tf>_<n>.csv`` window under ``path``, bad rows as invalid windows."""
    root = Path(path)
    if not root.is_dir():
        raise InvalidInput(
            "windows.path", f"{root} is not a directory", fix=f"Point at a directory of {_LAYOUT}."
        )
    if any(root.glob("*.csv")):
        raise InvalidInput(
            "windows.path",
            f"{root} holds CSV files directly, but windows live one folder down ({_LAYOUT})",
            fix="Point at the folder that holds the asset folders.",
        )
    files = sorted(root.glob("*/*.csv"), key=_sort_key)
    if not files:
        raise InvalidInput(
            "windows.path", f"{root} holds no {_LAYOUT} files", fix="Check the directory."
        )
    windows: list[Window | InvalidWindow] = []
    seen: dict[str, Path] = {}
    for file in files:
        window = load_benchmark_file(file)
        key = window.window_id.upper()
        if key in seen:
            raise InvalidInput(
                str(file), f"names the same window as {seen[key]}", fix="Rename one of them."
            )
        seen[key] = file
        windows.append(window)
    invalid = [window for window in windows if isinstance(window, InvalidWindow)]
    if len(invalid) == len(windows):
        raise InvalidInput(
            "windows.path",
            f"none of the {len(windows)} windows in {root} can be analysed; "
            f"the first, {invalid[0].window_id}: {invalid[0].error}",
            fix="Correct the files, or point at a benchmark with valid windows.",
        )
    return windows


def _sort_key(file: Path) -> tuple[str, str, int, str]:
    """Asset, timeframe, then window number as a number (so 2 comes before 10)."""
    match = _FILE_NAME.match(file.name)
    if match is None:
        return (file.parent.name.upper(), "", 0, file.name)
    return (file.parent.name.upper(), match["timeframe"].lower(), int(match["number"]), file.name)


def load_benchmark_file(file: Path) -> Window | InvalidWindow:
    """One window file: its name gives asset and timeframe, its header must be the benchmark's.

    Layout errors raise ``InvalidInput``; a bad row gives an ``InvalidWindow`` with the reason.
    """
    field = str(file)
    match = _FILE_NAME.match(file.name)
    if match is None:
        raise InvalidInput(
            field,
            f"the file name is not <ASSET>_<tf>_<n>.csv (e.g. {file.parent.name}_4h_1.csv)",
            fix="Rename it, or move it out of the benchmark directory.",
        )
    asset = file.parent.name
    if len(asset) > MAX_ASSET_LENGTH:
        raise InvalidInput(
            field, f"asset folder name {asset!r} is longer than {MAX_ASSET_LENGTH} characters"
        )
    if match["asset"].upper() != asset.upper():
        raise InvalidInput(
            field,
            f"the file name says asset {match['asset']!r} but it is in folder {asset!r}",
            fix="Move it to the folder of its asset.",
        )
    timeframe = Timeframe.parse(match["timeframe"].lower(), field=field)
    window_id, asset = file.stem, asset.upper()
    _check_header(file)
    try:
        bars = frame_to_bars(read_bar_frame(file), field=field)
        _check_length(bars, field)
        _check_typical_step(bars, timeframe, field)
    except InvalidInput as error:
        return InvalidWindow(
            window_id=window_id, asset=asset, timeframe=timeframe, error=str(error)
        )
    return Window(window_id=window_id, asset=asset, timeframe=timeframe, bars=bars)


def _check_header(file: Path) -> None:
    """Every benchmark column must be there (any order, any case): Volume is not optional.

    An empty file or one that is not text has no header to judge: reading its rows
    reports it, as a broken window rather than a directory in the wrong layout.
    """
    try:
        with file.open(newline="", encoding="utf-8-sig") as handle:
            header = next(csv.reader(handle), None)
    except (UnicodeDecodeError, csv.Error):
        return
    if header is None:
        return
    present = {column.strip().lower() for column in header}
    missing = [column for column in BENCHMARK_COLUMNS if column.lower() not in present]
    if missing:
        raise InvalidInput(
            str(file),
            f"missing column{'s' if len(missing) > 1 else ''} {', '.join(missing)}; "
            f"the header is {','.join(header) or '(empty)'}",
            fix=f"Use the benchmark header {BENCHMARK_HEADER}.",
        )


def _check_length(bars: Sequence[Bar], field: str) -> None:
    if not MIN_WINDOW_BARS <= len(bars) <= MAX_WINDOW_BARS:
        raise InvalidInput(
            field,
            f"has {len(bars)} bars; a window needs {MIN_WINDOW_BARS} to {MAX_WINDOW_BARS} "
            "(the agent sees all but the last 3, and its trend chart needs 50)",
            fix="Use windows of 100 bars, as the benchmark does.",
        )


def _check_typical_step(bars: Sequence[Bar], timeframe: Timeframe, field: str) -> None:
    """Most steps shorter than one bar mean the file name's timeframe is not the bars' own.

    One short step is a DST shift or an extra bar, and is kept; a window of 1h bars
    named 4h would show the agent a chart four times too short.
    """
    steps = [later.time - earlier.time for earlier, later in zip(bars, bars[1:], strict=False)]
    short = [
        step for step in steps if step < timeframe.duration and not is_one_bar(step, timeframe)
    ]
    if len(short) * 2 > len(steps):
        typical = sorted(steps)[len(steps) // 2]
        raise InvalidInput(
            field,
            f"its bars are typically {typical} apart, shorter than one {timeframe} bar "
            f"({timeframe.duration}), the timeframe its name gives",
            fix="Name the file after its bars' real timeframe.",
        )


# --- windows cut from a source -----------------------------------------------------------


def cut_windows(spec: CutWindows) -> list[Window]:
    """``spec.count`` non-overlapping windows of each symbol, placed by ``spec.seed``.

    The symbol's history is split into consecutive slots of ``spec.bars`` bars
    after a seeded offset; ``count`` slots are drawn without replacement. Windows
    never overlap, so no held-out bar of one window is visible in another.
    """
    options = {"files": spec.csv_path} if spec.source == "csv" else {}
    if spec.source == "csv" and not spec.csv_path:
        raise InvalidInput("windows.csv_path", "source csv needs a file", fix="Set csv_path.")
    source = open_source(spec.source, **options)
    windows: list[Window] = []
    for symbol in spec.symbols:
        history = source.read(symbol, spec.timeframe)
        rng = random.Random(f"{spec.seed}:{symbol.upper()}:{spec.timeframe}")
        slots = len(history) // spec.bars
        if spec.count > slots:
            raise InvalidInput(
                "windows.count",
                f"{symbol} has {len(history)} {spec.timeframe} bars: room for {slots} windows "
                f"of {spec.bars}, not {spec.count}",
                fix=f"Ask for at most {slots}, shorter windows or a finer timeframe.",
            )
        offset = rng.randrange(len(history) - slots * spec.bars + 1)
        for slot in sorted(rng.sample(range(slots), spec.count)):
            bars = history[offset + slot * spec.bars : offset + (slot + 1) * spec.bars]
            window_id = f"{symbol.upper()}_{spec.timeframe}_{bars[0].time:%Y%m%dT%H%M}"
            windows.append(
                Window(
                    window_id=window_id, asset=symbol.upper(), timeframe=spec.timeframe, bars=bars
                )
            )
    return sorted(windows, key=lambda w: (w.asset, w.bars[0].time))
