"""Where bars come from: the ``BarSource`` interface, its implementations, a factory by name.

Point in time, for every source: ``read(..., as_of=t)`` returns only bars
labelled at or before ``t`` (a bar is labelled with its period's start), and the
analysis stands at the close of the last one. A caller working in wall-clock
time who must not see a bar before it closes passes ``as_of = now - duration``.
Coarser timeframes resampled from finer bars appear only once complete.

Workflows name a source by string: ``open_source("bundled")``,
``open_source("csv", files="prices/aapl.csv")``, ``open_source("yfinance")``.
"""

from __future__ import annotations

import functools
import inspect
from abc import abstractmethod
from collections.abc import Callable, Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import pandas as pd

from shared.data.real import INDEX_FILES, load_index
from shared.errors import InvalidInput
from shared.market.bar_source import BarQuery, BarSource
from shared.market.bars import Bar, Timeframe
from shared.market.files import CSV_SUFFIXES, PARQUET_SUFFIXES, is_bar_file, load_bar_file
from shared.market.resample import bucket_starts
from shared.market.series import (
    BarSeries,
    build_series,
    resample_targets,
    unknown_symbol,
)
from shared.market.yahoo import YFinanceSource

DATA_DIR = Path(__file__).with_name("data")


class FrameSource(BarSource):
    """A source holding each symbol's whole history in memory: load once, window per read.

    ``series_cache`` maps (symbol, timeframe) to built series; passing a shared
    dict shares them between instances.
    """

    def __init__(self, series_cache: dict[tuple[str, Timeframe], BarSeries]) -> None:
        self._series_cache = series_cache

    @abstractmethod
    def symbols(self) -> tuple[str, ...]:
        """The symbols ``read`` accepts, upper-case and sorted."""

    @abstractmethod
    def _base(self, symbol: str) -> tuple[pd.DataFrame, Timeframe]:
        """The validated frame of a known symbol and its native timeframe, cached."""

    def timeframes(self, symbol: str) -> tuple[Timeframe, ...]:
        """The native timeframe of ``symbol`` first, then the coarser ones it resamples to."""
        frame, base = self._base(self._known(symbol))
        return resample_targets(base, frame.index)

    def read_query(self, query: BarQuery) -> list[Bar]:
        key, wanted = self._known(query.symbol), query.timeframe
        series = self._series_cache.get((key, wanted))
        if series is None:
            frame, base = self._base(key)
            series = build_series(key, frame, base, wanted)
            self._series_cache[(key, wanted)] = series
        return series.window(query.cutoff, query.lookback)

    def _known(self, symbol: str) -> str:
        key = symbol.upper()
        if key not in self.symbols():
            raise unknown_symbol(symbol, self.symbols())
        return key


@dataclass(frozen=True)
class _Dataset:
    file: str
    timeframe: Timeframe
    month_end_labels: bool = False


DATASETS = {
    "BTCUSD": _Dataset("BTCUSD.csv", Timeframe.MO1, month_end_labels=True),
    "EURUSD": _Dataset("EURUSD.csv", Timeframe.H1),
    "GOOG": _Dataset("GOOG.csv", Timeframe.D1),
}
"""The bundled data files (see ``data/PROVENANCE.md``) and their native timeframes."""

_BUNDLED_SERIES: dict[tuple[str, Timeframe], BarSeries] = {}


@functools.cache
def _bundled_frame(symbol: str) -> tuple[pd.DataFrame, Timeframe]:
    if symbol in INDEX_FILES:
        # Real index levels vendored from the arch package (shared/data/real/PROVENANCE.md).
        return load_index(symbol), Timeframe.D1
    dataset = DATASETS[symbol]
    frame, timeframe = load_bar_file(DATA_DIR / dataset.file, timeframe=dataset.timeframe)
    if dataset.month_end_labels:
        # The file labels each month by its last day; a Bar is labelled by its period's start.
        frame.index = bucket_starts(frame.index, Timeframe.MO1)
    return frame, timeframe


