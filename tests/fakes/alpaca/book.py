"""The account behind the stand-in: cash, positions, orders and fills, moved only by the test.

Nothing happens on a timer. Fills come in *rounds*: ``step()``, a session's
open, or a clock move that ends inside a session each run one round, in which
every working order that is marketable at its symbol's current price fills the
next fraction of its ``fill_plan`` (one FILL activity per fraction). So with
``fill_plan=(0.4, 0.6)`` a market order is ``partially_filled`` after one round
and ``filled`` after two. The rest follows Alpaca's documented behaviour:

- received while the market is closed, an order is ``accepted`` and waits for
  the next open; in a session it is ``new``;
- market orders are always marketable, limit orders when the price reaches the
  limit, stop orders once the price touches the stop (stop-limit then waits for
  its limit);
- ``ioc`` fills one round and cancels the rest, ``fok`` fills whole or cancels,
  ``opg`` trades only at the open and ``cls`` only at the close (both refused
  in the windows Alpaca refuses them);
- at the close, every open order but ``gtc`` expires;
- a cash account: buying power is cash less what open buy orders reserve
  (limit or stop price, else the current price, times the quantity left), and
  no sell may exceed the shares held less those already offered.
"""

from __future__ import annotations

import uuid
from collections.abc import Sequence
from datetime import datetime, time
from decimal import ROUND_DOWN, Decimal
from typing import Literal

from tests.fakes.alpaca.model import (
    Fill,
    OrderRequest,
    OrderStatus,
    OrderType,
    Position,
    Side,
    StoredOrder,
    TimeInForce,
)
from tests.fakes.alpaca.order_request import QTY_PLACES
from tests.fakes.alpaca.refusals import forbidden, invalid, not_found, unprocessable
from tests.fakes.alpaca.sessions import NEW_YORK, NyseCalendar

Moment = Literal["step", "open", "close"]
_QTY_QUANTUM = Decimal(1).scaleb(-QTY_PLACES)
# Alpaca refuses on-open orders from 9:28 and on-close orders from 15:50, until 19:00 ET.
_AUCTION_CUTOFF = {TimeInForce.OPG: time(9, 28), TimeInForce.CLS: time(15, 50)}
_AUCTION_REOPENS = time(19, 0)
# The order types whose one round is all they get, and so fill whole or not at all.
_WHOLE = (TimeInForce.FOK, TimeInForce.OPG, TimeInForce.CLS)


def decimal_text(value: Decimal) -> str:
    """A number as Alpaca writes one: plain digits, no exponent, no trailing zeros."""
    return format(value.normalize(), "f") if value else "0"


def checked_fill_plan(fractions: Sequence[Decimal | float | str]) -> tuple[Decimal, ...]:
    """``fractions`` as Decimals: each positive, together exactly one whole order."""
    plan = tuple(Decimal(str(fraction)) for fraction in fractions)
    if not plan or any(fraction <= 0 for fraction in plan) or sum(plan) != 1:
        raise ValueError(f"a fill plan is positive fractions summing to 1, got {list(fractions)}")
    return plan


def _activity_id(at: datetime) -> str:
    """Alpaca's activity id: the New York time to the millisecond, '::', a uuid."""
    local = at.astimezone(NEW_YORK)
    return f"{local:%Y%m%d%H%M%S}{local.microsecond // 1000:03d}::{uuid.uuid4()}"


