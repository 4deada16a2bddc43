"""Bars from Yahoo Finance through the optional ``yfinance`` package (online).

yfinance is imported when a source is created, not when this module is, so it
stays an optional extra: without it, creating the source raises a ``ConfigError``
saying how to install it.
"""

from __future__ import annotations

import importlib
from collections.abc import Callable, Sequence
from datetime import timedelta
from types import ModuleType
from typing import Any

import pandas as pd

from shared.errors import ConfigError, InvalidInput
from shared.extras import install_command
from shared.market.bar_source import BarQuery, BarSource
from shared.market.bars import COLUMNS, Bar, Timeframe, bars_to_frame, validate_bars
from shared.market.resample import bucket_ends
from shared.market.series import build_series, unknown_symbol

_DATED = (Timeframe.D1, Timeframe.W1, Timeframe.MO1)
"""Yahoo labels these by exchange-local midnight; quantdesk by the session date at 00:00 UTC."""


def import_yfinance() -> ModuleType:
    """The yfinance module, or a ``ConfigError`` saying how to install it."""
    try:
        return importlib.import_module("yfinance")
    except ImportError:
        raise ConfigError(
            "yfinance",
            "the yfinance source needs the optional package yfinance, which is not installed",
            fix=f"Run `{install_command('online')}`, or use the bundled or csv source.",
        ) from None


class YFinanceSource(BarSource):
    """Bars downloaded from Yahoo Finance on every read (no cache, needs the network).

    Yahoo has no 4h interval: 4h bars are resampled from 1h ones. Prices are
    split- and dividend-adjusted unless ``auto_adjust=False``. The bar still forming
    now is dropped, so even a live read returns only finished bars. Yahoo keeps
    limited intraday history (about 7 days of 1m, 60 days of 5m-30m, 730 of 1h).
    Network failures propagate as yfinance raises them, to be retried.
    """

    def __init__(self, symbols: Sequence[str] | None = None, *, auto_adjust: bool = True) -> None:
        self._yf = import_yfinance()
        self._symbols = tuple(sorted({symbol.upper() for symbol in symbols or ()}))
        self._auto_adjust = auto_adjust

    def symbols(self) -> tuple[str, ...]:
        """The tickers this source is limited to; empty means any ticker Yahoo knows."""
        return self._symbols

    def read_query(self, query: BarQuery) -> list[Bar]:
        """The bars of the symbol labelled at or before the cutoff, the last ``lookback`` of them."""
        ticker = query.symbol.upper()
        if self._symbols and ticker not in self._symbols:
            raise unknown_symbol(query.symbol, self._symbols)
        wanted, cutoff, lookback = query.timeframe, query.cutoff, query.lookback

        def download(base: Timeframe, start: pd.Timestamp | None, end: pd.Timestamp) -> Any:
            # yfinance takes a start or a period, never both; "max" with an end reads to the end.
            window = {"period": "max"} if start is None else {"start": start}
            return self._yf.Ticker(ticker).history(
                interval=base.value, end=end, auto_adjust=self._auto_adjust, actions=False, **window
            )

        now = pd.Timestamp.now(tz="UTC")
        frame, base, end = finished_frame(download, wanted, cutoff, lookback, now)
        if frame.empty:  # Yahoo answers an unknown ticker with an empty frame, not an error
            raise InvalidInput(
                "symbol",
                f"Yahoo Finance returned no finished {base} bars for {ticker!r} "
                f"up to {end.isoformat(timespec='seconds')}",
                fix="Check the ticker (e.g. AAPL, EURUSD=X, BTC-USD) and, for intraday "
                "timeframes, that Yahoo keeps history that far back.",
            )
        validate_bars(frame, field=f"yfinance {ticker}")
        return build_series(ticker, frame, base, wanted).window(cutoff, lookback)


def finished_frame(
    download: Callable[[Timeframe, pd.Timestamp | None, pd.Timestamp], pd.DataFrame],
    wanted: Timeframe,
    cutoff: pd.Timestamp | None,
    lookback: int | None,
    now: pd.Timestamp,
) -> tuple[pd.DataFrame, Timeframe, pd.Timestamp]:
    """Yahoo's finished bars of the interval ``wanted`` is made from (4h: 1h), that interval
    and the end of the fetch. ``download(interval, start, end)`` fetches them: from a start
    that holds ``lookback`` bars (None: all history) to just past ``cutoff`` (None: now)."""
    base = Timeframe.H1 if wanted is Timeframe.H4 else wanted
    end = now if cutoff is None else min(cutoff + base.duration, now)
    start = None if lookback is None else end - _span(wanted, lookback)
    frame = _to_frame(download(base, start, end), base)
    return frame[bucket_ends(frame.index, base) <= now], base, end  # not the bar still forming


def _span(timeframe: Timeframe, lookback: int) -> timedelta:
    """Calendar time that holds ``lookback`` bars despite closed hours, weekends and holidays."""
    markets_closed_factor = 4 if timeframe.duration < Timeframe.D1.duration else 2
    return timeframe.duration * lookback * markets_closed_factor + timedelta(days=7)


def _to_frame(history: pd.DataFrame, base: Timeframe) -> pd.DataFrame:
    """Yahoo's frame as a bar frame: lower-case columns, UTC index, placeholder rows dropped."""
    if history.empty:  # then Yahoo's frame may lack even the columns
        return bars_to_frame([])
    table = history.rename(columns=str.lower)
    index = pd.DatetimeIndex(history.index)
    if base in _DATED:
        index = index.tz_localize(None).normalize().tz_localize("UTC")
    else:
        index = index.tz_convert("UTC")
    frame = pd.DataFrame(
        {column: table[column].to_numpy(dtype="float64") for column in COLUMNS},
        index=pd.DatetimeIndex(index, name="time"),
    )
    # Yahoo pads some series with all-empty rows; a partly empty row is left to fail validation.
    return frame.dropna(how="all", subset=list(COLUMNS[:4]))
