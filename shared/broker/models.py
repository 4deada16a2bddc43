"""The records of a book's orders at a broker: intents, fills, halts and adoptions.

Amounts are the book's exact decimals (``Money``, ``Price``), shares are whole (the
book never holds a fraction), times are timezone-aware UTC. Order types and times
in force use the broker's lowercase words; sides are the book's ``Side``.
"""

from __future__ import annotations

from decimal import Decimal
from enum import StrEnum
from typing import Annotated

from pydantic import AfterValidator, AwareDatetime, BaseModel, ConfigDict, Field, model_validator

from shared.data.contracts import Sector
from shared.portfolio.models import (
    RUN_ID_MAX_LENGTH,
    Money,
    Price,
    Side,
    Symbol,
    Trade,
    canonical_symbol,
    money,
)

CLIENT_ORDER_ID_MAX_LENGTH = 48
"""Alpaca accepts up to 128; 48 keeps the id readable and fits stricter brokers."""
BROKER_ID_MAX_LENGTH = 128
"""A broker's order or fill id (Alpaca's are UUIDs, or a time and a UUID for fills)."""
MAX_ORDER_INDEX = 999_999
"""An order's index in its workflow: six digits, far beyond any plan's length."""

Ticker = Annotated[Symbol, AfterValidator(canonical_symbol)]
"""A symbol as the book compares it: trimmed, upper-case."""


class OrderType(StrEnum):
    """How the order is priced at the broker."""

    MARKET = "market"
    LIMIT = "limit"


class TimeInForce(StrEnum):
    """How long the broker keeps the order working."""

    DAY = "day"
    GTC = "gtc"
    OPG = "opg"
    CLS = "cls"
    IOC = "ioc"
    FOK = "fok"


class IntentStatus(StrEnum):
    """Where an order intent stands; the last five are terminal (``intents.TERMINAL``)."""

    PENDING = "pending"
    """Recorded, maybe sent: the broker may know it by its client order id."""
    SUBMITTED = "submitted"
    """The broker accepted it and gave its order id."""
    PARTIALLY_FILLED = "partially_filled"
    FILLED = "filled"
    CANCELED = "canceled"
    EXPIRED = "expired"
    REJECTED = "rejected"
    """Refused by the broker after accepting it."""
    REFUSED = "refused"
    """Never accepted: by our guardrails or halt, or the broker's 403/422 on submission."""


class _Record(BaseModel):
    model_config = ConfigDict(frozen=True, extra="forbid")


class OrderSpec(_Record):
    """One order a workflow means to send, as the book records it before sending."""

    workflow_id: str = Field(
        min_length=1, max_length=RUN_ID_MAX_LENGTH, description="the workflow that orders it"
    )
    order_index: int = Field(
        ge=0, le=MAX_ORDER_INDEX, description="its place in the workflow's orders"
    )
    symbol: Ticker = Field(description="the ticker, as the book and the broker name it")
    side: Side = Field(description="buy or sell")
    qty: int = Field(gt=0, description="whole shares, as the book holds them")
    order_type: OrderType = Field(OrderType.MARKET, description="market, or limit at limit_price")
    limit_price: Price | None = Field(None, gt=0, description="limit orders only")
    time_in_force: TimeInForce = Field(TimeInForce.DAY, description="how long it works")
    reference_price: Price = Field(
        gt=0, description="the last close: what a market order is valued at by the guardrails"
    )
    sector: Sector | None = Field(None, description="for the holding a buy opens")
    rationale: str = Field("", description="why: goes on the trade each fill books")

    @model_validator(mode="after")
    def _limit_price_with_limit_orders(self) -> OrderSpec:
        if (self.order_type is OrderType.LIMIT) != (self.limit_price is not None):
            raise ValueError(
                f"a {self.order_type.value} order "
                + ("needs a limit_price" if self.limit_price is None else "takes no limit_price")
            )
        return self

    @property
    def notional(self) -> Decimal:
        """What the order is worth: at its limit, else at the reference price."""
        return money(self.qty * (self.limit_price or self.reference_price))


