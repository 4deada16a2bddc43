"""Daily OHLCV for every sim symbol, as (sessions x symbols) matrices.

A stock's log return is ``alpha + beta * market + sector + noise`` plus the
overnight jumps of its events. The market term is the real S&P 500's
return, so the sim's stocks move with the real market. Part of each ordinary
return happens overnight; event jumps happen entirely overnight, between the
news and the open. Highs and lows extend the open-close body by a random wick,
so every bar is valid by construction.

Sector ETFs are the cap-weighted average of their sector's stocks (weights at
the previous close), applied to open, high, low and close alike: a weighted
average of highs is at least the same average of opens or closes, so the ETF
bars are valid too. Indices are real where ``shared.data.real`` has them.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass

import numpy as np
import pandas as pd

from shared.data.real import load_index
from shared.data.sim.factors import TRADING_DAYS, Market, realised_vol
from shared.data.sim.universe import INDEX_ORDER, SECTORS, CompanyParams
from shared.market.bars import COLUMNS

_TAIL_DF = 5  # Student-t degrees of freedom of idiosyncratic noise: fat tails, finite variance
_OVERNIGHT_SHARE = 0.25  # share of an ordinary day's return that happens before the open
_GAP_NOISE = 0.25  # overnight noise reversed by the close, in units of idiosyncratic vol
_WICK = 0.45  # typical wick beyond the body, in units of total daily vol
_VOLUME_NOISE = 0.3  # log spread of ordinary daily volume
_VOLUME_PER_MOVE = 1.5  # extra volume per unit of |return| / daily vol...
_MAX_MOVE_SIGMAS = 4.0  # ...counted up to this many (event volume is ``volume_boost``'s)
_CENT = 0.01  # the smallest price a rounded bar may show

_ETF_PRICE_RANGE = (20.0, 80.0)  # USD, the ETFs' level before the world starts
_ETF_VOLUME_SHARE = 0.1  # ETF dollar volume as a share of its stocks' dollar volume
_TBILL_PRICE = 100.0  # USD, the T-bill ETF before the world starts
_TBILL_VOLUME = 2e5  # shares a day, median

REAL_INDICES = ("^GSPC", "^IXIC")
"""Indices served exactly as vendored in ``shared.data.real``."""
_SIM_INDICES = {  # symbol: (beta, daily noise, level per S&P 500 point)
    "^DJI": (0.95, 0.003, 9.0),  # the Dow stood near 9x the S&P 500 in 2009-2018
    "^RUT": (1.15, 0.006, 0.55),  # small caps: higher beta, noisier; Russell near 0.55x
}
_VIX_PERSISTENCE = 0.83  # AR(1) of the VIX's gap to its realised-vol fit, 2014-2018
_VIX_NOISE = 1.35  # innovation of that gap, points
_VIX_FLOOR = 9.0  # the real VIX's low of 2014-2018 was 9.14


@dataclass(frozen=True)
class Bars:
    """OHLCV matrices, sessions x symbols."""

    open: np.ndarray
    high: np.ndarray
    low: np.ndarray
    close: np.ndarray
    volume: np.ndarray

    @classmethod
    def stack(cls, parts: Sequence[Bars]) -> Bars:
        """The parts' symbols side by side, in order."""
        return cls(*(np.hstack([getattr(p, f) for p in parts]) for f in COLUMNS))

    def rounded(self) -> Bars:
        """Prices in whole cents, as quotes are (rounding keeps low <= open, close <= high)."""

        def cents(prices: np.ndarray) -> np.ndarray:
            return np.maximum(np.round(prices, 2), _CENT)

        return Bars(
            cents(self.open), cents(self.high), cents(self.low), cents(self.close), self.volume
        )

    def frame(self, column: int, sessions: pd.DatetimeIndex) -> pd.DataFrame:
        """One symbol's bars as a bar frame (see ``shared.market.bars.bars_to_frame``)."""
        data = {f: getattr(self, f)[:, column] for f in COLUMNS}
        return pd.DataFrame(data, index=pd.DatetimeIndex(sessions, name="time"))


def candles(
    rng: np.random.Generator,
    prev_close: np.ndarray,
    gap: np.ndarray,
    intraday: np.ndarray,
    wick: np.ndarray,
) -> tuple[np.ndarray, np.ndarray, np.ndarray, np.ndarray]:
    """Open, high, low, close from overnight and intraday log returns and a wick scale."""
    log_close = np.log(prev_close) + np.cumsum(gap + intraday, axis=0)
    close = np.exp(log_close)
    previous = np.vstack([prev_close[None, :], close[:-1]])
    open_ = previous * np.exp(gap)
    high = np.maximum(open_, close) * np.exp(np.abs(rng.normal(0, 1, gap.shape)) * wick)
    low = np.minimum(open_, close) * np.exp(-np.abs(rng.normal(0, 1, gap.shape)) * wick)
    return open_, high, low, close


