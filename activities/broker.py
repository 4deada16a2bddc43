"""Orders at a real broker, exactly once: the activities of the ``broker`` queue.

Only the worker of that queue holds the broker's keys (``APCA_API_KEY_ID``,
``APCA_API_SECRET_KEY``): no key is in a request, a result, a history or a log.

Exactly once, through crashes, retries and timeouts, rests on three things:

- **An intent before anything is sent.** ``prepare_orders`` writes each planned
  order to SQL under its ``client_order_id`` (book, workflow id, order index), checks
  it against the book's guardrails and halt, and refuses what breaks one.
- **Look up, then send.** ``submit_order`` asks the broker for the order by its
  ``client_order_id`` first and only POSTs when the broker has none; a 422 "must be
  unique" means an earlier attempt got through (its answer was lost), so it looks
  again. A timeout, a dropped connection, a 5xx or a 429 is Temporal's to retry
  (with ``Retry-After``); a 403 or a validation error refuses that order, naming the
  broker's reason. The client never retries by itself.
- **Fills booked by their id.** ``follow_orders`` reads the broker's FILL activities
  and books each once (``BrokerBook.book_fill``: the fill, the position and the cash
  in one transaction), then records where each order stands.

Every activity heartbeats (``activities.heartbeat``): an attempt whose worker died is
retried on a live one within ``BROKER_HEARTBEAT`` instead of its whole start-to-close.
"""

from __future__ import annotations

from collections.abc import Iterator
from contextlib import contextmanager
from datetime import timedelta
from decimal import Decimal
from functools import cached_property

from pydantic import AwareDatetime, BaseModel, Field
from temporalio import activity

from activities.failures import as_temporal_failures
from activities.group import ActivityGroup, activity_on
from activities.heartbeat import heartbeating
from shared.broker.alpaca_client import AlpacaClient
from shared.broker.alpaca_wire import (
    AlpacaFill,
    AlpacaOrder,
    MarketClock,
    OrderRequest,
    OrderSide,
)
from shared.broker.alpaca_wire import (
    OrderStatus as BrokerStatus,
)
from shared.broker.book import BrokerBook
from shared.broker.drift import Drift, drift
from shared.broker.models import (
    BrokerFill,
    IntentStatus,
    OrderIntent,
    OrderSpec,
    Position,
)
from shared.config import Settings
from shared.errors import BrokerUnavailable, DuplicateClientOrderId, InvalidInput, OrderRefused
from shared.portfolio.models import BrokerKind, Side, Trade
from shared.portfolio.orders import PlannedOrder, RejectedOrder
from shared.queues import BROKER_QUEUE

TERMINAL_AT_BROKER: dict[BrokerStatus, IntentStatus] = {
    BrokerStatus.CANCELED: IntentStatus.CANCELED,
    BrokerStatus.EXPIRED: IntentStatus.EXPIRED,
    BrokerStatus.REJECTED: IntentStatus.REJECTED,
}
"""Broker statuses that end an order without (more) fills; ``filled`` comes from its fills."""
FILL_CLOCK_MARGIN = timedelta(seconds=5)
"""Fills are read from a little before the earliest order was placed, by the broker's clock."""
OPEN_INTENT = {IntentStatus.PENDING, IntentStatus.SUBMITTED, IntentStatus.PARTIALLY_FILLED}
"""Intents the broker may still fill."""


class PrepareRequest(BaseModel):
    """A run's planned orders for a book at a broker."""

    portfolio: str
    workflow_id: str = Field(description="the run that decided them: part of each order's id")
    orders: list[PlannedOrder]


class PreparedOrders(BaseModel):
    """Each planned order as an intent: to send (or sent already), or refused by a guardrail."""

    intents: list[OrderIntent] = Field(description="every order's intent, in execution order")
    refused: list[RejectedOrder] = Field(description="orders a guardrail or the halt refused")


class OrderRef(BaseModel):
    """One order, by its client order id."""

    client_order_id: str


class FollowRequest(BaseModel):
    """Orders to follow, and the trades of their fills the caller has already."""

    portfolio: str
    client_order_ids: list[str]
    reported: list[str] = Field(
        default_factory=list,
        description="keys of the trades the caller holds: the answer brings every other one",
    )


