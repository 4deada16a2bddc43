"""``BrokerOrders``: a plan's orders sent to the book's broker exactly once, and followed.

A child of ``Portfolio`` for a book bound to a real broker (id ``<portfolio run>-broker``):

1. ``prepare_orders`` records every order as an intent before anything is sent and
   refuses what a guardrail or the halt forbids (the broker worker's settings).
2. Market hours come from the broker's clock: an order decided while the market is
   closed waits on a durable timer for the next open (``after_close: wait``), or is
   sent at once as a ``day`` order the broker queues for the open (``queue``).
3. ``submit_order`` per intent, sells first (their cash pays for the buys); each looks
   the order up by its client order id before sending, so no retry sends twice.
4. A loop of durable timers follows the orders to a terminal state, booking each fill
   once as it arrives; at the session's close what is still open is canceled when
   ``cancel_at_close`` (a day order would expire there anyway).

The loop continues as new when the history grows long, carrying what it booked.
"""

from __future__ import annotations

from datetime import datetime, timedelta
from enum import StrEnum

from pydantic import BaseModel, Field
from temporalio import workflow

with workflow.unsafe.imports_passed_through():
    from activities.broker import (
        OPEN_INTENT,
        BookedTrade,
        BookRef,
        BrokerActivities,
        CancelRequest,
        FollowedOrders,
        FollowRequest,
        OrderRef,
        PreparedOrders,
        PrepareRequest,
    )
    from shared.broker.alpaca_wire import MarketClock
    from shared.broker.models import OrderIntent
    from shared.observability.metrics import orders_ended
    from shared.portfolio.models import BrokerKind
    from shared.portfolio.orders import PlannedOrder, RejectedOrder
    from workflows.activity_calls import run_activity
    from workflows.inputs import RunInput
    from workflows.progress import RunProgress, StepState
    from workflows.retries import durable
    from workflows.tracked import TrackedRun
    from workflows.visibility import tag_run

BROKER_CALL = timedelta(minutes=1)
"""One broker call's attempt (the client's own timeout is shorter)."""
BROKER_HEARTBEAT = timedelta(seconds=10)
"""The broker activities beat every few seconds: a worker silent this long is taken for dead
and the call retried on another, so a crash mid-submit costs seconds, not ``BROKER_CALL``
(the retry looks the order up first, so it never sends twice)."""
PREPARE, OPEN, SUBMIT, FOLLOW = "prepare_orders", "market_open", "submit_orders", "follow_orders"


class AfterClose(StrEnum):
    """What an order decided while the market is closed does."""

    WAIT = "wait"
    """Wait on a timer for the next open, then send."""
    QUEUE = "queue"
    """Send now as a day order; the broker works it from the next open."""


class ExecutionPolicy(BaseModel):
    """How a plan's orders are worked at a broker."""

    after_close: AfterClose = Field(AfterClose.WAIT, description="wait for the open, or queue")
    cancel_at_close: bool = Field(True, description="cancel what is still open at the close")
    poll_seconds: int = Field(30, ge=1, le=3600, description="between two looks at the orders")


class Followed(BaseModel):
    """What a run carries into its continuation: the trades booked so far."""

    booked: list[BookedTrade] = Field(default_factory=list)
    waited_for_open: datetime | None = None
    close: datetime | None = Field(None, description="the session's close the orders work to")


class BrokerOrdersInput(RunInput):
    """A plan's orders for one book at its broker."""

    portfolio: str = Field(min_length=1)
    decided_by: str = Field(
        min_length=1, description="the workflow id of the decision: part of each order's id"
    )
    orders: list[PlannedOrder] = Field(description="in execution order: sells, then buys")
    policy: ExecutionPolicy = ExecutionPolicy()
    carry: Followed | None = Field(None, description="set by continue-as-new only")


class BrokerOrdersResult(BaseModel):
    """Each order's end, the trades its fills booked, and what was refused."""

    portfolio: str
    intents: list[OrderIntent]
    booked: list[BookedTrade] = Field(description="one trade per fill, each booked once")
    refused: list[RejectedOrder] = Field(description="by a guardrail, the halt or the broker")
    waited_for_open: datetime | None = Field(None, description="when the orders waited until")


