"""The names the market analyst may ask indicators by, apart from their computation: a
prompt, a schema or a workflow that names one need not load TA-Lib and pandas."""

from __future__ import annotations

from enum import StrEnum


class IndicatorByName(StrEnum):
    """The names the market analyst may ask for."""

    SMA_50 = "sma_50"
    SMA_200 = "sma_200"
    EMA_10 = "ema_10"
    MACD = "macd"
    MACDS = "macds"
    MACDH = "macdh"
    RSI = "rsi"
    BOLL = "boll"
    BOLL_UB = "boll_ub"
    BOLL_LB = "boll_lb"
    ATR = "atr"
    VWMA = "vwma"
    MFI = "mfi"