class BundledSource(FrameSource):
    """Real OHLCV shipped with quantdesk: GOOG daily, EURUSD hourly, BTCUSD monthly, and
    the S&P 500 (^GSPC), NASDAQ composite (^IXIC) and VIX (^VIX) daily.

    Works offline, so demos and tests need no network. Files load on first read
    and stay cached for the life of the process, shared by all instances.
    """

    def __init__(self) -> None:
        super().__init__(_BUNDLED_SERIES)

    def symbols(self) -> tuple[str, ...]:
        return tuple(sorted([*DATASETS, *INDEX_FILES]))

    def _base(self, symbol: str) -> tuple[pd.DataFrame, Timeframe]:
        return _bundled_frame(symbol)


class CsvSource(FrameSource):
    """Bars from local CSV or Parquet files, one file per symbol (layouts: ``files`` module).

    ``files`` is one file (its symbol is the file name without suffix, upper-cased),
    a directory (every .csv/.parquet file in it) or a mapping of symbol to file.
    ``timeframe`` applies to every file; None infers each file's from its spacing.
    Files are checked to exist now, loaded on first read and cached per instance.
    """

    def __init__(
        self,
        files: str | Path | Mapping[str, str | Path],
        *,
        timeframe: Timeframe | str | None = None,
    ) -> None:
        super().__init__({})
        self._files = _resolve_files(files)
        self._timeframe = None if timeframe is None else Timeframe.parse(timeframe)
        self._frames: dict[str, tuple[pd.DataFrame, Timeframe]] = {}

    def symbols(self) -> tuple[str, ...]:
        return tuple(sorted(self._files))

    def _base(self, symbol: str) -> tuple[pd.DataFrame, Timeframe]:
        if symbol not in self._frames:
            self._frames[symbol] = load_bar_file(self._files[symbol], timeframe=self._timeframe)
        return self._frames[symbol]


def _resolve_files(files: str | Path | Mapping[str, str | Path]) -> dict[str, Path]:
    """Symbol (upper-case) to existing file, from a file, a directory or a mapping."""
    if isinstance(files, Mapping):
        named = [(str(symbol), Path(path)) for symbol, path in files.items()]
    elif Path(files).is_dir():
        found = sorted(path for path in Path(files).iterdir() if is_bar_file(path))
        if not found:
            raise InvalidInput(
                "files",
                f"{files} holds no {', '.join(CSV_SUFFIXES + PARQUET_SUFFIXES)} files",
                fix="Point at a directory of bar files, or at one file.",
            )
        named = [(_symbol_of(path), path) for path in found]
    else:
        named = [("", Path(files))]
    resolved: dict[str, Path] = {}
    for given, path in named:
        if not path.is_file():
            raise InvalidInput("files", f"{path} is not a file", fix="Check the path.")
        if not is_bar_file(path):
            raise InvalidInput(
                "files", f"{path} is not a .csv or .parquet file", fix="Convert it to CSV."
            )
        symbol = given or _symbol_of(path)
        if symbol.upper() in resolved:
            raise InvalidInput(
                "files",
                f"{resolved[symbol.upper()]} and {path} both give symbol {symbol.upper()}",
                fix="Pass a mapping of symbol to file.",
            )
        resolved[symbol.upper()] = path
    return resolved


def _symbol_of(path: Path) -> str:
    """``aapl.csv.gz`` -> ``AAPL``: the bar file's name without its (double) suffix."""
    longest_first = sorted(CSV_SUFFIXES + PARQUET_SUFFIXES, key=len, reverse=True)
    suffix = next(suffix for suffix in longest_first if path.name.lower().endswith(suffix))
    return path.name[: -len(suffix)].upper()


SOURCES: dict[str, Callable[..., BarSource]] = {
    "bundled": BundledSource,
    "csv": CsvSource,
    "yfinance": YFinanceSource,
}
"""Source names a request may use, and what builds each."""


def open_source(name: str, **options: Any) -> BarSource:
    """The source called ``name`` built with ``options``, or an error naming what is accepted."""
    try:
        factory = SOURCES[name]
    except KeyError:
        raise InvalidInput(
            "source", f"unknown source {name!r}", fix=f"Use one of: {', '.join(SOURCES)}."
        ) from None
    try:
        inspect.signature(factory).bind(**options)
    except TypeError as error:
        accepted = ", ".join(inspect.signature(factory).parameters) or "no options"
        raise InvalidInput(
            "source", f"{name} source: {error}", fix=f"It accepts: {accepted}."
        ) from None
    return factory(**options)