class OrderIntent(OrderSpec):
    """An order as the book knows it: what was meant, and what the broker made of it."""

    book: str = Field(description="the portfolio's name")
    client_order_id: str = Field(
        max_length=CLIENT_ORDER_ID_MAX_LENGTH,
        description="ours, sent with the order: the broker takes an id once",
    )
    status: IntentStatus = Field(description="where the order stands")
    broker_order_id: str | None = Field(None, description="None until the broker gives it")
    filled_qty: int = Field(0, ge=0, description="shares of the fills booked so far")
    avg_fill_price: Price | None = Field(None, description="of the fills booked so far")
    reason: str | None = Field(None, description="why it was refused, rejected or canceled")
    created_at: AwareDatetime = Field(description="when it was recorded, before sending")
    updated_at: AwareDatetime = Field(description="its last change")


class BrokerFill(_Record):
    """One execution the broker reports, to be booked once under its id."""

    fill_id: str = Field(
        min_length=1, max_length=BROKER_ID_MAX_LENGTH, description="the broker's, unique"
    )
    client_order_id: str | None = Field(None, description="ours, when the report carries it")
    broker_order_id: str | None = Field(
        None, max_length=BROKER_ID_MAX_LENGTH, description="the broker's id of the order"
    )
    symbol: Ticker = Field(description="what was traded")
    side: Side = Field(description="the order's side")
    qty: int = Field(gt=0, description="whole shares filled")
    price: Price = Field(gt=0, description="the price they filled at")
    transaction_time: AwareDatetime = Field(description="when the broker filled them")
    fees: Money = Field(Decimal(0), ge=0, description="what the broker charged for the fill")

    @model_validator(mode="after")
    def _names_its_order(self) -> BrokerFill:
        if self.client_order_id is None and self.broker_order_id is None:
            raise ValueError("a fill names its order: client_order_id or broker_order_id")
        return self


class BookedFill(BrokerFill):
    """A fill as booked: its order's ids both known, and what it changed."""

    book: str = Field(description="the portfolio's name")
    client_order_id: str = Field(description="its order's, found by the broker's id if need be")
    trade_key: str | None = Field(description="its trade's key; None: covered by an adoption")
    adoption_id: int | None = Field(None, description="the adoption whose numbers include it")
    created_at: AwareDatetime = Field(description="when it was booked")


class Position(_Record):
    """Whole shares of one symbol and what they cost each (the broker's or the book's)."""

    symbol: Ticker = Field(description="the ticker")
    shares: int = Field(gt=0, description="long only: the book never holds a short")
    avg_cost: Price = Field(gt=0, description="per share")


class Halt(_Record):
    """One change of a book's halt: stopped (no order may be sent) or resumed."""

    book: str = Field(description="the portfolio's name")
    halted: bool = Field(description="True: halted from now; False: resumed")
    reason: str = Field(description="why it was halted; empty for a resume")
    who: str = Field(min_length=1, description="the person or process that did it")
    at: AwareDatetime = Field(description="when")


class Adoption(_Record):
    """A person's explicit choice of the broker's numbers over the book's, and both."""

    id: int = Field(description="its number; a fill it covers names it")
    book: str = Field(description="the portfolio's name")
    as_of: AwareDatetime = Field(description="the newest fill the broker's numbers include")
    who: str = Field(min_length=1, description="the person who chose the broker's numbers")
    reason: str = Field(min_length=1, description="why")
    cash_before: Money = Field(description="the book's cash it replaced")
    cash_after: Money = Field(description="the broker's cash, now the book's")
    positions_before: list[Position] = Field(description="the book's holdings it replaced")
    positions_after: list[Position] = Field(description="the broker's, now the book's holdings")
    created_at: AwareDatetime = Field(description="when it was adopted")


class FillOutcome(_Record):
    """What booking a fill did, and whether this call did it (False: booked already)."""

    fill: BookedFill = Field(description="the fill as booked (the first time)")
    intent: OrderIntent = Field(description="the fill's order intent, filled quantities updated")
    trade: Trade | None = Field(description="the trade it booked; None: an adoption covered it")
    new: bool = Field(description="False: the fill was booked already, nothing changed")
