"""The book's records: portfolios, holdings, trades, snapshots and decisions, money as Decimal.

Imported by ``shared.config`` (for the broker's ``Costs``), so it imports nothing that
reads the settings.

Amounts are exact decimals quantised once, here, so every layer rounds the same
way: cash, values and fees to ``MONEY_PLACES``, prices and average costs to
``PRICE_PLACES``. Shares are whole numbers: the PM orders share counts and the
paper broker fills them whole, so no fraction of a share is ever rounded away.
"""

from __future__ import annotations

from datetime import UTC, datetime
from decimal import ROUND_HALF_EVEN, Decimal
from enum import StrEnum
from typing import Annotated, Any, TypeVar

from pydantic import AfterValidator, AwareDatetime, BaseModel, ConfigDict, Field, field_validator

from shared.data.contracts import Sector

SYMBOL_MAX_LENGTH = 32
"""Exchange-qualified symbols such as "BRK.B" or "7203.T" fit easily."""
RUN_ID_MAX_LENGTH = 1000
"""Temporal's default limit on a workflow id."""
MONEY_PLACES = Decimal("0.0001")
"""Cash, trade values and fees: a hundredth of a cent, so fees in basis points add up exactly."""
PRICE_PLACES = Decimal("0.000001")
"""Prices and average costs: enough for sub-cent quotes and fee-inclusive cost bases."""
NAME_PATTERN = r"^[A-Za-z0-9][A-Za-z0-9_.-]{0,63}$"
KEY_MAX_LENGTH = RUN_ID_MAX_LENGTH + 100
"""An idempotency key is a workflow id plus a short step suffix."""


def money(value: Decimal | int | float | str) -> Decimal:
    """``value`` as an amount of money (floats through their shortest repr, never binary)."""
    return _decimal(value).quantize(MONEY_PLACES, rounding=ROUND_HALF_EVEN)


def price(value: Decimal | int | float | str) -> Decimal:
    """``value`` as a price per share."""
    return _decimal(value).quantize(PRICE_PLACES, rounding=ROUND_HALF_EVEN)


def _decimal(value: Decimal | int | float | str) -> Decimal:
    number = value if isinstance(value, Decimal) else Decimal(str(value))
    if not number.is_finite():
        raise ValueError(f"{value!r} is not a finite amount")
    return number


M = TypeVar("M", bound=BaseModel)


def from_fields(model: type[M], record: object, /, **given: Any) -> M:
    """A ``model`` made from another record: each field from ``given`` where it is named, else
    from ``record``'s attribute of the same name; a field neither has keeps its default."""
    values = {
        name: given[name] if name in given else getattr(record, name)
        for name in model.model_fields
        if name in given or hasattr(record, name)
    }
    return model.model_validate(values)


Money = Annotated[Decimal, AfterValidator(money)]
Price = Annotated[Decimal, AfterValidator(price)]
Symbol = Annotated[str, Field(min_length=1, max_length=SYMBOL_MAX_LENGTH)]


def canonical_symbol(value: str) -> str:
    """Tickers compare upper-case and trimmed everywhere in the book."""
    return value.strip().upper()


class Side(StrEnum):
    """Which way a trade goes."""

    BUY = "BUY"
    SELL = "SELL"


class BrokerKind(StrEnum):
    """Where a book's orders go; a book is bound to one when it is created, for good."""

    PAPER = "paper"
    """Filled at the as-of close by ``PaperBroker``, booked directly."""
    ALPACA = "alpaca"
    """Sent to Alpaca as order intents; booked from the fills it reports."""


class _Record(BaseModel):
    model_config = ConfigDict(frozen=True, extra="forbid")


class Portfolio(_Record):
    """A named book: its cash now, what it started with, and the broker it trades at."""

    name: str = Field(pattern=NAME_PATTERN)
    currency: str = Field("USD", pattern=r"^[A-Z]{3}$")
    initial_cash: Money = Field(ge=0)
    cash: Money = Field(description="may not go below zero: buys need the cash first")
    created_at: AwareDatetime
    broker: BrokerKind = Field(BrokerKind.PAPER, description="bound at creation, never switched")