def stock_bars(
    rng: np.random.Generator,
    market: Market,
    factors: np.ndarray,
    params: CompanyParams,
    shares: np.ndarray,
    jumps: np.ndarray,
    volume_boost: np.ndarray,
) -> Bars:
    """Every company's bars from the market, its sector's factor and its events."""
    t, n = jumps.shape
    sector = factors[:, params.sector]
    market_vol = market.log_return.std()
    sector_vol = factors.std(axis=0)[params.sector]
    total_vol = np.sqrt((params.beta * market_vol) ** 2 + sector_vol**2 + params.idio_vol**2)
    # Drift so that prices grow with revenue on average: the P/E neither balloons nor collapses.
    yearly_market = market.log_return.mean() * TRADING_DAYS
    alpha = (np.log1p(params.growth) - params.beta * yearly_market) / TRADING_DAYS
    noise = rng.standard_t(_TAIL_DF, (t, n)) * np.sqrt((_TAIL_DF - 2) / _TAIL_DF) * params.idio_vol
    ordinary = alpha + params.beta * market.log_return[:, None] + sector + noise
    reversal = rng.normal(0, 1, (t, n)) * _GAP_NOISE * params.idio_vol
    gap = _OVERNIGHT_SHARE * ordinary + jumps + reversal
    intraday = (1 - _OVERNIGHT_SHARE) * ordinary - reversal
    wick = _WICK * total_vol * (1 + np.abs(jumps) / total_vol / 4)
    open_, high, low, close = candles(rng, params.price, gap, intraday, wick)
    activity = 1 + _VOLUME_PER_MOVE * np.minimum(
        np.abs(gap + intraday) / total_vol, _MAX_MOVE_SIGMAS
    )
    usual = shares * params.turnover * np.exp(rng.normal(0, _VOLUME_NOISE, (t, n)))
    volume = np.round(usual * activity * volume_boost)
    return Bars(open_, high, low, close, volume)


def _membership(sector: np.ndarray) -> np.ndarray:
    """(companies x sectors) one-hot membership."""
    return (sector[:, None] == np.arange(len(SECTORS))[None, :]).astype(float)


def etf_bars(
    rng: np.random.Generator, stocks: Bars, shares: np.ndarray, params: CompanyParams
) -> Bars:
    """The 11 sector ETFs: cap-weighted averages of their stocks' moves from the prior close."""
    membership = _membership(params.sector)
    previous = np.vstack([params.price[None, :], stocks.close[:-1]])
    cap = previous * shares
    weight = cap @ membership

    def average(prices: np.ndarray) -> np.ndarray:
        return ((cap * prices / previous) @ membership) / weight

    growth = average(stocks.close)
    level = rng.uniform(*_ETF_PRICE_RANGE, len(SECTORS)) * np.cumprod(growth, axis=0)
    etf_previous = np.vstack([level[:1] / growth[:1], level[:-1]])
    dollars = (stocks.close * stocks.volume) @ membership
    return Bars(
        open=etf_previous * average(stocks.open),
        high=etf_previous * average(stocks.high),
        low=etf_previous * average(stocks.low),
        close=level,
        volume=np.round(_ETF_VOLUME_SHARE * dollars / level),
    )


def tbill_bars(rng: np.random.Generator, market: Market) -> Bars:
    """The T-bill ETF: accrues the real one-month bill yield, so it never falls."""
    close = _TBILL_PRICE * np.cumprod(1 + market.tbill_daily)
    open_ = np.concatenate([[_TBILL_PRICE], close[:-1]])
    volume = np.round(_TBILL_VOLUME * np.exp(rng.normal(0, _VOLUME_NOISE, market.size)))
    high, low = np.maximum(open_, close), np.minimum(open_, close)
    return Bars(*(c[:, None] for c in (open_, high, low, close, volume)))


def index_bars(rng: np.random.Generator, market: Market) -> tuple[Bars, np.ndarray]:
    """The indices in ``INDEX_ORDER``, and (sessions x indices) True where a bar is simulated.

    ^GSPC and ^IXIC are real; ^DJI and ^RUT follow the real market factor; ^VIX
    is real where the vendored file has it and elsewhere the fit of the real VIX
    to the market's realised volatility, with the fit's own persistent noise.
    """
    built: dict[str, tuple[Bars, np.ndarray]] = {}
    for symbol in REAL_INDICES:
        real = load_index(symbol).reindex(market.sessions)
        built[symbol] = (_frame_bars(real), np.zeros(market.size, dtype=bool))
    for symbol, (beta, noise, ratio) in _SIM_INDICES.items():
        returns = beta * market.log_return + rng.normal(0, noise, market.size)
        column = returns[:, None]
        wick = np.array([_WICK * returns.std()])
        bars = candles(
            rng,
            np.array([market.spx_prev_close * ratio]),
            _OVERNIGHT_SHARE * column,
            (1 - _OVERNIGHT_SHARE) * column,
            wick,
        )
        simulated = Bars(*bars, np.zeros_like(column)).rounded()
        built[symbol] = (simulated, np.ones(market.size, dtype=bool))
    built["^VIX"] = _vix(rng, market)
    order = [built[symbol] for symbol in INDEX_ORDER]
    return Bars.stack([bars for bars, _ in order]), np.column_stack([flag for _, flag in order])


def _vix(rng: np.random.Generator, market: Market) -> tuple[Bars, np.ndarray]:
    real = load_index("^VIX")["close"]
    fit = pd.concat([realised_vol(load_index("^GSPC")), real], axis=1).dropna()
    slope, intercept = np.polyfit(fit.iloc[:, 0], fit.iloc[:, 1], 1)
    gap = np.zeros(market.size)
    shocks = rng.normal(0, _VIX_NOISE, market.size)
    for k in range(1, market.size):
        gap[k] = _VIX_PERSISTENCE * gap[k - 1] + shocks[k]
    modelled = np.round(np.maximum(intercept + slope * market.ewma_vol + gap, _VIX_FLOOR), 2)
    observed = real.reindex(market.sessions).to_numpy()
    simulated = np.isnan(observed)
    level = np.where(simulated, modelled, observed)[:, None]
    return Bars(level, level, level, level, np.zeros_like(level)), simulated


def _frame_bars(frame: pd.DataFrame) -> Bars:
    return Bars(*(frame[c].to_numpy()[:, None] for c in COLUMNS))
