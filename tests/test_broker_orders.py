"""Orders reach a broker exactly once: ``BrokerOrders`` against the strict Alpaca stand-in.

Real components: the Temporal dev server (real timers and retries), the stand-in over
HTTP, the broker activities on their own queue, a SQLite book. Each fault the stand-in
can inject on ``POST /v2/orders`` (save then 504, save then drop, save then answer too
late, 5xx without saving, 429) must leave exactly one order per intent at the broker and
each fill booked once, with the book holding what the broker holds.
"""

from __future__ import annotations

import threading
import uuid
from collections.abc import AsyncIterator, Iterator
from datetime import UTC, datetime
from decimal import Decimal
from pathlib import Path

import pytest
import pytest_asyncio
from temporalio import workflow
from temporalio.testing import WorkflowEnvironment

with workflow.unsafe.imports_passed_through():
    from shared.broker.book import BrokerBook
    from shared.broker.models import IntentStatus, Position
    from shared.config import Settings
    from shared.portfolio.models import BrokerKind, Side
    from shared.portfolio.orders import PlannedOrder
    from tests.fakes.alpaca.faults import FaultKind
    from tests.fakes.alpaca.server import AlpacaStandIn
    from tests.planned_orders import planned_order
    from tests.servers import isolated_settings, running_workers
    from workers.main import WorkerPlan, plan_for
    from workers.roles import WorkerRole
    from workflows.broker_orders import BrokerOrdersResult, BrokerOrdersWorkflow
    from workflows.reconcile import ReconcileWorkflow

pytestmark = [pytest.mark.asyncio(loop_scope="session"), pytest.mark.integration]
QUEUE = "test-broker-orders"
KEY, SECRET = "PKTESTBROKER000000000", "test-broker-secret"
PRICES = {"AAPL": Decimal("190.00"), "MSFT": Decimal("410.00")}
STEP_EVERY = 0.2
"""Seconds between two of the stand-in's fill rounds while a test runs."""


@pytest.fixture(scope="module")
def broker() -> Iterator[AlpacaStandIn]:
    """The stand-in, its market open, filling each order in two rounds."""
    with AlpacaStandIn(key_id=KEY, secret=SECRET, prices=PRICES, fill_plan=(0.4, 0.6)) as server:
        stop = threading.Event()

        def fill_rounds() -> None:
            while not stop.wait(STEP_EVERY):
                server.step()

        stepper = threading.Thread(target=fill_rounds, daemon=True)
        stepper.start()
        yield server
        stop.set()
        stepper.join()


@pytest.fixture(scope="module")
def settings(
    s3_settings: Settings, tmp_path_factory: pytest.TempPathFactory, broker: AlpacaStandIn
) -> Settings:
    alpaca = {
        "base_url": broker.base_url,
        "key_id": KEY,
        "secret_key": SECRET,
        "timeout_seconds": 1.0,
    }
    folder: Path = tmp_path_factory.mktemp("broker-orders")
    return isolated_settings(s3_settings, folder, QUEUE, alpaca=alpaca)


@pytest_asyncio.fixture(scope="module", loop_scope="session")
async def workers(dev_env: WorkflowEnvironment, settings: Settings) -> AsyncIterator[None]:
    plans = [
        WorkerPlan(queue=QUEUE, workflows=[BrokerOrdersWorkflow, ReconcileWorkflow]),
        plan_for(WorkerRole.BROKER, settings),
    ]
    async with running_workers(dev_env.client, plans):
        yield


def _order(index: int, symbol: str, side: Side, shares: int) -> PlannedOrder:
    return planned_order(index, symbol, side, shares, PRICES[symbol])


def _book(settings: Settings) -> tuple[BrokerBook, str]:
    books = BrokerBook.from_settings(settings)
    name = f"b{uuid.uuid4().hex[:8]}"
    books.create(name, Decimal(100_000), broker=BrokerKind.ALPACA)
    return books, name


async def _execute(
    env: WorkflowEnvironment, book: str, orders: list[PlannedOrder], **policy: object
) -> BrokerOrdersResult:
    decided_by = f"portfolio-{uuid.uuid4().hex[:8]}"
    return await env.client.execute_workflow(
        "BrokerOrders",
        {
            "portfolio": book,
            "decided_by": decided_by,
            "orders": [order.model_dump(mode="json") for order in orders],
            "policy": {"poll_seconds": 1, **policy},
        },
        id=f"{decided_by}-broker",
        task_queue=QUEUE,
        result_type=BrokerOrdersResult,
    )