class Holding(_Record):
    """One position of a book; at most one per symbol."""

    symbol: Symbol
    shares: int = Field(gt=0)
    avg_cost: Price = Field(gt=0, description="per share, fees included")
    sector: Sector | None = Field(None, description="GICS sector from the data layer; None: ETF")
    opened_at: AwareDatetime
    updated_at: AwareDatetime

    @property
    def cost_basis(self) -> Decimal:
        """What the position cost, fees included."""
        return money(self.avg_cost * self.shares)


class TradeRequest(_Record):
    """One fill to book: the broker priced it, the store applies it exactly once per key."""

    key: str = Field(min_length=1, max_length=KEY_MAX_LENGTH, description="idempotency key")
    symbol: Symbol
    side: Side
    shares: int = Field(gt=0)
    price: Price = Field(gt=0, description="the fill price, slippage included")
    fees: Money = Field(ge=0)
    executed_at: AwareDatetime = Field(description="the as-of close the fill is at")
    sector: Sector | None = None
    rationale: str = ""
    stop_loss: Price | None = Field(None, gt=0)
    take_profit: Price | None = Field(None, gt=0)
    source: str = Field("", max_length=RUN_ID_MAX_LENGTH, description="the workflow id")

    @field_validator("symbol")
    @classmethod
    def _canonical(cls, value: str) -> str:
        return canonical_symbol(value)

    @property
    def value(self) -> Decimal:
        """Shares times the fill price."""
        return money(self.price * self.shares)

    @property
    def cash_change(self) -> Decimal:
        """What the fill does to cash: a buy pays value and fees, a sell receives value less fees."""
        sign = -1 if self.side is Side.BUY else 1
        return money(sign * self.value - self.fees)


class Trade(_Record):
    """A booked fill."""

    key: str
    symbol: Symbol
    side: Side
    shares: int
    price: Price
    value: Money
    fees: Money
    cash_change: Money
    realized_pnl: Money | None = Field(None, description="sells: proceeds less cost basis")
    executed_at: AwareDatetime
    rationale: str
    stop_loss: Price | None = None
    take_profit: Price | None = None
    source: str
    created_at: AwareDatetime


class TradeOutcome(_Record):
    """The booked trade, and whether this call booked it (False: the key was already used)."""

    trade: Trade
    new: bool


class SnapshotPosition(_Record):
    """One holding in a snapshot, valued at the as-of close."""

    symbol: Symbol
    shares: int
    price: Price
    value: Money
    weight: float = Field(description="of the book's total value")
    sector: Sector | None = None
    unrealized_pnl: Money
    priced: bool = Field(True, description="False: no close as of the date, carried at cost")


class Snapshot(_Record):
    """The book's value at one time, written once per key."""

    key: str = Field(min_length=1, max_length=KEY_MAX_LENGTH)
    as_of: AwareDatetime
    total_value: Money
    cash: Money
    equity: Money = Field(description="the holdings' value")
    positions: list[SnapshotPosition]
    created_at: AwareDatetime = Field(default_factory=lambda: datetime.now(UTC))


class DecisionStatus(StrEnum):
    """What became of a PM decision."""

    APPROVED_AUTO = "approved_auto"
    APPROVED = "approved"
    REJECTED = "rejected"
    EXPIRED = "expired"


class DecisionRecord(_Record):
    """A PM decision and its plan as the workflow saw them, written once per key."""

    key: str = Field(min_length=1, max_length=KEY_MAX_LENGTH)
    as_of: AwareDatetime
    status: DecisionStatus
    decision: dict[str, Any] = Field(description="the decision, plan and approval, as JSON")
    created_at: AwareDatetime = Field(default_factory=lambda: datetime.now(UTC))
