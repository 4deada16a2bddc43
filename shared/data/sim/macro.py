"""Macro series, each point visible from its release, never from the period it measures.

Core CPI is the real index (``CPILFESL``); the rest are simulated from real
drivers: the funds rate from the real one-month T-bill yield, unemployment
from the real market's monthly returns (falling in booms, rising in busts),
the 10-year yield mean-reverting to the funds rate plus a term premium and
moving with stocks. Release times are modelled on the agencies' calendars:
monthly series the next month (FOMC data on its first business day, CPI near
the 13th, jobs on the first Friday), the 10-year yield at the end of its day.
Monthly series start three years before the world so a lookback has history.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np
import pandas as pd

from shared.data.contracts import MacroPoint, MacroSeries
from shared.data.real import load_core_cpi, load_index, load_tbill_rate
from shared.data.sim.factors import Market, at_utc, utc_datetime
from shared.data.sim.tables import EventTable

_HISTORY_MONTHS = 36  # monthly history before the world's start
_FLOOR_RATE = 0.05  # percent: the funds rate never printed lower in the zero-rate years
_FUNDS_NOISE = 0.02  # percent: the funds rate's monthly gap to the bill yield
_UNEMPLOYMENT_START, _UNEMPLOYMENT_RANGE = 5.0, (2.5, 15.0)  # percent
_UNEMPLOYMENT_ADJUSTMENT = 0.06  # monthly share of the gap to its target closed: it lags
_OKUN = 10.0  # percentage points of target unemployment per unit of yearly log return (inverted)
_NORMAL_YEARLY_RETURN = 0.07  # a year's market return that leaves the target at the start level
_UNEMPLOYMENT_NOISE = 0.05  # percentage points a month
_TERM_PREMIUM = 1.8  # percent: the 10-year yield's long-run spread over the funds rate
_YIELD_REVERSION = 0.005  # daily pull of the 10-year yield toward funds rate + premium
_YIELD_PER_RETURN = 3.0  # percentage points per unit daily log return of stocks
_YIELD_NOISE = 0.045  # percentage points a day

_CPI_RELEASE_DAY = 12  # CPI comes out around the 13th of the next month...
_DATA_RELEASE = (13, 30)  # CPI and jobs data come out at 08:30 New York (EST): UTC hour, minute
_FUNDS_RELEASE = (15, 0)  # the monthly funds-rate average, mid-morning New York
_DAILY_RELEASE_HOUR = 22  # end-of-day series, after the close


@dataclass(frozen=True)
class SeriesInfo:
    """What a series is, for ``MacroSeries``."""

    name: str
    unit: str
    simulated: bool


SERIES: dict[str, SeriesInfo] = {
    "FEDFUNDS": SeriesInfo(
        "Federal funds rate, monthly average (sim: the real 1-month T-bill yield, annualised)",
        "percent",
        True,
    ),
    "CPI": SeriesInfo(
        "Core CPI: all items less food and energy (real CPILFESL; release dates modelled)",
        "index 1982-84=100",
        False,
    ),
    "UNRATE": SeriesInfo("Unemployment rate (sim)", "percent", True),
    "DGS10": SeriesInfo("10-year Treasury constant-maturity yield (sim)", "percent", True),
}


def build_macro(rng: np.random.Generator, market: Market) -> dict[str, EventTable]:
    """Each series in ``SERIES`` as a table of (observed, released, value) by release time."""
    months = pd.period_range(
        pd.Period(market.days[0].item(), "M") - _HISTORY_MONTHS,
        pd.Period(market.days[-1].item(), "M"),
    )
    starts = months.to_timestamp().to_numpy().astype("datetime64[D]")
    next_month = (months + 1).to_timestamp().to_numpy().astype("datetime64[D]")
    funds = _funds_rate(rng, months)
    monthly = {
        "FEDFUNDS": (funds, np.busday_offset(next_month, 0, roll="forward"), _FUNDS_RELEASE),
        "CPI": (_real_cpi(months), _cpi_release_days(next_month), _DATA_RELEASE),
        "UNRATE": (_unemployment(rng, months), _first_fridays(next_month), _DATA_RELEASE),
    }
    tables = {}
    for series, (values, release_days, (hour, minute)) in monthly.items():
        released = at_utc(release_days, hour, minute)
        keep = ~np.isnan(values) & (released <= market.end_ns)
        tables[series] = _table(starts[keep], released[keep], values[keep])
    session_month = market.sessions.tz_localize(None).to_period("M")
    daily_funds = pd.Series(funds, index=months).reindex(session_month).to_numpy()
    tables["DGS10"] = _table(
        market.days,
        at_utc(market.days, _DAILY_RELEASE_HOUR),
        _ten_year(rng, market, daily_funds),
    )
    return tables


def _table(observed: np.ndarray, released: np.ndarray, values: np.ndarray) -> EventTable:
    return EventTable.build(
        {"observed": observed, "released": released, "value": values}, time="released"
    )


def _funds_rate(rng: np.random.Generator, months: pd.PeriodIndex) -> np.ndarray:
    bill = load_tbill_rate()
    bill.index = bill.index.tz_localize(None).to_period("M")
    annual = bill.reindex(months).ffill().to_numpy() * 12
    noisy = annual + rng.normal(0, _FUNDS_NOISE, len(months))
    return np.round(np.maximum(noisy, _FLOOR_RATE), 2)


def _real_cpi(months: pd.PeriodIndex) -> np.ndarray:
    cpi = load_core_cpi()
    cpi.index = cpi.index.tz_localize(None).to_period("M")
    return cpi.reindex(months).to_numpy()


def _unemployment(rng: np.random.Generator, months: pd.PeriodIndex) -> np.ndarray:
    """Unemployment drifting toward a level set by the real market's past year: it rises
    slowly after a crash and falls through a long bull market, as the real rate did."""
    close = load_index("^GSPC")["close"]
    close.index = close.index.tz_localize(None).to_period("M")
    yearly = np.log(close.groupby(level=0).last()).diff(12)
    returns = yearly.reindex(months).fillna(_NORMAL_YEARLY_RETURN).to_numpy()
    target = np.clip(
        _UNEMPLOYMENT_START - _OKUN * (returns - _NORMAL_YEARLY_RETURN), *_UNEMPLOYMENT_RANGE
    )
    shocks = rng.normal(0, _UNEMPLOYMENT_NOISE, len(months))
    rate = np.empty(len(months))
    level = _UNEMPLOYMENT_START
    for k in range(len(months)):
        level += _UNEMPLOYMENT_ADJUSTMENT * (target[k] - level) + shocks[k]
        rate[k] = level
    return np.round(rate, 1)


def _ten_year(rng: np.random.Generator, market: Market, funds: np.ndarray) -> np.ndarray:
    shocks = rng.normal(0, _YIELD_NOISE, market.size) + _YIELD_PER_RETURN * market.log_return
    level = funds[0] + _TERM_PREMIUM
    path = np.empty(market.size)
    for k in range(market.size):
        level += _YIELD_REVERSION * (funds[k] + _TERM_PREMIUM - level) + shocks[k]
        path[k] = level = max(level, _FLOOR_RATE)
    return np.round(path, 2)


def _cpi_release_days(next_month: np.ndarray) -> np.ndarray:
    days = next_month + np.timedelta64(_CPI_RELEASE_DAY, "D")
    return np.busday_offset(days, 0, roll="forward")


def _first_fridays(next_month: np.ndarray) -> np.ndarray:
    return np.busday_offset(next_month, 0, roll="forward", weekmask="Fri")


def fomc_days(market: Market) -> np.ndarray:
    """Rate decisions, eight a year: the third Wednesday of the months the FOMC usually meets."""
    years = range(market.sessions[0].year, market.sessions[-1].year + 1)
    firsts = np.array(
        [f"{y}-{m:02d}-01" for y in years for m in (1, 3, 4, 6, 7, 9, 10, 12)],
        dtype="datetime64[D]",
    )
    days = np.busday_offset(firsts, 2, roll="forward", weekmask="Wed")
    return days[(days >= market.days[0]) & (days <= market.days[-1])]


def series_record(name: str, table: EventTable, rows: np.ndarray) -> MacroSeries:
    """The rows of a series' table as a record."""
    info = SERIES[name]
    columns = table.columns
    points = [
        MacroPoint(
            observed=columns["observed"][row].item(),
            released_at=utc_datetime(columns["released"][row]),
            value=float(columns["value"][row]),
            simulated=info.simulated,
        )
        for row in rows
    ]
    return MacroSeries(
        series=name, name=info.name, unit=info.unit, points=points, simulated=info.simulated
    )
