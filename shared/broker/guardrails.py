"""The rules an order must pass before it may be sent to a broker.

Checked after its intent is recorded and before it is submitted, against what the
book holds and has already asked for (``Exposure``, read by ``BrokerBook.exposure``).
Every rule is checked, so a refusal lists all that is wrong at once, each as a
sentence naming the figure and the limit it breaks. Open intents count as asked for
whether or not they reached the broker yet: two workflows ordering at once are
each checked against the other's order, never against a book without it.
"""

from __future__ import annotations

from datetime import UTC, datetime, time, timedelta
from decimal import Decimal
from zoneinfo import ZoneInfo

from pydantic import BaseModel, ConfigDict, Field

from shared.broker.models import Halt, OrderSpec, Ticker
from shared.portfolio.models import Money, Side, money

EXCHANGE_TIME_ZONE = ZoneInfo("America/New_York")
"""The daily cap's day is the US exchanges' calendar day."""


class BrokerLimits(BaseModel):
    """What a book's orders may be worth, and in what; set per book by its owner."""

    model_config = ConfigDict(frozen=True, extra="forbid")

    max_order_notional: Money = Field(
        gt=0, description="the most one order may be worth, at its limit or last close"
    )
    max_daily_notional: Money = Field(
        gt=0, description="the most the book's orders of one exchange day may be worth together"
    )
    symbols: frozenset[Ticker] = Field(
        frozenset(), description="the only symbols that may be traded; empty: any"
    )


class Exposure(BaseModel):
    """What the book holds and has asked for already, as one order is checked against it."""

    model_config = ConfigDict(frozen=True, extra="forbid")

    held_shares: int = Field(ge=0, description="of the order's symbol")
    open_sell_shares: int = Field(
        ge=0, description="unfilled shares of the symbol in the book's other open sell intents"
    )
    notional_today: Money = Field(
        ge=0, description="the book's other intents of the exchange day, refused ones aside"
    )
    halt: Halt | None = Field(None, description="the halt in force, if the book is halted")


def check_order(
    order: OrderSpec, limits: BrokerLimits, exposure: Exposure, *, buying_power: Decimal
) -> list[str]:
    """Every rule ``order`` breaks, each as a sentence; empty: it may be sent.

    ``buying_power``: the broker's figure for the account, which a buy must not exceed."""
    broken = []
    if exposure.halt is not None:
        halt = exposure.halt
        broken.append(
            f"the book is halted since {halt.at:%Y-%m-%d %H:%M} UTC by {halt.who}: {halt.reason}"
        )
    notional = order.notional
    if notional > limits.max_order_notional:
        broken.append(
            f"the order is worth {notional}, over the cap of {limits.max_order_notional} an order"
        )
    day_total = exposure.notional_today + notional
    if day_total > limits.max_daily_notional:
        broken.append(
            f"with {exposure.notional_today} ordered today already it makes {day_total}, "
            f"over the daily cap of {limits.max_daily_notional}"
        )
    if limits.symbols and order.symbol not in limits.symbols:
        allowed = ", ".join(sorted(limits.symbols))
        broken.append(f"{order.symbol} is not among the symbols allowed ({allowed})")
    if order.side is Side.SELL:
        free = exposure.held_shares - exposure.open_sell_shares
        if order.qty > free:
            broken.append(
                f"it sells {order.qty} shares of {order.symbol} and the book holds "
                f"{exposure.held_shares}, {exposure.open_sell_shares} of them in open sell orders"
            )
    elif notional > buying_power:
        broken.append(
            f"the buy is worth {notional}, over the broker's buying power of {money(buying_power)}"
        )
    return broken


def exchange_day(at: datetime) -> tuple[datetime, datetime]:
    """The start and end, in UTC, of the exchange's calendar day that ``at`` falls in
    (23 or 25 hours long on the days the clocks change)."""
    day = at.astimezone(EXCHANGE_TIME_ZONE).date()
    start, end = (
        datetime.combine(date, time(), EXCHANGE_TIME_ZONE).astimezone(UTC)
        for date in (day, day + timedelta(days=1))
    )
    return start, end
