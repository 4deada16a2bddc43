"""The book valued at the as-of closes: price, value, weight, P&L and sector of each holding.

A holding with no close as of the date is carried at its cost and marked
unpriced with the reason, so the total stays a total (leaving it out would
shrink the book, pricing it at 0 would invent a crash); nothing is ever
traded at that carried price.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from datetime import datetime
from decimal import Decimal

from pydantic import AwareDatetime, BaseModel, Field

from shared.data.contracts import Sector
from shared.portfolio.market import Quote, QuoteMissing
from shared.portfolio.models import (
    Holding,
    Money,
    Portfolio,
    Price,
    Snapshot,
    SnapshotPosition,
    from_fields,
    money,
)

ZERO = Decimal(0)


class Position(BaseModel):
    """One holding valued at the as-of close."""

    symbol: str
    shares: int
    avg_cost: Price
    price: Price = Field(description="the as-of close, or the average cost when unpriced")
    priced: bool = Field(description="False: no close as of the date, carried at cost")
    price_note: str = Field(description="the close's bar date, or why there is none")
    value: Money
    weight: float = Field(description="of the book's total value")
    unrealized_pnl: Money
    pnl_pct: float = Field(description="unrealized P&L over the cost basis")
    sector: Sector | None = None


class Valuation(BaseModel):
    """The whole book at one time."""

    portfolio: str
    currency: str
    as_of: AwareDatetime
    initial_cash: Money
    cash: Money
    equity: Money = Field(description="the holdings' value")
    total_value: Money
    cash_weight: float
    total_return: float = Field(description="total value over the initial cash, minus 1")
    positions: list[Position]

    @property
    def unpriced(self) -> list[str]:
        """Holdings carried at cost for want of a close."""
        return [p.symbol for p in self.positions if not p.priced]

    def position(self, symbol: str) -> Position | None:
        """The holding of ``symbol``, if the book has one."""
        return next((p for p in self.positions if p.symbol == symbol), None)


def _ratio(part: Decimal, whole: Decimal) -> float:
    return float(part / whole) if whole else 0.0


def value_book(
    portfolio: Portfolio,
    holdings: Sequence[Holding],
    quotes: Mapping[str, Quote | QuoteMissing],
    as_of: datetime,
    sectors: Mapping[str, Sector | None] | None = None,
) -> Valuation:
    """The book at ``quotes``; a holding absent from ``quotes`` or missing one is carried at cost.

    ``sectors`` (the data layer's) win over the sector stored with a holding when they know one.
    """
    known = sectors or {}
    marked: list[tuple[Holding, Decimal, bool, str]] = []
    for holding in holdings:
        quote = quotes.get(holding.symbol)
        if isinstance(quote, Quote):
            marked.append((holding, quote.price, True, f"close of {quote.bar_time.date()}"))
        else:
            reason = quote.reason if quote is not None else "not quoted"
            marked.append((holding, holding.avg_cost, False, f"carried at cost: {reason}"))
    equity = money(sum((px * h.shares for h, px, _, _ in marked), ZERO))
    total = portfolio.cash + equity
    positions = []
    for holding, px, priced, note in marked:
        value = money(px * holding.shares)
        pnl = value - holding.cost_basis
        positions.append(
            from_fields(
                Position,
                holding,
                price=px,
                priced=priced,
                price_note=note,
                value=value,
                weight=_ratio(value, total),
                unrealized_pnl=pnl,
                pnl_pct=_ratio(pnl, holding.cost_basis),
                sector=known.get(holding.symbol) or holding.sector,
            )
        )
    return from_fields(
        Valuation,
        portfolio,
        portfolio=portfolio.name,
        as_of=as_of,
        equity=equity,
        total_value=total,
        cash_weight=_ratio(portfolio.cash, total),
        total_return=_ratio(total, portfolio.initial_cash) - 1 if portfolio.initial_cash else 0.0,
        positions=positions,
    )


def snapshot_of(valuation: Valuation, key: str) -> Snapshot:
    """The valuation as a snapshot to store under ``key``."""
    positions = [from_fields(SnapshotPosition, p) for p in valuation.positions]
    return from_fields(Snapshot, valuation, key=key, positions=positions)
