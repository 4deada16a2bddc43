"""Smart-money screens: the universe's equities ranked by one measure each, as of the analysis time.

Each screen reads the universe, then one window per symbol (daily bars or insider
filings up to as_of), keeps the symbols that pass and ranks them. A symbol
without data in the window is counted and skipped, not an error: a young listing
or a quiet insider is normal. The answer says how many were screened, how many
had no data and how many passed, so an empty list reads as "none passed".
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from datetime import datetime
from statistics import fmean
from typing import Annotated, Generic, TypeVar

from pydantic import BaseModel, Field

from shared.data.contracts import DataKind, Listing, Sector
from shared.errors import NoData
from shared.market.bars import Bar, Timeframe
from shared.tools.data_tools import AsOfArguments, DataReader, data_tool
from shared.tools.market_tools import read_bars
from shared.tools.research_tools import read_insider

AVERAGE_VOLUME_SESSIONS = 20
"""Sessions the last session's volume is compared with."""

SESSIONS_PER_YEAR = 252
"""Daily bars in 52 weeks of trading."""

Row = TypeVar("Row", bound=BaseModel)

Limit = Annotated[int, Field(ge=1, le=50, description="most symbols to return, best first")]


class ScreenAnswer(BaseModel, Generic[Row]):
    """The symbols that passed a screen, best first."""

    screened: int = Field(description="equities of the universe looked at")
    without_data: int = Field(description="of them, how many had no data in the window")
    passed: int = Field(description="how many passed, before the limit")
    rows: list[Row]


def _screen(
    data: DataReader,
    measure: Callable[[Listing], Row | None],
    rank: Callable[[Row], float],
    limit: int,
) -> ScreenAnswer[Row]:
    """``measure`` each equity of the universe; the ``limit`` best by ``rank`` of those passing."""
    listings = data.read(DataKind.UNIVERSE, lambda vendor: vendor.universe(data.as_of))
    equities = [listing for listing in listings if listing.asset_type == "equity"]
    rows: list[Row] = []
    without_data = 0
    for listing in equities:
        try:
            row = measure(listing)
        except NoData:
            without_data += 1
            continue
        if row is not None:
            rows.append(row)
    rows.sort(key=rank, reverse=True)
    return ScreenAnswer(
        screened=len(equities), without_data=without_data, passed=len(rows), rows=rows[:limit]
    )


def _relative_volume(bars: Sequence[Bar]) -> float | None:
    """The last bar's volume over the average of the ``AVERAGE_VOLUME_SESSIONS`` before it."""
    if len(bars) <= AVERAGE_VOLUME_SESSIONS:
        return None
    average = fmean(bar.volume for bar in bars[-AVERAGE_VOLUME_SESSIONS - 1 : -1])
    return bars[-1].volume / average if average > 0 else None


def _change_pct(bars: Sequence[Bar]) -> float:
    """The last session's close-to-close change, in percent."""
    return round((bars[-1].close / bars[-2].close - 1) * 100, 2)


class VolumeSpike(BaseModel):
    """A symbol that traded far more than usual on the last session."""

    symbol: str
    name: str
    sector: Sector | None
    close: float
    change_pct: float = Field(description="last session's change, %")
    volume: float
    average_volume: float = Field(description="average of the 20 sessions before")
    relative_volume: float = Field(description="volume / average_volume")


class UnusualVolumeArguments(AsOfArguments):
    """Arguments of screen_unusual_volume."""

    min_relative_volume: float = Field(
        2.0, ge=1.0, le=50.0, description="least last-session volume / 20-session average"
    )
    limit: Limit = 10


