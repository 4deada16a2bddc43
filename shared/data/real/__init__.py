"""Real market data vendored from the ``arch`` package (see ``PROVENANCE.md``), read offline.

The simulated market stands on these: its trading calendar and market factor are
the real S&P 500's, its T-bill yield the real one-month bill, its core CPI the
real index. Files load on first use and stay cached for the life of the
process; every call returns a copy, so a caller cannot corrupt the cache.

Times follow the ``Bar`` convention: a daily row is labelled 00:00 UTC of its
date, a monthly one 00:00 UTC of the month's first day.
"""

from __future__ import annotations

import functools
from pathlib import Path

import pandas as pd

from shared.errors import lookup
from shared.market.bars import COLUMNS, validate_bars

REAL_DIR = Path(__file__).parent

INDEX_FILES: dict[str, str] = {
    "^GSPC": "sp500.csv.gz",
    "^IXIC": "nasdaq.csv.gz",
    "^VIX": "vix.csv.gz",
}
"""Index symbol -> vendored daily file."""

CORE_CPI_FILE = "core-cpi.csv.gz"
FRENCH_FILE = "frenchdata.csv.gz"

_DATE_FORMAT = "%m/%d/%Y"  # every arch file but Ken French's writes dates as 1/4/1999
_MISSING = "."  # FRED's marker for a day without a value (the VIX file's exchange holidays)


def load_index(symbol: str) -> pd.DataFrame:
    """Daily bars of ``^GSPC``, ``^IXIC`` or ``^VIX`` as a validated bar frame.

    The VIX file holds closes only: its open, high and low are the close and its
    volume 0 (an index has no traded volume of its own).
    """
    return _index(lookup(INDEX_FILES, symbol, field="symbol", what="real index")).copy()


def load_core_cpi() -> pd.Series:
    """CPI less food and energy (FRED ``CPILFESL``, 1982-84 = 100), monthly, by month start."""
    return _core_cpi().copy()


def load_tbill_rate() -> pd.Series:
    """The one-month T-bill return (Ken French's ``RF``), percent per month, by month start."""
    return _tbill().copy()


@functools.cache
def _index(file: str) -> pd.DataFrame:
    raw = pd.read_csv(REAL_DIR / file, dtype={"Date": str}, na_values=[_MISSING])
    raw = raw.set_index(_utc_dates(raw.pop("Date")))
    if "vix" in raw.columns:
        close = raw["vix"].dropna().astype("float64")
        frame = pd.DataFrame({column: close for column in COLUMNS[:4]} | {"volume": 0.0})
    else:
        frame = raw.rename(columns=str.lower)[list(COLUMNS)].astype("float64")
    validate_bars(frame, field=file)
    return frame


@functools.cache
def _core_cpi() -> pd.Series:
    raw = pd.read_csv(REAL_DIR / CORE_CPI_FILE, dtype={"Date": str})
    return pd.Series(
        raw["CPILFESL"].to_numpy("float64"), index=_utc_dates(raw["Date"]), name="CPILFESL"
    )


@functools.cache
def _tbill() -> pd.Series:
    raw = pd.read_csv(REAL_DIR / FRENCH_FILE)
    months = pd.to_datetime(raw["Date"].astype(str), format="%Y%m", utc=True)
    return pd.Series(
        raw["RF"].to_numpy("float64"), index=pd.DatetimeIndex(months, name="time"), name="RF"
    )


def _utc_dates(text: pd.Series) -> pd.DatetimeIndex:
    return pd.DatetimeIndex(pd.to_datetime(text, format=_DATE_FORMAT, utc=True), name="time")
