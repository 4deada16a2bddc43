"""Figures derived from bars and statements, as of a time: returns, trailing-twelve-month
sums, the fundamentals summary and a mover's last session. ``LocalVendor`` computes its
computed kinds with them; the yfinance vendor its point-in-time fundamentals."""

from __future__ import annotations

from datetime import datetime, timedelta

from shared.data.contracts import Fundamentals, Listing, Mover, Statement, StatementKind
from shared.market.bars import Bar

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
