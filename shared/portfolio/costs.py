"""What a paper fill costs: slippage on the price, a fee on the value.

The planner and the broker use these same functions, so an order sized to
leave 5% cash leaves 5% cash once filled: the fill is at the as-of close moved
against the trader by ``slippage_bps``, and the fee is ``fee_bps`` of the
filled value, at least ``fee_min``.
"""

from __future__ import annotations

import math
from decimal import Decimal

from pydantic import BaseModel, ConfigDict, Field

from shared.portfolio.models import Money, Side, money, price

BPS = Decimal(10_000)


class Costs(BaseModel):
    """The paper broker's fees and slippage."""

    model_config = ConfigDict(frozen=True, extra="forbid")

    fee_bps: float = Field(1.0, ge=0, le=100, description="fee, basis points of the fill value")
    fee_min: Money = Field(Decimal(0), ge=0, description="smallest fee per fill")
    slippage_bps: float = Field(5.0, ge=0, le=500, description="fill price worse than the close")


def fill_price(close: Decimal, side: Side, costs: Costs) -> Decimal:
    """The close moved against the order: up for a buy, down for a sell."""
    slip = Decimal(str(costs.slippage_bps)) / BPS
    return price(close * (1 + slip if side is Side.BUY else 1 - slip))


def fee(value: Decimal, costs: Costs) -> Decimal:
    """The fee on a fill of ``value``."""
    return max(costs.fee_min, money(value * Decimal(str(costs.fee_bps)) / BPS))


def buy_cost(shares: int, fill: Decimal, costs: Costs) -> Decimal:
    """Cash a buy of ``shares`` at ``fill`` takes, fee included."""
    value = money(fill * shares)
    return value + fee(value, costs) if shares else Decimal(0)


def sell_proceeds(shares: int, fill: Decimal, costs: Costs) -> Decimal:
    """Cash a sell of ``shares`` at ``fill`` brings, fee deducted."""
    value = money(fill * shares)
    return value - fee(value, costs) if shares else Decimal(0)


def affordable_shares(budget: Decimal, fill: Decimal, costs: Costs) -> int:
    """The most whole shares whose buy cost fits in ``budget``."""
    if budget <= 0:
        return 0
    rate = 1 + Decimal(str(costs.fee_bps)) / BPS
    shares = int(budget / (fill * rate))
    while shares > 0 and buy_cost(shares, fill, costs) > budget:
        shares -= 1
    return shares


def shares_to_raise(needed: Decimal, fill: Decimal, costs: Costs, held: int) -> int:
    """The fewest shares (at most ``held``) whose sale brings at least ``needed``."""
    if needed <= 0:
        return 0
    shares = min(held, math.ceil(needed / fill))
    while shares < held and sell_proceeds(shares, fill, costs) < needed:
        shares += 1
    return shares