class Brokerage:
    """One cash account's state and the rules that change it; the caller holds the lock."""

    def __init__(
        self,
        *,
        cash: Decimal,
        now: datetime,
        calendar: NyseCalendar,
        fill_plan: Sequence[Decimal | float | str],
    ) -> None:
        if now.tzinfo is None:
            raise ValueError("the stand-in's clock needs a timezone-aware time")
        self.calendar = calendar
        self.now = now
        self.opened_at = now
        self.cash = cash
        self.last_equity = cash
        self.fill_plan = checked_fill_plan(fill_plan)
        self.prices: dict[str, Decimal] = {}
        self.last_close: dict[str, Decimal] = {}
        self.orders: dict[str, StoredOrder] = {}
        self.fills: list[Fill] = []
        self.positions: dict[str, Position] = {}

    # -- what the test sets ----------------------------------------------------

    def set_price(self, symbol: str, price: Decimal) -> None:
        """The symbol's last trade; a symbol becomes tradable once it has a price."""
        if price <= 0:
            raise ValueError(f"a price must be positive, got {price}")
        self.prices[symbol] = price
        self.last_close.setdefault(symbol, price)

    def set_position(self, symbol: str, qty: Decimal, avg_entry_price: Decimal) -> None:
        """Hold ``qty`` shares (0 to go flat), as if bought earlier at ``avg_entry_price``."""
        if symbol not in self.prices:
            raise ValueError(f"set a price for {symbol} before holding it")
        if qty < 0:
            raise ValueError("the stand-in is a cash account: no short positions")
        if qty == 0:
            self.positions.pop(symbol, None)
        else:
            self.positions[symbol] = Position(symbol, qty, avg_entry_price)

    # -- the account's figures -------------------------------------------------

    def long_market_value(self) -> Decimal:
        """Every holding at its current price."""
        return sum(
            (p.qty * self.prices[p.symbol] for p in self.positions.values()), start=Decimal(0)
        )

    def equity(self) -> Decimal:
        """Cash plus holdings (no shorts, no margin)."""
        return self.cash + self.long_market_value()

    def _left(self, order: StoredOrder) -> Decimal:
        """Shares still to fill; a notional order not yet filled counts at today's price."""
        request = order.request
        if order.total_qty is None and request.notional is not None:
            return request.notional / self.prices[order.symbol]
        return (order.total_qty or Decimal(0)) - order.filled_qty

    def _reserved(self, order: StoredOrder) -> Decimal:
        request = order.request
        if order.total_qty is None and request.notional is not None:
            return request.notional
        price = request.limit_price or request.stop_price or self.prices[order.symbol]
        return self._left(order) * price

    def buying_power(self) -> Decimal:
        """Cash less the notional that open buy orders hold back (no margin)."""
        held = sum(
            (self._reserved(o) for o in self.orders.values() if o.is_open and o.side is Side.BUY),
            start=Decimal(0),
        )
        return max(self.cash - held, Decimal(0))

    def qty_available(self, symbol: str) -> Decimal:
        """Shares held less those that open sell orders already offer."""
        held = self.positions[symbol].qty if symbol in self.positions else Decimal(0)
        offered = sum(
            (
                self._left(o)
                for o in self.orders.values()
                if o.is_open and o.side is Side.SELL and o.symbol == symbol
            ),
            start=Decimal(0),
        )
        return held - offered

    # -- orders ----------------------------------------------------------------

    def submit(self, request: OrderRequest) -> StoredOrder:
        """Keep a new order, or raise the Refusal Alpaca answers instead."""
        if request.symbol not in self.prices:
            raise unprocessable(f'asset "{request.symbol}" not found')
        if request.client_order_id is not None and any(
            o.client_order_id == request.client_order_id for o in self.orders.values()
        ):
            raise invalid("client_order_id must be unique")
        self._check_auction_window(request.time_in_force)
        self._check_funds(request)
        in_session = self.calendar.open_at(self.now) is not None
        order = StoredOrder(
            id=str(uuid.uuid4()),
            client_order_id=request.client_order_id or str(uuid.uuid4()),
            request=request,
            status=OrderStatus.NEW if in_session else OrderStatus.ACCEPTED,
            created_at=self.now,
            updated_at=self.now,
            fill_plan=(Decimal(1),) if request.time_in_force in _WHOLE else self.fill_plan,
            total_qty=request.qty,
        )
        self.orders[order.id] = order
        return order

    def _check_auction_window(self, tif: TimeInForce) -> None:
        cutoff = _AUCTION_CUTOFF.get(tif)
        local = self.now.astimezone(NEW_YORK).time()
        if cutoff is not None and cutoff <= local < _AUCTION_REOPENS:
            raise unprocessable(
                f"{tif} orders are not accepted between {cutoff:%H:%M} and "
                f"{_AUCTION_REOPENS:%H:%M} ET"
            )

    def _check_funds(self, request: OrderRequest) -> None:
        price = self.prices[request.symbol]
        if request.side is Side.BUY:
            unit = request.limit_price or request.stop_price or price
            cost = request.notional or (request.qty or Decimal(0)) * unit
            if cost > self.buying_power():
                raise forbidden("insufficient buying power")
            return
        wanted = request.qty if request.qty is not None else (request.notional or 0) / price
        available = self.qty_available(request.symbol)
        if wanted > available:
            raise forbidden(
                f"insufficient qty available for order (requested: {decimal_text(wanted)}, "
                f"available: {decimal_text(available)})"
            )

    def find(self, order_id: str) -> StoredOrder:
        """The order with Alpaca's id ``order_id``, or Alpaca's 404."""
        try:
            return self.orders[order_id]
        except KeyError:
            raise not_found("order not found") from None

    def find_by_client_order_id(self, client_order_id: str) -> StoredOrder:
        """The order the client named ``client_order_id``, or Alpaca's 404."""
        for order in self.orders.values():
            if order.client_order_id == client_order_id:
                return order
        raise not_found("order not found")

    def cancel(self, order_id: str) -> StoredOrder:
        """Cancel an open order; one already done is refused as Alpaca refuses it."""
        order = self.find(order_id)
        if not order.is_open:
            raise unprocessable(f'order is already in "{order.status}" state')
        self._end(order, OrderStatus.CANCELED, self.now)
        return order

    def cancel_open(self) -> list[StoredOrder]:
        """Cancel every open order (DELETE /v2/orders)."""
        return [self.cancel(o.id) for o in list(self.orders.values()) if o.is_open]

    def _end(self, order: StoredOrder, status: OrderStatus, at: datetime) -> None:
        order.status = status
        order.updated_at = at
        if status is OrderStatus.CANCELED:
            order.canceled_at = at
        else:
            order.expired_at = at

    # -- time ------------------------------------------------------------------

    def step(self) -> None:
        """One fill round now, if the market is open."""
        if self.calendar.open_at(self.now) is not None:
            self._round(self.now, "step")

    def move_to(self, when: datetime) -> None:
        """Move the clock, opening and closing every session crossed on the way."""
        if when.tzinfo is None:
            raise ValueError("the stand-in's clock needs a timezone-aware time")
        if when < self.now:
            raise ValueError(f"the stand-in's clock only moves forward ({self.now} -> {when})")
        crossed = self.calendar.boundaries(self.now, when)
        for boundary in crossed:
            self.now = boundary.at
            self._round(boundary.at, boundary.kind)
            if boundary.kind == "close":
                self._close(boundary.at)
        self.now = when
        if not any(boundary.kind == "open" for boundary in crossed):
            self.step()

    def _close(self, at: datetime) -> None:
        for order in self.orders.values():
            if order.is_open and order.request.time_in_force is not TimeInForce.GTC:
                self._end(order, OrderStatus.EXPIRED, at)
        self.last_close.update(self.prices)
        self.last_equity = self.equity()

    def _round(self, at: datetime, moment: Moment) -> None:
        for order in [o for o in self.orders.values() if o.is_open]:
            self._work(order, at, moment)

    def _work(self, order: StoredOrder, at: datetime, moment: Moment) -> None:
        tif = order.request.time_in_force
        if moment == "open" and order.status is OrderStatus.ACCEPTED:
            order.status = OrderStatus.NEW
            order.updated_at = at
        if order.status is OrderStatus.ACCEPTED:
            return
        if tif is TimeInForce.OPG:
            acts = moment == "open"
        elif tif is TimeInForce.CLS:
            acts = moment == "close"
        else:
            acts = moment != "close"
        if not acts:
            return
        if not self._marketable(order):
            if tif in (TimeInForce.IOC, *_WHOLE):
                self._end(order, OrderStatus.CANCELED, at)
            return
        self._fill_next(order, at)
        if tif is TimeInForce.IOC and order.is_open:
            self._end(order, OrderStatus.CANCELED, at)

    def _marketable(self, order: StoredOrder) -> bool:
        request, price = order.request, self.prices[order.symbol]
        buying = request.side is Side.BUY
        if request.stop_price is not None and not order.stop_triggered:
            if price < request.stop_price if buying else price > request.stop_price:
                return False
            order.stop_triggered = True
        if request.type in (OrderType.LIMIT, OrderType.STOP_LIMIT):
            assert request.limit_price is not None  # validation requires it for these types
            return price <= request.limit_price if buying else price >= request.limit_price
        return True

    def _fill_next(self, order: StoredOrder, at: datetime) -> None:
        """Fill the next fraction of the plan; fractions that round to nothing join the next."""
        price = self.prices[order.symbol]
        if order.total_qty is None:  # a notional order: its first fill fixes the quantity
            assert order.request.notional is not None
            order.total_qty = (order.request.notional / price).quantize(_QTY_QUANTUM, ROUND_DOWN)
        total, plan = order.total_qty, order.fill_plan
        whole_shares = total == total.to_integral_value()
        qty = Decimal(0)
        while qty == 0 and order.tranche < len(plan):
            order.tranche += 1
            target = total * sum(plan[: order.tranche])
            if order.tranche < len(plan):
                target = target.quantize(Decimal(1) if whole_shares else _QTY_QUANTUM, ROUND_DOWN)
            qty = min(target, total) - order.filled_qty
        if qty > 0:
            self._execute(order, qty, price, at)

    def _execute(self, order: StoredOrder, qty: Decimal, price: Decimal, at: datetime) -> None:
        assert order.total_qty is not None
        order.filled_qty += qty
        order.filled_notional += qty * price
        order.updated_at = at
        done = order.filled_qty == order.total_qty
        order.status = OrderStatus.FILLED if done else OrderStatus.PARTIALLY_FILLED
        if done:
            order.filled_at = at
        self._book(order.symbol, order.side, qty, price)
        self.fills.append(
            Fill(
                id=_activity_id(at),
                order_id=order.id,
                symbol=order.symbol,
                side=order.side,
                qty=qty,
                price=price,
                cum_qty=order.filled_qty,
                leaves_qty=order.total_qty - order.filled_qty,
                transaction_time=at,
                order_status=order.status,
            )
        )

    def _book(self, symbol: str, side: Side, qty: Decimal, price: Decimal) -> None:
        """Move cash and shares for one execution."""
        position = self.positions.get(symbol)
        if side is Side.BUY:
            self.cash -= qty * price
            if position is None:
                self.positions[symbol] = Position(symbol, qty, price)
            else:
                held = position.qty + qty
                position.avg_entry_price = (position.cost_basis + qty * price) / held
                position.qty = held
            return
        self.cash += qty * price
        assert position is not None  # submission checks the shares are there
        position.qty -= qty
        if position.qty == 0:
            del self.positions[symbol]
