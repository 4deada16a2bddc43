"""The real ground the simulated market stands on: calendar, market factor, T-bill yield.

Sessions are the real S&P 500's trading days, so holidays and unscheduled
closures (2012's Hurricane Sandy) are where they were; the market factor is the
index's real daily log return, so simulated stocks live through the real
2010 flash crash and 2018 sell-offs. Per-seed draws start from ``stream``, one
independent generator per purpose, so changing how one part of the world draws
leaves every other part unchanged.
"""

from __future__ import annotations

import zlib
from dataclasses import dataclass
from datetime import UTC, date, datetime, timedelta

import numpy as np
import pandas as pd

from shared.data.real import load_index, load_tbill_rate
from shared.errors import InvalidInput

MIN_SESSIONS = 63  # a quarter: the shortest world that holds an earnings season
TRADING_DAYS = 252  # sessions in a year, for annualising and for yearly event rates
_DAY_NS = 86_400 * 10**9


def stream(seed: int, purpose: str) -> np.random.Generator:
    """The generator for one purpose of one seed's world, independent of all others."""
    return np.random.default_rng([seed, zlib.crc32(purpose.encode())])


def at_utc(days: np.ndarray, hour: int, minute: int = 0) -> np.ndarray:
    """Instants (ns since the epoch, UTC) at ``hour:minute`` on ``days`` (datetime64[D])."""
    return (
        days.astype("datetime64[D]").astype("int64") * _DAY_NS + (hour * 60 + minute) * 60 * 10**9
    )


def seconds_between(rng: np.random.Generator, hours: tuple[float, float], count: int) -> np.ndarray:
    """Random whole-second offsets (ns) from midnight, between two hours of the day."""
    seconds = rng.integers(int(hours[0] * 3600), int(hours[1] * 3600), count)
    return seconds.astype(np.int64) * 10**9


_EPOCH = datetime(1970, 1, 1, tzinfo=UTC)


def utc_datetime(ns: int | np.integer) -> datetime:
    """An int64 ns instant as an aware datetime (sim instants are whole seconds)."""
    return _EPOCH + timedelta(microseconds=int(ns) // 1000)


@dataclass(frozen=True)
class Market:
    """The world's sessions and the real series aligned to them."""

    sessions: pd.DatetimeIndex  # bar labels: 00:00 UTC of each trading day
    days: np.ndarray  # the same sessions as datetime64[D]
    ns: np.ndarray  # the same sessions as int64 ns, for binary search
    log_return: np.ndarray  # real S&P 500 close-to-close log return into each session
    spx: pd.DataFrame  # real S&P 500 bars on the sessions
    spx_prev_close: float  # its close the session before the world starts
    tbill_daily: np.ndarray  # real one-month T-bill yield, as a simple return per session
    ewma_vol: np.ndarray  # annualised percent volatility of the market factor (RiskMetrics)

    @property
    def size(self) -> int:
        return len(self.sessions)

    @property
    def years(self) -> float:
        """How many years of sessions the world spans: yearly event rates scale by it."""
        return self.size / TRADING_DAYS

    @property
    def end_ns(self) -> int:
        """The last instant of the world's last day: what is dated later never happens."""
        return int(at_utc(self.days[-1:], 23, 59)[0]) + 59 * 10**9


_EWMA_DECAY = 0.94  # RiskMetrics' daily decay; on 2014-18 its fit to the real VIX is best


def realised_vol(spx: pd.DataFrame) -> pd.Series:
    """Annualised percent EWMA volatility of the real S&P 500's daily log return, by session."""
    returns = np.log(spx["close"]).diff().fillna(0.0)
    return np.sqrt((returns**2).ewm(alpha=1 - _EWMA_DECAY).mean() * TRADING_DAYS) * 100


def real_market(start: date, end: date) -> Market:
    """The real S&P 500's sessions from ``start`` to ``end`` and the series the sim needs."""
    spx = load_index("^GSPC")
    log_close = np.log(spx["close"].to_numpy())
    first, last = spx.index[0].date(), spx.index[-1].date()
    chosen = np.flatnonzero((spx.index.date >= start) & (spx.index.date <= end))
    if start <= first or end > last or len(chosen) < MIN_SESSIONS:
        raise InvalidInput(
            "start/end",
            f"the simulated market needs {MIN_SESSIONS}+ real S&P 500 sessions after its first "
            f"({first}) and ending by {last}; {start} to {end} gives {len(chosen)}",
            fix=f"Use dates after {first} and up to {last}, at least a quarter apart.",
        )
    sessions = spx.index[chosen]
    return Market(
        sessions=sessions,
        days=sessions.tz_localize(None).to_numpy().astype("datetime64[D]"),
        ns=sessions.as_unit("ns").asi8,
        log_return=log_close[chosen] - log_close[chosen - 1],
        spx=spx.iloc[chosen],
        spx_prev_close=float(spx["close"].iloc[chosen[0] - 1]),
        tbill_daily=_tbill_per_session(spx.index, chosen),
        ewma_vol=realised_vol(spx).to_numpy()[chosen],
    )


def _tbill_per_session(all_sessions: pd.DatetimeIndex, chosen: np.ndarray) -> np.ndarray:
    """The month's T-bill return spread evenly over its real sessions.

    Months after the file's last (it ends a month before the S&P file) repeat its
    last rate: short rates barely move in a month.
    """
    monthly = load_tbill_rate() / 100
    month = all_sessions.tz_localize(None).to_period("M")
    per_month = pd.Series(1, index=month).groupby(level=0).transform("size").to_numpy()
    months_of_rate = monthly.index.tz_localize(None).to_period("M")
    rate = pd.Series(monthly.to_numpy(), index=months_of_rate).reindex(month).ffill().to_numpy()
    return (rate / per_month)[chosen]


def sector_factors(rng: np.random.Generator, sessions: int, vols: np.ndarray) -> np.ndarray:
    """Daily sector shocks (sessions x sectors): what moves a sector apart from the market."""
    return rng.normal(0.0, 1.0, (sessions, len(vols))) * vols
