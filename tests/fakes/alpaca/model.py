"""What the stand-in keeps: orders, fills and positions, in Alpaca's own vocabulary."""

from __future__ import annotations

import uuid
from collections.abc import Mapping
from dataclasses import dataclass
from datetime import datetime
from decimal import Decimal
from enum import StrEnum


class Side(StrEnum):
    """OrderSide in the spec."""

    BUY = "buy"
    SELL = "sell"


class OrderType(StrEnum):
    """The spec's OrderType for US equities, less ``trailing_stop`` (not simulated)."""

    MARKET = "market"
    LIMIT = "limit"
    STOP = "stop"
    STOP_LIMIT = "stop_limit"


class TimeInForce(StrEnum):
    """The spec's TimeInForce: all six apply to US equities."""

    DAY = "day"
    GTC = "gtc"
    OPG = "opg"
    CLS = "cls"
    IOC = "ioc"
    FOK = "fok"


class OrderStatus(StrEnum):
    """The statuses the simulation moves an order through (a subset of the spec's OrderStatus)."""

    ACCEPTED = "accepted"  # received while the market is closed: queued for the next open
    NEW = "new"  # live in a session
    PARTIALLY_FILLED = "partially_filled"
    FILLED = "filled"
    CANCELED = "canceled"
    EXPIRED = "expired"


OPEN_STATUSES = frozenset({OrderStatus.ACCEPTED, OrderStatus.NEW, OrderStatus.PARTIALLY_FILLED})


def asset_id(symbol: str) -> str:
    """A stable asset id per symbol, so positions and orders agree across runs."""
    return str(uuid.uuid5(uuid.NAMESPACE_URL, f"alpaca-stand-in/us_equity/{symbol}"))


@dataclass(frozen=True)
class OrderRequest:
    """A POST /v2/orders body that passed validation."""

    symbol: str
    side: Side
    type: OrderType
    time_in_force: TimeInForce
    qty: Decimal | None
    notional: Decimal | None
    limit_price: Decimal | None
    stop_price: Decimal | None
    client_order_id: str | None
    extended_hours: bool
    position_intent: str | None
    # How each numeric field came over the wire, "string" or "number": lets a test assert that
    # the client sends decimals as strings and never as binary floats.
    wire_types: Mapping[str, str]


@dataclass
class StoredOrder:
    """One order as the stand-in holds it; ``server.orders`` hands out copies."""

    id: str
    client_order_id: str
    request: OrderRequest
    status: OrderStatus
    created_at: datetime
    fill_plan: tuple[Decimal, ...]
    updated_at: datetime
    filled_qty: Decimal = Decimal(0)
    filled_notional: Decimal = Decimal(0)
    filled_at: datetime | None = None
    canceled_at: datetime | None = None
    expired_at: datetime | None = None
    # The quantity to fill: the ordered qty, or for a notional order the qty its first fill fixes.
    total_qty: Decimal | None = None
    tranche: int = 0  # how many of fill_plan's fractions have been filled
    stop_triggered: bool = False

    @property
    def symbol(self) -> str:
        return self.request.symbol

    @property
    def side(self) -> Side:
        return self.request.side

    @property
    def is_open(self) -> bool:
        return self.status in OPEN_STATUSES

    @property
    def filled_avg_price(self) -> Decimal | None:
        return self.filled_notional / self.filled_qty if self.filled_qty else None

    @property
    def wire_types(self) -> Mapping[str, str]:
        """How the client sent each numeric field ("string" or "number")."""
        return self.request.wire_types


@dataclass(frozen=True)
class Fill:
    """One execution: a FILL activity, with its own id."""

    id: str
    order_id: str
    symbol: str
    side: Side
    qty: Decimal
    price: Decimal
    cum_qty: Decimal
    leaves_qty: Decimal
    transaction_time: datetime
    order_status: OrderStatus

    @property
    def type(self) -> str:
        """``fill`` for the execution that completes the order, else ``partial_fill``."""
        return "fill" if self.leaves_qty == 0 else "partial_fill"


@dataclass
class Position:
    """A long holding (the account is a cash account: no shorts)."""

    symbol: str
    qty: Decimal
    avg_entry_price: Decimal

    @property
    def cost_basis(self) -> Decimal:
        return self.qty * self.avg_entry_price