FAULTS = [
    pytest.param(FaultKind.GATEWAY_TIMEOUT_AFTER_SAVE, {}, id="saved-then-504"),
    pytest.param(FaultKind.DROP_AFTER_SAVE, {}, id="saved-then-dropped"),
    pytest.param(FaultKind.SLOW_AFTER_SAVE, {"delay": 2.5}, id="saved-then-too-slow"),
    pytest.param(FaultKind.ERROR_WITHOUT_SAVE, {"status": 503}, id="503-not-saved"),
    pytest.param(FaultKind.RATE_LIMITED, {"retry_after": 1}, id="429"),
]


@pytest.mark.parametrize(("fault", "options"), FAULTS)
async def test_each_fault_leaves_one_order_per_intent_and_each_fill_booked_once(
    dev_env: WorkflowEnvironment,
    workers: None,
    settings: Settings,
    broker: AlpacaStandIn,
    fault: FaultKind,
    options: dict[str, object],
) -> None:
    books, book = _book(settings)
    broker.arm_fault(fault, times=1, method="POST", path="/v2/orders", **options)  # type: ignore[arg-type]

    result = await _execute(dev_env, book, [_order(0, "AAPL", Side.BUY, 10)])

    [intent] = result.intents
    assert broker.order_counts()[intent.client_order_id] == 1
    assert intent.status is IntentStatus.FILLED and intent.filled_qty == 10
    assert len(result.booked) == 2  # the two partial fills, each once
    assert len({b.trade.key for b in result.booked}) == 2
    assert {h.symbol: h.shares for h in books.holdings(book)} == {"AAPL": 10}
    assert broker.faults_pending == 0


async def test_an_order_over_a_guardrail_is_refused_and_never_sent(
    dev_env: WorkflowEnvironment, workers: None, settings: Settings, broker: AlpacaStandIn
) -> None:
    books, book = _book(settings)
    huge = _order(1, "MSFT", Side.BUY, 1000)  # 410,000: over the worker's 10,000 an order

    result = await _execute(dev_env, book, [_order(0, "AAPL", Side.BUY, 5), huge])

    by_symbol = {intent.symbol: intent for intent in result.intents}
    assert by_symbol["AAPL"].status is IntentStatus.FILLED
    assert by_symbol["MSFT"].status is IntentStatus.REFUSED
    [refused] = result.refused
    assert refused.symbol == "MSFT" and "over the cap of 10000.0000 an order" in refused.reason
    assert broker.order_counts()[by_symbol["MSFT"].client_order_id] == 0


async def test_the_broker_s_403_refuses_that_order_with_its_reason_and_the_rest_go_on(
    dev_env: WorkflowEnvironment, workers: None, settings: Settings, broker: AlpacaStandIn
) -> None:
    books, book = _book(settings)
    # The book believes it holds MSFT (adopted numbers); the broker holds none: its 403.
    books.adopt_broker(
        book,
        [Position(symbol="MSFT", shares=5, avg_cost=Decimal(400))],
        Decimal(100_000),
        as_of=datetime.now(UTC),
        who="test",
        reason="a book that drifted from its broker",
    )

    result = await _execute(
        dev_env, book, [_order(0, "MSFT", Side.SELL, 5), _order(1, "AAPL", Side.BUY, 5)]
    )

    by_symbol = {intent.symbol: intent for intent in result.intents}
    assert by_symbol["MSFT"].status is IntentStatus.REFUSED
    assert "insufficient qty available for order" in (by_symbol["MSFT"].reason or "")
    assert by_symbol["AAPL"].status is IntentStatus.FILLED


async def test_a_halted_book_sends_nothing(
    dev_env: WorkflowEnvironment, workers: None, settings: Settings, broker: AlpacaStandIn
) -> None:
    books, book = _book(settings)
    books.halt(book, "risk review", "ops")

    result = await _execute(dev_env, book, [_order(0, "AAPL", Side.BUY, 5)])

    [intent] = result.intents
    assert intent.status is IntentStatus.REFUSED and "halted" in (intent.reason or "")
    assert broker.order_counts()[intent.client_order_id] == 0
