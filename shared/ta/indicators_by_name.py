"""TradingAgents' indicators, asked for by name (``sma_50``, ``macd``, ``boll_ub``...).

The market analyst picks indicators by name with fixed, conventional periods
(stockstats' defaults, which TradingAgents uses), so each name is one row of
``INDICATORS_BY_NAME``: a description the model reads, the TA-Lib computation of
one output, and the bars its first value needs. Values TA-Lib cannot compute yet
(and a volume-weighted average over zero volume) stay ``None``, never 0.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from dataclasses import dataclass
from types import ModuleType

import numpy as np
from numpy.typing import NDArray

from shared.market.bars import Bar, bars_to_frame
from shared.ta.indicator_names import IndicatorByName
from shared.ta.indicators import missing_as_none, talib_inputs

Array = NDArray[np.float64]


@dataclass(frozen=True)
class Prices:
    """The bar columns as the contiguous float arrays TA-Lib takes."""

    high: Array
    low: Array
    close: Array
    volume: Array

    @classmethod
    def of(cls, bars: Sequence[Bar]) -> Prices:
        """The arrays of ``bars``, oldest first."""
        return cls(*talib_inputs(bars_to_frame(bars), ("high", "low", "close", "volume")))


@dataclass(frozen=True)
class NamedIndicator:
    """One row: what the model is told, how it is computed, how many bars it needs."""

    name: IndicatorByName
    description: str
    compute: Callable[[ModuleType, Prices], Array]
    """TA-Lib (imported by the first computation, not with the table) and the prices."""
    bars_needed: int


def _vwma(ta: ModuleType, prices: Prices, window: int) -> Array:
    """Volume-weighted average of the typical price (stockstats' definition)."""
    typical = (prices.high + prices.low + prices.close) / 3
    with np.errstate(divide="ignore", invalid="ignore"):
        result: Array = ta.SUM(typical * prices.volume, window) / ta.SUM(prices.volume, window)
        return result


INDICATORS_BY_NAME: dict[IndicatorByName, NamedIndicator] = {
    row.name: row
    for row in (
        NamedIndicator(
            IndicatorByName.SMA_50,
            "50-bar simple moving average of the close: the medium-term trend and a "
            "dynamic support/resistance level",
            lambda ta, p: ta.SMA(p.close, 50),
            50,
        ),
        NamedIndicator(
            IndicatorByName.SMA_200,
            "200-bar simple moving average of the close: the long-term trend; a close "
            "crossing it (or the 50 crossing it) marks a regime change",
            lambda ta, p: ta.SMA(p.close, 200),
            200,
        ),
        NamedIndicator(
            IndicatorByName.EMA_10,
            "10-bar exponential moving average of the close: short-term momentum",
            lambda ta, p: ta.EMA(p.close, 10),
            10,
        ),
        NamedIndicator(
            IndicatorByName.MACD,
            "MACD line (12-bar EMA minus 26-bar EMA of the close): momentum; its "
            "crossings of the signal line mark momentum shifts",
            lambda ta, p: ta.MACD(p.close, 12, 26, 9)[0],
            34,
        ),
        NamedIndicator(
            IndicatorByName.MACDS,
            "MACD signal line (9-bar EMA of the MACD line)",
            lambda ta, p: ta.MACD(p.close, 12, 26, 9)[1],
            34,
        ),
        NamedIndicator(
            IndicatorByName.MACDH,
            "MACD histogram (MACD line minus signal): the strength of momentum; a sign "
            "change is a crossover",
            lambda ta, p: ta.MACD(p.close, 12, 26, 9)[2],
            34,
        ),
        NamedIndicator(
            IndicatorByName.RSI,
            "14-bar relative strength index, 0-100: above 70 overbought, below 30 oversold",
            lambda ta, p: ta.RSI(p.close, 14),
            15,
        ),
        NamedIndicator(
            IndicatorByName.BOLL,
            "Bollinger middle band (20-bar SMA of the close)",
            lambda ta, p: ta.BBANDS(p.close, 20, 2.0, 2.0)[1],
            20,
        ),
        NamedIndicator(
            IndicatorByName.BOLL_UB,
            "Bollinger upper band (middle + 2 standard deviations): overbought zone and "
            "breakout level",
            lambda ta, p: ta.BBANDS(p.close, 20, 2.0, 2.0)[0],
            20,
        ),
        NamedIndicator(
            IndicatorByName.BOLL_LB,
            "Bollinger lower band (middle - 2 standard deviations): oversold zone",
            lambda ta, p: ta.BBANDS(p.close, 20, 2.0, 2.0)[2],
            20,
        ),
        NamedIndicator(
            IndicatorByName.ATR,
            "14-bar average true range: volatility in price units, for stops and sizing",
            lambda ta, p: ta.ATR(p.high, p.low, p.close, 14),
            15,
        ),
        NamedIndicator(
            IndicatorByName.VWMA,
            "14-bar volume-weighted moving average of the typical price: the trend "
            "weighted by participation",
            lambda ta, p: _vwma(ta, p, 14),
            14,
        ),
        NamedIndicator(
            IndicatorByName.MFI,
            "14-bar money flow index, 0-100: RSI weighted by volume; above 80 "
            "overbought, below 20 oversold",
            lambda ta, p: ta.MFI(p.high, p.low, p.close, p.volume, 14),
            15,
        ),
    )
}
"""Name -> description, TA-Lib computation and bars needed for a first value."""


def compute_by_name(name: IndicatorByName, prices: Prices) -> list[float | None]:
    """One value per bar of ``prices``; ``None`` where there is no finite value yet."""
    import talib

    return missing_as_none(INDICATORS_BY_NAME[name].compute(talib, prices))
