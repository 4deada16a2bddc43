"""Figures derived from bars and statements, as of a time: returns, trailing-twelve-month
sums, the fundamentals summary, a mover's last session, and the kinds computed from bars
(sector performance, index levels, movers). ``LocalVendor`` and ``FromBarsVendor`` compute
their computed kinds with them; the yfinance and SEC vendors their point-in-time
fundamentals."""

from __future__ import annotations

from collections.abc import Callable, Mapping
from datetime import datetime, timedelta

from shared.data.contracts import (
    SECTOR_ETFS,
    Fundamentals,
    IndexLevel,
    Listing,
    MarketMovers,
    Mover,
    SectorPerformance,
    Statement,
    StatementKind,
)
from shared.market.bars import Bar

Daily = Callable[[str], list[Bar] | None]
"""A symbol's daily bars up to the time asked about, or None when there are none."""

_TTM_QUARTERS = 4
_TTM_MAX_SPAN = timedelta(days=300)  # four consecutive quarter ends lie ~273 days apart
RELATIVE_VOLUME_DAYS = 20


def return_over(bars: list[Bar], sessions: int) -> float | None:
    """The close-to-close return over the last ``sessions`` bars, as a fraction."""
    if len(bars) <= sessions:
        return None
    return bars[-1].close / bars[-1 - sessions].close - 1


def year_to_date_return(bars: list[Bar]) -> float | None:
    """The return since the last close of the previous calendar year, if the bars reach it."""
    year = bars[-1].time.year
    before = [bar for bar in bars if bar.time.year < year]
    return bars[-1].close / before[-1].close - 1 if before else None


def as_percent(fraction: float | None) -> float | None:
    return None if fraction is None else fraction * 100


def safe_ratio(numerator: float | None, denominator: float | None) -> float | None:
    """None unless both are known and the denominator is positive."""
    if numerator is None or denominator is None or denominator <= 0:
        return None
    return numerator / denominator


def _ttm(income: list[Statement], item: str) -> float | None:
    """The sum of ``item`` over the latest four quarters (``income`` newest first)."""
    quarters = income[:_TTM_QUARTERS]
    if len(quarters) < _TTM_QUARTERS:
        return None
    if quarters[0].period_end - quarters[-1].period_end > _TTM_MAX_SPAN:
        return None  # not four consecutive quarters: annual statements, or a gap
    values = [quarter.items[item] for quarter in quarters if item in quarter.items]
    return sum(values) if len(values) == _TTM_QUARTERS else None


def compute_fundamentals(
    symbol: str,
    as_of: datetime,
    statements: list[Statement],
    price: float | None,
    listing: Listing | None,
) -> Fundamentals:
    """The point-in-time summary of ``statements`` (current versions, all reported by ``as_of``)."""
    newest = sorted(statements, key=lambda s: s.period_end, reverse=True)
    income = [s for s in newest if s.kind is StatementKind.INCOME]
    balance = next((s.items for s in newest if s.kind is StatementKind.BALANCE), {})
    shares = balance.get("shares_outstanding")
    equity = balance.get("total_equity")
    net_income = _ttm(income, "net_income")
    market_cap = None if price is None or shares is None else price * shares
    eps = safe_ratio(net_income, shares)
    return Fundamentals(
        symbol=symbol,
        as_of=as_of,
        name=listing.name if listing else symbol,
        sector=listing.sector if listing else None,
        industry=listing.industry if listing else None,
        price=price,
        market_cap=market_cap,
        pe_ratio=safe_ratio(price, eps),
        price_to_book=safe_ratio(market_cap, equity),
        revenue_ttm=_ttm(income, "revenue"),
        net_income_ttm=net_income,
        eps_ttm=eps,
        debt_to_equity=safe_ratio(balance.get("total_debt"), equity),
        latest_period=newest[0].fiscal_period,
    )


def mover_of(listing: Listing, bars: list[Bar]) -> Mover:
    """A symbol's last session; relative volume against the 20 sessions before it."""
    last = bars[-1]
    prior = [bar.volume for bar in bars[-1 - RELATIVE_VOLUME_DAYS : -1]]
    average = sum(prior) / len(prior) if len(prior) == RELATIVE_VOLUME_DAYS else None
    return Mover(
        symbol=listing.symbol,
        name=listing.name,
        last=last.close,
        change_pct=(last.close / bars[-2].close - 1) * 100,
        volume=last.volume,
        relative_volume=safe_ratio(last.volume, average),
    )


def sector_performance(daily: Daily) -> list[SectorPerformance]:
    """The returns of each SPDR sector ETF that has bars."""
    return [
        SectorPerformance(
            sector=sector,
            etf=etf,
            return_1d=return_over(bars, 1),
            return_5d=return_over(bars, 5),
            return_21d=return_over(bars, 21),
            return_ytd=year_to_date_return(bars),
        )
        for sector, etf in SECTOR_ETFS.items()
        if (bars := daily(etf))
    ]


def index_levels(daily: Daily, names: Mapping[str, str]) -> list[IndexLevel]:
    """The last close and the 1- and 21-session changes of each index of ``names`` with bars."""
    return [
        IndexLevel(
            symbol=symbol,
            name=name,
            level=bars[-1].close,
            change_1d_pct=as_percent(return_over(bars, 1)),
            change_21d_pct=as_percent(return_over(bars, 21)),
        )
        for symbol, name in names.items()
        if (bars := daily(symbol))
    ]


def market_movers(
    histories: list[tuple[Listing, list[Bar]]], as_of: datetime, limit: int
) -> MarketMovers | None:
    """Gainers, losers and most active of the latest session any history reaches (names whose
    bars stop before it did not trade that day), or None without two sessions of any."""
    traded = [(listing, bars) for listing, bars in histories if len(bars) > 1]
    if not traded:
        return None
    session = max(bars[-1].time for _, bars in traded)
    moved = [mover_of(listing, bars) for listing, bars in traded if bars[-1].time == session]
    by_change = sorted(moved, key=lambda m: m.change_pct, reverse=True)
    return MarketMovers(
        as_of=as_of,
        gainers=[m for m in by_change if m.change_pct > 0][:limit],
        losers=[m for m in reversed(by_change) if m.change_pct < 0][:limit],
        most_active=sorted(moved, key=lambda m: m.volume, reverse=True)[:limit],
    )
