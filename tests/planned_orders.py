"""Planned orders as a Portfolio run hands them to ``BrokerOrders``, for the broker tests."""

from __future__ import annotations

from decimal import Decimal

from shared.data.contracts import Sector
from shared.portfolio.models import Side
from shared.portfolio.orders import PlannedOrder


def planned_order(
    index: int,
    symbol: str,
    side: Side,
    shares: int,
    price: Decimal,
    *,
    rationale: str = "decided by the test",
    sector: Sector = Sector.INFORMATION_TECHNOLOGY,
) -> PlannedOrder:
    """Order ``index`` of a plan: ``shares`` of ``symbol`` at the close ``price``, no costs."""
    value = price * shares
    return PlannedOrder(
        index=index,
        symbol=symbol,
        side=side,
        shares=shares,
        requested_shares=shares,
        close=price,
        fill_price=price,
        est_value=value,
        est_fees=Decimal(0),
        est_cash_change=-value if side is Side.BUY else value,
        sector=sector,
        rationale=rationale,
    )
