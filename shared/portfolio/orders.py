"""Orders: what the PM asks for, what the planner sized, what the broker filled or refused.

The PM's ``SellOrder`` and ``BuyOrder`` are also its output schema's items, so
the model writes exactly what the planner reads. A ``PlannedOrder`` has its
index in execution order (sells first, then buys): with the workflow id it is
the trade's idempotency key.
"""

from __future__ import annotations

from datetime import datetime
from enum import StrEnum

from pydantic import BaseModel, Field, model_validator

from shared.data.contracts import Sector, TickerSymbol
from shared.portfolio.costs import Costs
from shared.portfolio.limits import Limits
from shared.portfolio.models import Money, Price, Side, Trade

OrderTicker = TickerSymbol
"""The ticker an order names, as the PM model writes it."""


class SellOrder(BaseModel):
    """Sell shares of a holding."""

    ticker: OrderTicker
    shares: int = Field(gt=0, description="whole shares, at most the shares held")
    rationale: str = Field(min_length=1)


class BuyOrder(BaseModel):
    """Buy shares, with the levels the position is managed by (stop_loss below take_profit)."""

    ticker: OrderTicker
    shares: int = Field(gt=0, description="whole shares")
    price_target: float | None = Field(None, gt=0, description="where the thesis says it goes")
    stop_loss: float = Field(gt=0, description="5-15% below the last close")
    take_profit: float = Field(gt=0, description="10-30% above the last close")
    rationale: str = Field(min_length=1)

    @model_validator(mode="after")
    def _stop_below_take(self) -> BuyOrder:
        if not self.stop_loss < self.take_profit:
            raise ValueError(
                f"stop_loss ({self.stop_loss:g}) must be below take_profit ({self.take_profit:g})"
            )
        return self


class Origin(StrEnum):
    """Who asked for an order."""

    PM = "pm"
    SWEEP = "sweep"


class PlannedOrder(BaseModel):
    """An order sized to the limits, priced at the as-of close with the broker's costs."""

    index: int = Field(-1, description="position in execution order; with the run id, its key")
    symbol: str
    side: Side
    shares: int = Field(gt=0)
    requested_shares: int = Field(gt=0, description="what was asked before the limits")
    close: Price
    fill_price: Price
    est_value: Money
    est_fees: Money
    est_cash_change: Money
    sector: Sector | None = None
    origin: Origin = Origin.PM
    rationale: str
    stop_loss: Price | None = None
    take_profit: Price | None = None
    price_target: Price | None = None
    adjustments: list[str] = Field(default_factory=list, description="every change, and why")


class RejectedOrder(BaseModel):
    """An order that will not (or did not) trade, and why."""

    symbol: str
    side: Side
    shares: int
    origin: Origin = Origin.PM
    reason: str
    index: int | None = Field(None, description="set when refused at execution")


class Projection(BaseModel):
    """The book once the plan is filled, at the as-of closes."""

    cash: Money
    total_value: Money
    cash_weight: float
    positions: int
    weights: dict[str, float]
    sector_weights: dict[str, float]


class OrderPlan(BaseModel):
    """The sized orders in execution order, what was refused, and the book they leave."""

    orders: list[PlannedOrder]
    rejected: list[RejectedOrder]
    notes: list[str] = Field(default_factory=list, description="limits the book breaks already")
    projected: Projection
    limits: Limits
    costs: Costs
    cash_floor: Money = Field(description="cash the buys were sized to leave")


class ExecutedOrder(BaseModel):
    """A planned order and the trade that filled it."""

    order: PlannedOrder
    trade: Trade
    new: bool = Field(description="False: an earlier attempt had already booked it")


class Execution(BaseModel):
    """What the broker did with a plan."""

    executed: list[ExecutedOrder]
    rejected: list[RejectedOrder]
    as_of: datetime
