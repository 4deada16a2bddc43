"""Market data tools: bars, indicators by name, sectors, industries, movers, indices, macro.

Bars go to the model as rows under one header (about half the characters of one
object per bar). Indicators are computed here from bars read as of the analysis
time, with enough history for the longest one asked for, so the model never
supplies prices and never sees a warm-up value passed off as real.
"""

from __future__ import annotations

from datetime import datetime
from typing import Annotated

from pydantic import BaseModel, Field, StringConstraints

from shared.data.contracts import (
    DataKind,
    IndexLevel,
    IndustryCompany,
    MacroSeries,
    MarketMovers,
    Sector,
    SectorPerformance,
)
from shared.market.bars import COLUMNS, Bar, Timeframe
from shared.ta.indicators_by_name import (
    INDICATORS_BY_NAME,
    IndicatorByName,
    Prices,
    compute_by_name,
)
from shared.tools.data_tools import AsOfArguments, DataReader, Symbol, data_tool

WARMUP_BARS = 60
"""Bars read beyond the longest indicator's need, so EMA-based values have settled."""

SIGNIFICANT_DIGITS = 6
"""Precision of indicator values shown; more only costs the model tokens."""

TimeframeField = Annotated[Timeframe, Field(description="bar length; 1d unless intraday matters")]


def read_bars(data: DataReader, symbol: str, timeframe: Timeframe, lookback: int) -> list[Bar]:
    """The latest ``lookback`` bars of ``symbol`` up to the reader's as_of, oldest first."""
    return data.read(
        DataKind.OHLCV,
        lambda vendor: vendor.ohlcv(symbol, timeframe, data.as_of, lookback),
        subject=symbol,
        window=f"{lookback} {timeframe.value} bars",
    )


class OhlcvArguments(AsOfArguments):
    """Arguments of get_ohlcv."""

    symbol: Symbol
    timeframe: TimeframeField = Timeframe.D1
    lookback: int = Field(60, ge=1, le=500, description="how many of the latest bars to return")


class OhlcvAnswer(BaseModel):
    """Bars as rows under one header, oldest first."""

    symbol: str
    timeframe: Timeframe
    bars: int = Field(description="rows returned")
    columns: tuple[str, ...] = ("time", *COLUMNS)
    rows: list[tuple[datetime, float, float, float, float, float]]


@data_tool(OhlcvArguments)
def get_ohlcv(args: OhlcvArguments, data: DataReader) -> OhlcvAnswer:
    """OHLCV price bars of a symbol up to the analysis time, oldest first, as rows of
    time, open, high, low, close, volume."""
    bars = read_bars(data, args.symbol, args.timeframe, args.lookback)
    rows = [(b.time, b.open, b.high, b.low, b.close, b.volume) for b in bars]
    return OhlcvAnswer(symbol=args.symbol, timeframe=args.timeframe, bars=len(rows), rows=rows)


class IndicatorsArguments(AsOfArguments):
    """Arguments of get_indicators."""

    symbol: Symbol
    names: list[IndicatorByName] = Field(
        min_length=1,
        max_length=len(IndicatorByName),
        description='the indicators to compute, e.g. ["rsi", "macd", "sma_50"]',
    )
    timeframe: TimeframeField = Timeframe.D1
    values: int = Field(10, ge=1, le=60, description="how many of the latest values to return")


class IndicatorValues(BaseModel):
    """One indicator's latest values."""

    description: str
    bars_needed: int = Field(description="bars its first value needs")
    values: list[float | None] = Field(description="one per time; null: too few bars yet")
    latest: float | None


class IndicatorsAnswer(BaseModel):
    """The latest values of each indicator asked for, aligned with ``times``."""

    symbol: str
    timeframe: Timeframe
    bars_read: int = Field(description="bars the indicators were computed over")
    times: list[datetime] = Field(description="times of the values, oldest first")
    indicators: dict[IndicatorByName, IndicatorValues]


