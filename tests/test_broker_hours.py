"""Market hours come from the broker's clock: an order decided after the close waits for the
open on a durable timer, or goes at once as a day order the broker queues, as configured.

The time-skipping server jumps the timer; the Alpaca stand-in's clock is the test's, set
after the close and moved to the open once the order is at the broker.
"""

from __future__ import annotations

import asyncio
import uuid
from collections.abc import AsyncIterator, Iterator
from datetime import UTC, datetime, timedelta
from decimal import Decimal
from typing import Any

import pytest
import pytest_asyncio
from temporalio import workflow
from temporalio.api.enums.v1 import EventType
from temporalio.client import WorkflowHandle
from temporalio.testing import WorkflowEnvironment

with workflow.unsafe.imports_passed_through():
    from shared.broker.book import BrokerBook
    from shared.broker.models import IntentStatus, OrderIntent
    from shared.config import Settings
    from shared.portfolio.models import BrokerKind, Side
    from tests.fakes.alpaca.server import AlpacaStandIn
    from tests.planned_orders import planned_order
    from tests.servers import isolated_settings, running_workers
    from workers.main import WorkerPlan, plan_for
    from workers.roles import WorkerRole
    from workflows.broker_orders import BrokerOrdersResult, BrokerOrdersWorkflow

pytestmark = [pytest.mark.asyncio(loop_scope="session"), pytest.mark.integration]
QUEUE = "test-broker-hours"
KEY, SECRET = "PKTESTHOURS0000000000", "test-hours-secret"
PRICE = Decimal("190.00")
AFTER_CLOSE = datetime(2025, 6, 24, 21, 0, tzinfo=UTC)  # 17:00 in New York, a Tuesday
NEXT_OPEN = datetime(2025, 6, 25, 13, 30, tzinfo=UTC)  # 09:30 the next morning


@pytest.fixture(scope="module")
def broker() -> Iterator[AlpacaStandIn]:
    with AlpacaStandIn(
        key_id=KEY, secret=SECRET, prices={"AAPL": PRICE}, now=AFTER_CLOSE
    ) as server:
        yield server


@pytest.fixture(scope="module")
def settings(
    s3_settings: Settings, tmp_path_factory: pytest.TempPathFactory, broker: AlpacaStandIn
) -> Settings:
    alpaca = {"base_url": broker.base_url, "key_id": KEY, "secret_key": SECRET}
    return isolated_settings(s3_settings, tmp_path_factory.mktemp("hours"), QUEUE, alpaca=alpaca)


@pytest_asyncio.fixture(scope="module", loop_scope="session")
async def workers(ts_env: WorkflowEnvironment, settings: Settings) -> AsyncIterator[None]:
    plans = [
        WorkerPlan(queue=QUEUE, workflows=[BrokerOrdersWorkflow]),
        plan_for(WorkerRole.BROKER, settings),
    ]
    async with running_workers(ts_env.client, plans):
        yield


def _buy(shares: int) -> dict[str, Any]:
    return planned_order(0, "AAPL", Side.BUY, shares, PRICE).model_dump(mode="json")


async def _start(
    env: WorkflowEnvironment, settings: Settings, after_close: str
) -> WorkflowHandle[Any, BrokerOrdersResult]:
    book = f"h{uuid.uuid4().hex[:8]}"
    BrokerBook.from_settings(settings).create(book, Decimal(100_000), broker=BrokerKind.ALPACA)
    decided_by = f"portfolio-{book}"
    return await env.client.start_workflow(
        "BrokerOrders",
        {
            "portfolio": book,
            "decided_by": decided_by,
            "orders": [_buy(3)],
            "policy": {"after_close": after_close, "poll_seconds": 60},
        },
        id=f"{decided_by}-broker",
        task_queue=QUEUE,
        result_type=BrokerOrdersResult,
    )


async def _open_the_market_once_it_has_the_order(broker: AlpacaStandIn, count: int) -> None:
    """Move the stand-in's clock to the open as soon as it holds ``count`` orders."""
    for _ in range(600):
        if len(broker.order_counts()) >= count:
            broker.clock.set(
                broker.clock.now() + (NEXT_OPEN - broker.clock.now()) + timedelta(minutes=1)
            )
            return
        await asyncio.sleep(0.05)
    raise AssertionError("the order never reached the broker")


async def test_an_order_decided_after_the_close_waits_for_the_open_on_a_timer(
    ts_env: WorkflowEnvironment, workers: None, settings: Settings, broker: AlpacaStandIn
) -> None:
    broker.clock.set(max(broker.clock.now(), AFTER_CLOSE))
    handle = await _start(ts_env, settings, "wait")
    opener = asyncio.create_task(_open_the_market_once_it_has_the_order(broker, 1))

    result = await handle.result()
    await opener

    assert result.waited_for_open == NEXT_OPEN
    [intent] = result.intents
    assert intent.status is IntentStatus.FILLED and intent.filled_qty == 3
    events = [event.event_type for event in (await handle.fetch_history()).events]
    timer_fired = events.index(EventType.EVENT_TYPE_TIMER_FIRED)
    first_activity = [
        i for i, kind in enumerate(events) if kind == EventType.EVENT_TYPE_ACTIVITY_TASK_SCHEDULED
    ]
    # prepare_orders and the clock before the timer; the order itself only after it
    assert len([i for i in first_activity if i < timer_fired]) == 2
    started = next(
        e
        for e in (await handle.fetch_history()).events
        if e.event_type == EventType.EVENT_TYPE_TIMER_STARTED
    )
    waited = started.timer_started_event_attributes.start_to_fire_timeout.ToTimedelta()
    assert waited == NEXT_OPEN - AFTER_CLOSE


async def test_a_queued_day_order_goes_at_once_and_the_broker_works_it_from_the_open(
    ts_env: WorkflowEnvironment, workers: None, settings: Settings, broker: AlpacaStandIn
) -> None:
    closed = broker.clock.now().replace(hour=21, minute=0) + timedelta(days=1)
    broker.clock.set(closed)  # the next evening: closed again
    handle = await _start(ts_env, settings, "queue")

    sent: list[OrderIntent] = []
    for _ in range(600):
        sent = await handle.query("orders", result_type=list[OrderIntent])
        if sent and sent[0].broker_order_id:
            break
        await asyncio.sleep(0.05)
    queued = broker.orders[sent[0].broker_order_id or ""]
    assert queued.status in ("accepted", "new")  # the broker holds it for the open
    broker.clock.set(closed + timedelta(hours=17))  # 14:00 UTC the next day: in session
    result = await handle.result()

    assert result.waited_for_open is None
    [intent] = result.intents
    assert intent.status is IntentStatus.FILLED and intent.filled_qty == 3