@data_tool(UnusualVolumeArguments)
def screen_unusual_volume(
    args: UnusualVolumeArguments, data: DataReader
) -> ScreenAnswer[VolumeSpike]:
    """Equities whose last session's volume up to the analysis time is at least
    min_relative_volume times their 20-session average: where big money may be moving.
    Highest relative volume first."""

    def measure(listing: Listing) -> VolumeSpike | None:
        bars = read_bars(data, listing.symbol, Timeframe.D1, AVERAGE_VOLUME_SESSIONS + 1)
        relative = _relative_volume(bars)
        if relative is None or relative < args.min_relative_volume:
            return None
        return VolumeSpike(
            symbol=listing.symbol,
            name=listing.name,
            sector=listing.sector,
            close=bars[-1].close,
            change_pct=_change_pct(bars),
            volume=bars[-1].volume,
            average_volume=round(bars[-1].volume / relative),
            relative_volume=round(relative, 2),
        )

    return _screen(data, measure, lambda row: row.relative_volume, args.limit)


class InsiderBuying(BaseModel):
    """A symbol whose insiders bought in the window."""

    symbol: str
    name: str
    sector: Sector | None
    buy_value: float = Field(description="total value bought (shares x price)")
    buys: int = Field(description="buy transactions")
    sell_value: float = Field(description="total value sold in the same window")
    insiders: list[str] = Field(description="who bought")
    last_filed_at: datetime = Field(description="the latest buy's filing time")


class InsiderBuyingArguments(AsOfArguments):
    """Arguments of screen_insider_buying."""

    days: int = Field(30, ge=1, le=180, description="days of filings before the analysis time")
    min_value: float = Field(
        100_000, ge=0, le=1e10, description="least total value insiders bought, in dollars"
    )
    limit: Limit = 10


@data_tool(InsiderBuyingArguments)
def screen_insider_buying(
    args: InsiderBuyingArguments, data: DataReader
) -> ScreenAnswer[InsiderBuying]:
    """Equities whose insiders bought at least min_value of shares in filings of the last
    days before the analysis time. Largest value bought first."""

    def measure(listing: Listing) -> InsiderBuying | None:
        trades = read_insider(data, listing.symbol, args.days)
        buys = [trade for trade in trades if trade.side == "buy"]
        bought = sum(trade.value for trade in buys)
        if not buys or bought < args.min_value:
            return None
        return InsiderBuying(
            symbol=listing.symbol,
            name=listing.name,
            sector=listing.sector,
            buy_value=round(bought, 2),
            buys=len(buys),
            sell_value=round(sum(t.value for t in trades if t.side == "sell"), 2),
            insiders=sorted({trade.insider for trade in buys}),
            last_filed_at=max(trade.filed_at for trade in buys),
        )

    return _screen(data, measure, lambda row: row.buy_value, args.limit)


class Breakout(BaseModel):
    """A symbol whose last close is above every high of the 52 weeks before it."""

    symbol: str
    name: str
    sector: Sector | None
    close: float
    prior_high: float = Field(description="highest high of the 252 sessions before the last")
    pct_above: float = Field(description="how far the close is above prior_high, %")
    change_pct: float = Field(description="last session's change, %")
    relative_volume: float | None = Field(description="volume / 20-session average")


class BreakoutArguments(AsOfArguments):
    """Arguments of screen_52_week_high_breakouts."""

    limit: Limit = 10


@data_tool(BreakoutArguments)
def screen_52_week_high_breakouts(
    args: BreakoutArguments, data: DataReader
) -> ScreenAnswer[Breakout]:
    """Equities whose last close up to the analysis time broke above their 52-week high
    (every high of the 252 sessions before). Furthest above first; symbols with less
    than a year of history are left out."""

    def measure(listing: Listing) -> Breakout | None:
        bars = read_bars(data, listing.symbol, Timeframe.D1, SESSIONS_PER_YEAR + 1)
        if len(bars) <= SESSIONS_PER_YEAR:
            return None
        prior_high = max(bar.high for bar in bars[:-1])
        close = bars[-1].close
        if close <= prior_high:
            return None
        relative = _relative_volume(bars)
        return Breakout(
            symbol=listing.symbol,
            name=listing.name,
            sector=listing.sector,
            close=close,
            prior_high=prior_high,
            pct_above=round((close / prior_high - 1) * 100, 2),
            change_pct=_change_pct(bars),
            relative_volume=None if relative is None else round(relative, 2),
        )

    return _screen(data, measure, lambda row: row.pct_above, args.limit)
