"""Alpaca Trading API v2 objects as the client reads and writes them (pydantic).

Alpaca sends every quantity, price and amount as a JSON string; they are read as
``Decimal`` and never pass through a binary float. Times are timezone-aware and
converted to UTC: the clock's New York offsets and the calendar's ``HH:MM`` New York
session times included. Keys Alpaca adds later are ignored; a key the client needs
that is missing, or a status it does not know, is a contract change the client
reports (``BrokerContractChanged``) rather than guesses at.
"""

from __future__ import annotations

import datetime as dt
import re
from datetime import UTC, date, datetime, time
from decimal import Decimal
from enum import StrEnum
from typing import Annotated, Any
from zoneinfo import ZoneInfo

from pydantic import (
    AfterValidator,
    AwareDatetime,
    BaseModel,
    ConfigDict,
    Field,
    field_serializer,
    field_validator,
    model_validator,
)

from shared.broker.models import TimeInForce  # the spec's six words, which the book uses too

NEW_YORK = ZoneInfo("America/New_York")
CLIENT_ORDER_ID_PATTERN = r"^[A-Za-z0-9-]{1,48}$"
"""Alpaca takes 128 characters of anything; 48 of these survive every broker and log."""
_CLOCK_TIME = re.compile(r"\d{2}:\d{2}")

Utc = Annotated[AwareDatetime, AfterValidator(lambda when: when.astimezone(UTC))]
"""A time as Alpaca sends it (``Z`` or an offset), held in UTC."""


class OrderSide(StrEnum):
    """The spec's OrderSide."""

    BUY = "buy"
    SELL = "sell"


class OrderType(StrEnum):
    """The spec's OrderType; the client places market and limit orders only."""

    MARKET = "market"
    LIMIT = "limit"
    STOP = "stop"
    STOP_LIMIT = "stop_limit"
    TRAILING_STOP = "trailing_stop"


class OrderStatus(StrEnum):
    """Every status Alpaca documents for an order (the spec's OrderStatus)."""

    NEW = "new"
    PARTIALLY_FILLED = "partially_filled"
    FILLED = "filled"
    DONE_FOR_DAY = "done_for_day"
    CANCELED = "canceled"
    EXPIRED = "expired"
    REPLACED = "replaced"
    PENDING_CANCEL = "pending_cancel"
    PENDING_REPLACE = "pending_replace"
    ACCEPTED = "accepted"
    PENDING_NEW = "pending_new"
    ACCEPTED_FOR_BIDDING = "accepted_for_bidding"
    STOPPED = "stopped"
    REJECTED = "rejected"
    SUSPENDED = "suspended"
    CALCULATED = "calculated"
    HELD = "held"


class FillType(StrEnum):
    """Whether an execution completed its order (``fill``) or left some to fill."""

    FILL = "fill"
    PARTIAL_FILL = "partial_fill"


class PositionSide(StrEnum):
    """A position is long or short."""

    LONG = "long"
    SHORT = "short"


class _Wire(BaseModel):
    """An object Alpaca sends: read as given, new keys ignored, never changed."""

    model_config = ConfigDict(extra="ignore", frozen=True)


class AlpacaOrder(_Wire):
    """The spec's Order, for the simple equity orders the client places and finds."""

    id: str = Field(description="Alpaca's order id (a UUID)")
    client_order_id: str = Field(description="the id the caller chose, unique for ever")
    symbol: str
    side: OrderSide
    type: OrderType
    time_in_force: TimeInForce
    qty: Decimal | None = Field(None, description="shares ordered; None for a notional order")
    notional: Decimal | None = Field(None, description="dollars ordered, when not qty")
    filled_qty: Decimal
    filled_avg_price: Decimal | None = None
    limit_price: Decimal | None = None
    stop_price: Decimal | None = None
    status: OrderStatus
    extended_hours: bool = False
    created_at: Utc
    updated_at: Utc | None = None
    submitted_at: Utc | None = None
    filled_at: Utc | None = None
    canceled_at: Utc | None = None
    expired_at: Utc | None = None
    failed_at: Utc | None = None
    replaced_at: Utc | None = None
    replaced_by: str | None = Field(None, description="the order that replaced this one")