class BookedTrade(BaseModel):
    """A fill new to the book, as the trade it booked, and its order."""

    client_order_id: str
    trade: Trade


class FollowedOrders(BaseModel):
    """Where each order stands, and the trades of its fills the caller did not have."""

    intents: list[OrderIntent]
    booked: list[BookedTrade] = Field(
        description="trades of the orders' fills not in the request's ``reported``: the new "
        "ones, and those an attempt whose answer was lost booked"
    )

    @property
    def open(self) -> list[OrderIntent]:
        """The orders the broker may still fill."""
        return [intent for intent in self.intents if intent.status in OPEN_INTENT]


class CancelRequest(BaseModel):
    """Open orders to cancel, and why (recorded on each)."""

    client_order_ids: list[str]
    reason: str


class BookRef(BaseModel):
    """One book bound to a broker."""

    portfolio: str


class Reconciliation(BaseModel):
    """The book and its broker side by side, and where they differ."""

    portfolio: str
    at: AwareDatetime = Field(description="when the broker was read")
    drift: Drift
    book_cash: Decimal
    broker_cash: Decimal
    book_positions: dict[str, int]
    broker_positions: list[Position]

    def differing_shares(self) -> list[tuple[str, int, int, int]]:
        """Each symbol the two disagree on: (symbol, the book's shares, the broker's, the
        broker's less the book's)."""
        broker = {position.symbol: position.shares for position in self.broker_positions}
        return [
            (symbol, self.book_positions.get(symbol, 0), broker.get(symbol, 0), delta)
            for symbol, delta in self.drift.shares.items()
        ]


def _whole(quantity: Decimal, what: str) -> int:
    """A broker quantity as the book's whole shares; a fraction is a contract breach."""
    if quantity != quantity.to_integral_value():
        raise InvalidInput(what, f"{quantity} is not a whole number of shares")
    return int(quantity)


def _side(side: OrderSide) -> Side:
    return Side.BUY if side is OrderSide.BUY else Side.SELL


def _spec(workflow_id: str, order: PlannedOrder) -> OrderSpec:
    return OrderSpec(
        workflow_id=workflow_id,
        order_index=order.index,
        symbol=order.symbol,
        side=order.side,
        qty=order.shares,
        reference_price=order.close,
        sector=order.sector,
        rationale=order.rationale,
    )