@data_tool(IndicatorsArguments)
def get_indicators(args: IndicatorsArguments, data: DataReader) -> IndicatorsAnswer:
    """Technical indicators of a symbol by name (sma_50, sma_200, ema_10, macd, macds,
    macdh, rsi, boll, boll_ub, boll_lb, atr, vwma, mfi), computed over bars up to the
    analysis time. Returns the latest values of each; null means too few bars for a
    value yet."""
    names = list(dict.fromkeys(args.names))
    longest = max(INDICATORS_BY_NAME[name].bars_needed for name in names)
    bars = read_bars(data, args.symbol, args.timeframe, longest + args.values - 1 + WARMUP_BARS)
    prices = Prices.of(bars)
    shown = min(args.values, len(bars))
    return IndicatorsAnswer(
        symbol=args.symbol,
        timeframe=args.timeframe,
        bars_read=len(bars),
        times=[bar.time for bar in bars[len(bars) - shown :]],
        indicators={name: _latest(name, prices, shown) for name in names},
    )


def _latest(name: IndicatorByName, prices: Prices, shown: int) -> IndicatorValues:
    values = [_rounded(v) for v in compute_by_name(name, prices)[len(prices.close) - shown :]]
    row = INDICATORS_BY_NAME[name]
    return IndicatorValues(
        description=row.description,
        bars_needed=row.bars_needed,
        values=values,
        latest=values[-1] if values else None,
    )


def _rounded(value: float | None) -> float | None:
    """``value`` to ``SIGNIFICANT_DIGITS`` significant digits, so small prices keep theirs."""
    return None if value is None else float(f"{value:.{SIGNIFICANT_DIGITS}g}")


@data_tool(AsOfArguments)
def get_sector_performance(args: AsOfArguments, data: DataReader) -> list[SectorPerformance]:
    """Returns of the 11 GICS sectors' SPDR ETFs (1-day, 5-day, 21-day and year-to-date,
    as fractions: 0.012 is +1.2%) up to the analysis time; null where history is too short."""
    return data.read(DataKind.SECTORS, lambda vendor: vendor.sectors(data.as_of))


class IndustryArguments(AsOfArguments):
    """Arguments of get_industry_top_companies."""

    sector: Sector = Field(description="the GICS sector to look into")
    limit: int = Field(10, ge=1, le=25, description="how many companies to return")


@data_tool(IndustryArguments)
def get_industry_top_companies(args: IndustryArguments, data: DataReader) -> list[IndustryCompany]:
    """The leading companies of a sector (industry, market cap, 21-day return as a fraction:
    0.05 is +5%) as of the analysis time."""
    return data.read(
        DataKind.INDUSTRY,
        lambda vendor: vendor.industry(args.sector, data.as_of, args.limit),
        subject=args.sector.value,
    )


class MoversArguments(AsOfArguments):
    """Arguments of get_market_movers."""

    limit: int = Field(10, ge=1, le=25, description="how many symbols per list")


@data_tool(MoversArguments)
def get_market_movers(args: MoversArguments, data: DataReader) -> MarketMovers:
    """The last session's top gainers, losers and most active symbols up to the analysis
    time, with change in percent (2.5 is +2.5%), volume and relative volume."""
    return data.read(DataKind.MOVERS, lambda vendor: vendor.movers(data.as_of, args.limit))


@data_tool(AsOfArguments)
def get_indices(args: AsOfArguments, data: DataReader) -> list[IndexLevel]:
    """Levels and 1-day and 21-day changes in percent of the major indices (S&P 500, Dow,
    NASDAQ, VIX, Russell 2000) up to the analysis time."""
    return data.read(DataKind.INDICES, lambda vendor: vendor.indices(data.as_of))


class MacroArguments(AsOfArguments):
    """Arguments of get_macro_series."""

    series: Annotated[
        str,
        StringConstraints(
            strip_whitespace=True, to_upper=True, min_length=1, max_length=30, pattern=r"^\w+$"
        ),
    ] = Field(description="FRED series id, e.g. FEDFUNDS, CPIAUCSL, UNRATE, DGS10")
    lookback: int = Field(24, ge=1, le=240, description="how many of the latest observations")


@data_tool(MacroArguments)
def get_macro_series(args: MacroArguments, data: DataReader) -> MacroSeries:
    """A macroeconomic series (e.g. FEDFUNDS, CPIAUCSL, UNRATE, DGS10): its latest
    observations released by the analysis time, oldest first."""
    return data.read(
        DataKind.MACRO,
        lambda vendor: vendor.macro(args.series, data.as_of, args.lookback),
        subject=args.series,
        window=f"{args.lookback} observations",
    )