class AlpacaPosition(_Wire):
    """The spec's Position: shares held in one symbol, and what they are worth now."""

    symbol: str
    asset_id: str
    side: PositionSide
    qty: Decimal
    qty_available: Decimal | None = Field(None, description="qty less what open orders offer")
    avg_entry_price: Decimal
    cost_basis: Decimal
    market_value: Decimal | None = None
    current_price: Decimal | None = None
    lastday_price: Decimal | None = None
    unrealized_pl: Decimal | None = None


class AlpacaAccount(_Wire):
    """The spec's Account: the money side of the book at the broker."""

    id: str
    account_number: str | None = None
    status: str = Field(description="ACTIVE unless something is wrong (the spec's AccountStatus)")
    currency: str
    cash: Decimal
    buying_power: Decimal
    equity: Decimal
    last_equity: Decimal | None = None
    long_market_value: Decimal | None = None
    short_market_value: Decimal | None = None
    multiplier: Decimal | None = None
    pattern_day_trader: bool = False
    trading_blocked: bool = False
    account_blocked: bool = False
    trade_suspended_by_user: bool = False


class AlpacaFill(_Wire):
    """One execution: a FILL account activity (the spec's TradingActivities)."""

    id: str = Field(description="the activity id, also the page token after it")
    order_id: str
    symbol: str
    side: OrderSide
    qty: Decimal
    price: Decimal
    transaction_time: Utc
    type: FillType
    cum_qty: Decimal = Field(description="shares of the order filled so far, this one included")
    leaves_qty: Decimal = Field(description="shares of the order still to fill")
    order_status: OrderStatus | None = None


class MarketClock(_Wire):
    """The spec's clock: whether the market is open now, and its next open and close (UTC)."""

    timestamp: Utc
    is_open: bool
    next_open: Utc
    next_close: Utc


class TradingDay(_Wire):
    """One session of the spec's calendar, its core hours as UTC times."""

    date: dt.date  # spelt through the module: the field's name hides the type in the class
    open: Utc
    close: Utc
    settlement_date: dt.date | None = None

    @model_validator(mode="before")
    @classmethod
    def _new_york_clock_times(cls, data: Any) -> Any:
        """Alpaca gives ``open`` and ``close`` as ``HH:MM`` in New York on ``date``."""
        if not isinstance(data, dict) or not isinstance(data.get("date"), str):
            return data
        day = date.fromisoformat(data["date"])
        return data | {
            name: datetime.combine(day, time.fromisoformat(value), NEW_YORK)
            for name in ("open", "close")
            if isinstance(value := data.get(name), str) and _CLOCK_TIME.fullmatch(value)
        }


class OrderRequest(BaseModel):
    """A whole-share market or limit order, as POST /v2/orders takes it.

    Numbers go on the wire as strings, never as floats; ``client_order_id`` is the
    caller's (the business key that makes a resend harmless), never invented here.
    """

    model_config = ConfigDict(extra="forbid", frozen=True)

    symbol: str = Field(min_length=1, max_length=32, pattern=r"^\S+$")
    qty: Decimal = Field(gt=0, description="whole shares")
    side: OrderSide
    type: OrderType = Field(description="market or limit")
    time_in_force: TimeInForce
    limit_price: Decimal | None = Field(None, gt=0, description="required for a limit order")
    client_order_id: str = Field(pattern=CLIENT_ORDER_ID_PATTERN)

    @field_validator("qty")
    @classmethod
    def _whole_shares(cls, qty: Decimal) -> Decimal:
        if qty != qty.to_integral_value():
            raise ValueError(f"qty {qty} is not a whole number of shares")
        return qty.quantize(Decimal(1))

    @model_validator(mode="after")
    def _a_market_or_limit_order(self) -> OrderRequest:
        if self.type not in (OrderType.MARKET, OrderType.LIMIT):
            raise ValueError(f"type {self.type} is not placed by this client: market or limit")
        if (self.type is OrderType.LIMIT) != (self.limit_price is not None):
            raise ValueError("a limit order needs limit_price, and only a limit order takes one")
        return self

    @field_serializer("qty", "limit_price")
    def _decimal_text(self, value: Decimal | None) -> str | None:
        """Plain digits (``10``, ``187.25``): never a float, never an exponent."""
        return None if value is None else format(value, "f")

    def wire(self) -> dict[str, Any]:
        """The JSON body of POST /v2/orders."""
        return self.model_dump(mode="json", exclude_none=True)