@workflow.defn(name="BrokerOrders")
class BrokerOrdersWorkflow(TrackedRun):
    """Send, follow and book one plan's orders at the book's broker."""

    def __init__(self) -> None:
        super().__init__(PREPARE, SUBMIT, FOLLOW)
        self.intents: list[OrderIntent] = []
        self.carry = Followed()

    @workflow.query(name="progress")
    def progress(self) -> RunProgress:
        """The phase and each step."""
        return self.progress_as(RunProgress)

    @workflow.query(name="orders")
    def orders(self) -> list[OrderIntent]:
        """Each order as last seen: its status, ids, fills."""
        return self.intents

    @workflow.run
    async def run(self, args: BrokerOrdersInput) -> BrokerOrdersResult:
        """Prepare, wait for the open if need be, submit, follow to the end."""
        tag_run("BrokerOrders", portfolio=args.portfolio)
        book = BookRef(portfolio=args.portfolio)
        self.phase = PREPARE
        prepared: PreparedOrders = await self._step(
            PREPARE,
            run_activity(
                BrokerActivities.prepare_orders,
                PrepareRequest(
                    portfolio=args.portfolio, workflow_id=args.decided_by, orders=args.orders
                ),
                **durable(BROKER_CALL, heartbeat=BROKER_HEARTBEAT),
                summary=f"{PREPARE}: {len(args.orders)} orders",
            ),
        )
        self.intents = prepared.intents
        if args.carry is None:
            await self._open_and_submit(args.policy, book)
        else:
            self.carry = args.carry
            self.steps[SUBMIT] = StepState.DONE
        await self._step(FOLLOW, self._follow(args, book))
        self.phase = "done"
        outcomes = [intent.status.value for intent in self.intents]
        orders_ended(
            workflow.metric_meter(), BrokerKind.ALPACA.value, outcomes, len(self.carry.booked)
        )
        return BrokerOrdersResult(
            portfolio=args.portfolio,
            intents=self.intents,
            booked=self.carry.booked,
            refused=prepared.refused,
            waited_for_open=self.carry.waited_for_open,
        )

    async def _clock(self, book: BookRef) -> MarketClock:
        return await run_activity(
            BrokerActivities.market_clock,
            book,
            **durable(BROKER_CALL, heartbeat=BROKER_HEARTBEAT),
            summary="market_clock",
        )

    async def _open_and_submit(self, policy: ExecutionPolicy, book: BookRef) -> None:
        """Wait for the open when the policy says so, then send every open intent in order."""
        clock = await self._clock(book)
        sendable = [i for i in self.intents if i.status in OPEN_INTENT and not i.broker_order_id]
        if not clock.is_open and policy.after_close is AfterClose.WAIT and sendable:
            self.phase = f"waiting for the open at {clock.next_open:%Y-%m-%d %H:%M} UTC"
            workflow.set_current_details(f"**{self.phase}**: {len(sendable)} orders ready")
            wait = max(clock.next_open - clock.timestamp, timedelta(seconds=1))
            await self._step(OPEN, workflow.sleep(wait, summary=self.phase))
            self.carry.waited_for_open = clock.next_open
            clock = await self._clock(book)
        self.carry.close = clock.next_close if clock.is_open else None
        self.phase = SUBMIT
        await self._step(SUBMIT, self._submit_all())

    async def _submit_all(self) -> None:
        sent: list[OrderIntent] = []
        for intent in self.intents:
            # One at a time, in order: a sell's proceeds are what a later buy spends.
            sent.append(
                await run_activity(
                    BrokerActivities.submit_order,
                    OrderRef(client_order_id=intent.client_order_id),
                    **durable(BROKER_CALL, heartbeat=BROKER_HEARTBEAT),
                    summary=f"submit {intent.side.value.lower()} {intent.qty} {intent.symbol}",
                )
            )
        self.intents = sent

    async def _follow(self, args: BrokerOrdersInput, book: BookRef) -> None:
        """Look at the orders every ``poll_seconds`` until none is open, booking new fills;
        cancel what is open at the session's close when the policy says so."""
        self.phase = FOLLOW
        coids = [intent.client_order_id for intent in self.intents]
        canceled = False
        while True:
            reported = [booked.trade.key for booked in self.carry.booked]
            followed: FollowedOrders = await run_activity(
                BrokerActivities.follow_orders,
                FollowRequest(portfolio=args.portfolio, client_order_ids=coids, reported=reported),
                **durable(BROKER_CALL, heartbeat=BROKER_HEARTBEAT),
                summary=FOLLOW,
            )
            self.carry.booked += followed.booked
            self.intents = followed.intents
            if not followed.open:
                return
            clock = await self._clock(book)
            close = self.carry.close or (clock.next_close if clock.is_open else None)
            self.carry.close = close
            at_close = close is not None and clock.timestamp >= close
            if args.policy.cancel_at_close and at_close and not canceled:
                await run_activity(
                    BrokerActivities.cancel_orders,
                    CancelRequest(
                        client_order_ids=[i.client_order_id for i in followed.open],
                        reason=f"still open at the close of {close:%Y-%m-%d}: canceled by plan",
                    ),
                    **durable(BROKER_CALL, heartbeat=BROKER_HEARTBEAT),
                    summary="cancel at the close",
                )
                # One more look at once books any fill that came before the cancel; an order
                # the broker reports filled further than its fills show stays open until they do.
                canceled = True
                continue
            if workflow.info().is_continue_as_new_suggested():
                workflow.continue_as_new(
                    BrokerOrdersInput(
                        portfolio=args.portfolio,
                        decided_by=args.decided_by,
                        orders=args.orders,
                        policy=args.policy,
                        carry=self.carry,
                    )
                )
            await workflow.sleep(timedelta(seconds=args.policy.poll_seconds), summary="next look")