class BrokerActivities(ActivityGroup):
    """The broker queue's activities over the book's store and the broker's client."""

    def __init__(self, settings: Settings, books: BrokerBook | None = None) -> None:
        self.settings = settings
        if books is not None:
            self.books = books

    @cached_property
    def books(self) -> BrokerBook:
        """The book's store, with its intents and fills."""
        return BrokerBook.from_settings(self.settings)

    @contextmanager
    def _client(self) -> Iterator[AlpacaClient]:
        with AlpacaClient(self.settings.alpaca) as client:
            yield client

    def _broker_book(self, portfolio: str) -> BrokerKind:
        return self.books.bound(portfolio).broker

    @activity_on(BROKER_QUEUE, "prepare_orders")
    @heartbeating
    def prepare_orders(self, request: PrepareRequest) -> PreparedOrders:
        """Record every planned order as an intent (once), then check each one not yet sent
        against the guardrails, the halt and the broker's buying power; refuse what fails."""
        with as_temporal_failures():
            broker = self._broker_book(request.portfolio)
            with self._client() as client:
                buying_power = client.account().buying_power
            intents, refused = [], []
            for order in sorted(request.orders, key=lambda o: o.index):
                intent = self.books.record_intent(
                    request.portfolio, _spec(request.workflow_id, order), broker=broker
                )
                if intent.status is IntentStatus.PENDING:
                    problems = self.books.check_intent(
                        intent.client_order_id,
                        self.settings.broker_limits,
                        buying_power=buying_power,
                    )
                    if problems:
                        intent = self.books.mark_terminal(
                            intent.client_order_id, IntentStatus.REFUSED, "; ".join(problems)
                        )
                    elif intent.side is Side.BUY:
                        buying_power -= intent.notional
                if intent.status is IntentStatus.REFUSED:
                    refused.append(_refusal(order, intent))
                intents.append(intent)
            return PreparedOrders(intents=intents, refused=refused)

    @activity_on(BROKER_QUEUE, "submit_order")
    @heartbeating
    def submit_order(self, request: OrderRef) -> OrderIntent:
        """Send one intent to the broker unless it has it already (see the module docstring)."""
        with as_temporal_failures():
            coid = request.client_order_id
            intent = self._intent(coid)
            if intent.status not in OPEN_INTENT or intent.broker_order_id is not None:
                return intent
            halt = self.books.halted(intent.book)
            if halt is not None:
                return self.books.mark_terminal(
                    coid, IntentStatus.REFUSED, f"the book is halted by {halt.who}: {halt.reason}"
                )
            with self._client() as client:
                order = client.order_by_client_id(coid)
                if order is None:
                    if self.settings.alpaca.live:
                        activity.logger.warning(
                            "LIVE TRADING, real money: %s %s %s at %s",
                            intent.side.value,
                            intent.qty,
                            intent.symbol,
                            self.settings.alpaca.url,
                        )
                    try:
                        order = client.submit_order(_order_request(intent))
                    except DuplicateClientOrderId:
                        # An earlier attempt got through and its answer was lost.
                        order = client.order_by_client_id(coid)
                        if order is None:
                            raise BrokerUnavailable(
                                f"the broker says {coid} was sent but does not list it yet",
                                endpoint="GET /v2/orders:by_client_order_id",
                            ) from None
                    except OrderRefused as refusal:
                        return self.books.mark_terminal(coid, IntentStatus.REFUSED, refusal.reason)
            activity.logger.info("%s is %s at the broker", coid, order.status)
            return self._record(intent, order)

    @activity_on(BROKER_QUEUE, "follow_orders")
    @heartbeating
    def follow_orders(self, request: FollowRequest) -> FollowedOrders:
        """Book the broker's new fills of these orders (each once), record where each order
        stands, and bring the trades of their fills the caller has not been told of."""
        with as_temporal_failures():
            intents = [self._intent(coid) for coid in request.client_order_ids]
            with self._client() as client:
                orders = {
                    intent.client_order_id: client.order_by_client_id(intent.client_order_id)
                    for intent in intents
                    if intent.status in OPEN_INTENT
                }
                ours = {o.id: coid for coid, o in orders.items() if o is not None}
                # The broker's own times bound its fills: our clock and its may differ.
                placed = [o.created_at for o in orders.values() if o is not None]
                fills = client.fills(after=min(placed) - FILL_CLOCK_MARGIN) if placed else []
                for fill in fills:
                    if fill.order_id in ours:
                        coid = ours[fill.order_id]
                        self.books.book_fill(request.portfolio, _fill(fill, coid))
                halt = self.books.halted(request.portfolio)
                followed = []
                for intent in intents:
                    order = orders.get(intent.client_order_id)
                    current = self._intent(intent.client_order_id)
                    if order is not None and halt is not None and current.status in OPEN_INTENT:
                        # A halt cancels what is open, from whichever run looks first.
                        order = client.cancel_order(order.id)
                        why = f"canceled: the book is halted by {halt.who}: {halt.reason}"
                        current = self._record(current, order, reason=why)
                    followed.append(current if order is None else self._record(current, order))
            # From the book, not from this call's bookings: an attempt that booked fills and
            # died (its worker killed) left them booked, and its answer never came.
            known = set(request.reported)
            booked = [
                BookedTrade(client_order_id=coid, trade=trade)
                for coid, trade in self.books.booked_trades(request.client_order_ids)
                if trade.key not in known
            ]
            return FollowedOrders(intents=followed, booked=booked)

    @activity_on(BROKER_QUEUE, "cancel_orders")
    @heartbeating
    def cancel_orders(self, request: CancelRequest) -> list[OrderIntent]:
        """Cancel each order still open at the broker; an order never sent is canceled here."""
        with as_temporal_failures():
            done = []
            with self._client() as client:
                for coid in request.client_order_ids:
                    intent = self._intent(coid)
                    if intent.status not in OPEN_INTENT:
                        done.append(intent)
                        continue
                    order = client.order_by_client_id(coid)
                    if order is None:
                        done.append(
                            self.books.mark_terminal(coid, IntentStatus.CANCELED, request.reason)
                        )
                        continue
                    if order.status not in TERMINAL_AT_BROKER and order.status is not (
                        BrokerStatus.FILLED
                    ):
                        order = client.cancel_order(order.id)
                    done.append(self._record(intent, order, reason=request.reason))
            return done

    @activity_on(BROKER_QUEUE, "market_clock")
    @heartbeating
    def market_clock(self, request: BookRef) -> MarketClock:
        """The book's broker's clock: whether the market is open, its next open and close."""
        with as_temporal_failures():
            self._broker_book(request.portfolio)
            with self._client() as client:
                return client.clock()

    @activity_on(BROKER_QUEUE, "reconcile_book")
    @heartbeating
    def reconcile_book(self, request: BookRef) -> Reconciliation:
        """The book's shares, cash and fills against the broker's; never changes the book."""
        with as_temporal_failures():
            self._broker_book(request.portfolio)
            with self._client() as client:
                account = client.account()
                positions = client.positions()
                clock = client.clock()
                broker_fills = client.fills()
            book = self.books.get(request.portfolio)
            held = {h.symbol: h.shares for h in self.books.holdings(request.portfolio)}
            broker_positions = [
                Position(
                    symbol=p.symbol,
                    shares=_whole(p.qty, f"position {p.symbol}"),
                    avg_cost=p.avg_entry_price,
                )
                for p in positions
                if p.qty
            ]
            return Reconciliation(
                portfolio=request.portfolio,
                at=clock.timestamp,
                drift=drift(
                    held,
                    book.cash,
                    {p.symbol: p.shares for p in broker_positions},
                    account.cash,
                    self.books.fill_ids(request.portfolio),
                    {fill.id for fill in broker_fills},
                ),
                book_cash=book.cash,
                broker_cash=account.cash,
                book_positions=held,
                broker_positions=broker_positions,
            )

    def _intent(self, coid: str) -> OrderIntent:
        intent = self.books.intent(coid)
        if intent is None:
            raise InvalidInput("client_order_id", f"no order intent {coid!r}")
        return intent

    def _record(
        self, intent: OrderIntent, order: AlpacaOrder, *, reason: str | None = None
    ) -> OrderIntent:
        """What the broker's order says about the intent: its id, and an end without (more)
        fills once every fill the broker reports for it is booked. Until then the intent
        stays open, so the next look books the rest: ``follow_orders`` follows open intents
        only, and a fill can land between its last look and a cancel."""
        if intent.broker_order_id is None:
            intent = self.books.mark_submitted(intent.client_order_id, order.id)
        ended = TERMINAL_AT_BROKER.get(order.status)
        unbooked = _whole(order.filled_qty, f"order {order.id}") > intent.filled_qty
        if ended is not None and intent.status in OPEN_INTENT and not unbooked:
            why = reason or f"the broker's order {order.id} is {order.status.value}"
            intent = self.books.mark_terminal(intent.client_order_id, ended, why)
        return intent


def _order_request(intent: OrderIntent) -> OrderRequest:
    return OrderRequest(
        symbol=intent.symbol,
        qty=Decimal(intent.qty),
        side=OrderSide.BUY if intent.side is Side.BUY else OrderSide.SELL,
        type=intent.order_type.value,
        time_in_force=intent.time_in_force.value,
        limit_price=intent.limit_price,
        client_order_id=intent.client_order_id,
    )


def _fill(fill: AlpacaFill, coid: str) -> BrokerFill:
    return BrokerFill(
        fill_id=fill.id,
        client_order_id=coid,
        broker_order_id=fill.order_id,
        symbol=fill.symbol,
        side=_side(fill.side),
        qty=_whole(fill.qty, f"fill {fill.id}"),
        price=fill.price,
        transaction_time=fill.transaction_time,
    )


def _refusal(order: PlannedOrder, intent: OrderIntent) -> RejectedOrder:
    return RejectedOrder(
        symbol=order.symbol,
        side=order.side,
        shares=order.shares,
        origin=order.origin,
        reason=intent.reason or "refused",
        index=order.index,
    )
