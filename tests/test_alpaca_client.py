"""The Alpaca client against the Alpaca stand-in, over real HTTP.

Every call's answer, what goes on the wire, and each failure as the typed error a
Temporal activity turns into a retry or a stop; and that the client never sends a
request twice on its own, whatever happens to the answer. What needs no stand-in is
test_alpaca_client_offline.py.
"""

from __future__ import annotations

import json
from collections.abc import Iterator
from datetime import UTC, date, datetime, timedelta
from decimal import Decimal
from typing import Any

import pytest

from activities.failures import application_error
from shared.broker.alpaca_client import FILLS_PAGE_SIZE, AlpacaClient
from shared.broker.alpaca_errors import MAX_RETRY_AFTER
from shared.broker.alpaca_wire import OrderStatus
from shared.config import AlpacaSettings
from shared.errors import (
    BrokerAuthFailed,
    BrokerRateLimited,
    BrokerRefused,
    BrokerUnavailable,
    ConfigError,
    DuplicateClientOrderId,
    OrderRefused,
)
from tests.alpaca_calls import KEY, SECRET, order, settings_for
from tests.fakes.alpaca import AlpacaStandIn, FaultKind

# 2025-06-24 is a Tuesday; the stand-in's clock starts at 10:30 in New York.
SATURDAY = datetime(2025, 6, 28, 15, 0, tzinfo=UTC)
MONDAY_OPEN = datetime(2025, 6, 30, 13, 30, tzinfo=UTC)


@pytest.fixture
def server() -> Iterator[AlpacaStandIn]:
    prices = {"AAPL": Decimal("187.20"), "MSFT": Decimal("420.50")}
    with AlpacaStandIn(key_id=KEY, secret=SECRET, cash=Decimal("100000"), prices=prices) as s:
        yield s


@pytest.fixture
def client(server: AlpacaStandIn) -> Iterator[AlpacaClient]:
    with AlpacaClient(settings_for(server.base_url)) as c:
        yield c


def sent(server: AlpacaStandIn, method: str, path: str) -> int:
    """How many requests for ``method`` and ``path`` reached the stand-in."""
    return sum(1 for r in server.requests if (r.method, r.path) == (method, path))


# -- settings -------------------------------------------------------------------------


def test_missing_keys_are_a_config_error_before_any_request(
    server: AlpacaStandIn, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.delenv("APCA_API_KEY_ID", raising=False)
    monkeypatch.delenv("APCA_API_SECRET_KEY", raising=False)

    with pytest.raises(ConfigError) as caught:
        AlpacaClient(AlpacaSettings(base_url=server.base_url, key_id=KEY))

    assert "APCA_API_KEY_ID" in str(caught.value)
    assert "APCA_API_SECRET_KEY" in str(caught.value)
    assert server.requests == []


# -- reads ------------------------------------------------------------------------------


def test_the_account_reads_money_as_decimals(client: AlpacaClient) -> None:
    account = client.account()

    assert (account.cash, account.buying_power, account.equity) == (Decimal("100000"),) * 3
    assert (account.status, account.currency) == ("ACTIVE", "USD")


def test_positions_and_a_flat_symbol(server: AlpacaStandIn, client: AlpacaClient) -> None:
    server.set_position("AAPL", Decimal("5"), Decimal("150.25"))

    (held,) = client.positions()
    one = client.position("AAPL")

    assert (held.symbol, held.qty, held.avg_entry_price) == ("AAPL", Decimal(5), Decimal("150.25"))
    assert held.current_price == Decimal("187.2")
    assert one == held
    assert client.position("MSFT") is None


def test_the_clock_over_a_weekend(server: AlpacaStandIn, client: AlpacaClient) -> None:
    server.clock.set(SATURDAY)

    clock = client.clock()

    assert clock.is_open is False
    assert clock.timestamp == SATURDAY
    assert clock.next_open == MONDAY_OPEN
    assert clock.next_close == datetime(2025, 6, 30, 20, 0, tzinfo=UTC)
    assert clock.next_open.tzinfo is UTC


def test_the_calendar_skips_the_weekend_in_utc(client: AlpacaClient) -> None:
    days = client.calendar(date(2025, 6, 27), date(2025, 6, 30))

    assert [(d.date, d.open, d.close) for d in days] == [
        (
            date(2025, 6, 27),
            datetime(2025, 6, 27, 13, 30, tzinfo=UTC),
            datetime(2025, 6, 27, 20, 0, tzinfo=UTC),
        ),
        (date(2025, 6, 30), MONDAY_OPEN, datetime(2025, 6, 30, 20, 0, tzinfo=UTC)),
    ]
    assert days[0].settlement_date == date(2025, 6, 30)


def test_the_calendar_keeps_early_closes_in_winter_time(client: AlpacaClient) -> None:
    (friday,) = client.calendar(date(2025, 11, 28), date(2025, 11, 28))

    assert (friday.open, friday.close) == (
        datetime(2025, 11, 28, 14, 30, tzinfo=UTC),  # 09:30 EST
        datetime(2025, 11, 28, 18, 0, tzinfo=UTC),  # 13:00 EST, the day after Thanksgiving
    )


# -- orders -----------------------------------------------------------------------------


def test_submit_places_one_order_with_numbers_as_strings(
    server: AlpacaStandIn, client: AlpacaClient
) -> None:
    placed = client.submit_order(order(type="limit", limit_price=Decimal("187.25")))

    (stored,) = server.orders.values()
    (post,) = [r for r in server.requests if r.method == "POST"]
    assert stored.wire_types == {"qty": "string", "limit_price": "string"}
    assert json.loads(post.raw)["qty"] == "10"
    assert json.loads(post.raw)["limit_price"] == "187.25"
    assert (placed.id, placed.client_order_id, placed.status) == (
        stored.id,
        "intent-1",
        OrderStatus.NEW,
    )
    assert (placed.qty, placed.limit_price, placed.filled_qty) == (
        Decimal(10),
        Decimal("187.25"),
        Decimal(0),
    )
    assert placed.created_at == datetime(2025, 6, 24, 14, 30, tzinfo=UTC)


def test_an_order_is_found_by_its_id_and_by_its_client_order_id(
    server: AlpacaStandIn, client: AlpacaClient
) -> None:
    server.set_fill_plan([0.4, 0.6])
    placed = client.submit_order(order("intent-7"))
    server.step()

    by_id = client.order(placed.id)
    by_client_id = client.order_by_client_id("intent-7")

    assert by_id == by_client_id
    assert (by_id.status, by_id.filled_qty, by_id.filled_avg_price) == (
        OrderStatus.PARTIALLY_FILLED,
        Decimal(4),
        Decimal("187.2"),
    )
    assert client.order_by_client_id("intent-8") is None


def test_an_unknown_order_id_is_refused(client: AlpacaClient) -> None:
    with pytest.raises(BrokerRefused) as caught:
        client.order("0b7ad5a9-5a8e-4c4e-9c55-6d1b2a7f0e11")

    assert (caught.value.status, caught.value.retryable) == (404, False)
    assert "order not found" in str(caught.value)


def test_orders_list_by_status_time_and_symbol(server: AlpacaStandIn, client: AlpacaClient) -> None:
    filled = client.submit_order(order("filled-1", qty=Decimal(1)))
    server.step()
    server.clock.advance(timedelta(minutes=5))
    later = server.clock.now()
    resting = client.submit_order(
        order("resting-1", symbol="MSFT", type="limit", limit_price=Decimal("400"))
    )

    every = client.orders()
    closed = client.orders(status="closed")
    msft = client.orders(symbols=["MSFT"])
    after = client.orders(after=later - timedelta(seconds=1))

    assert [o.id for o in every] == [resting.id, filled.id]  # newest first
    assert [o.id for o in closed] == [filled.id]
    assert [o.id for o in msft] == [resting.id]
    assert [o.id for o in after] == [resting.id]


def test_cancelling_an_open_order_answers_its_cancelled_state(
    server: AlpacaStandIn, client: AlpacaClient
) -> None:
    resting = client.submit_order(order(type="limit", limit_price=Decimal("100")))

    cancelled = client.cancel_order(resting.id)

    assert (cancelled.id, cancelled.status) == (resting.id, OrderStatus.CANCELED)
    assert cancelled.canceled_at is not None
    assert sent(server, "DELETE", f"/v2/orders/{resting.id}") == 1


def test_cancelling_a_filled_order_answers_its_state_instead_of_failing(
    server: AlpacaStandIn, client: AlpacaClient
) -> None:
    placed = client.submit_order(order())
    server.step()

    after = client.cancel_order(placed.id)

    assert (after.status, after.filled_qty) == (OrderStatus.FILLED, Decimal(10))
    assert sent(server, "DELETE", f"/v2/orders/{placed.id}") == 1


# -- fills ------------------------------------------------------------------------------


def test_fills_follow_the_pages_to_the_end_oldest_first(
    server: AlpacaStandIn, client: AlpacaClient
) -> None:
    server.set_fill_plan([0.1] * 10)  # one share per order per round
    for index in range(21):
        client.submit_order(order(f"fill-{index}"))
    for _ in range(10):
        server.clock.advance(timedelta(minutes=1))  # one round, a minute apart

    fills = client.fills()

    assert len(fills) == 210 > 2 * FILLS_PAGE_SIZE
    assert [f.id for f in fills] == [f.id for f in server.fills]
    assert len({f.id for f in fills}) == 210
    assert sent(server, "GET", "/v2/account/activities/FILL") == 3
    tokens = [r.query.get("page_token") for r in server.requests if r.path.endswith("/FILL")]
    assert tokens == [None, [fills[99].id], [fills[199].id]]
    first = fills[0]
    assert (first.qty, first.price, first.cum_qty, first.leaves_qty) == (
        Decimal(1),
        Decimal("187.2"),
        Decimal(1),
        Decimal(9),
    )
    assert [f.type for f in fills[-21:]] == ["fill"] * 21


def test_fills_between_two_times(server: AlpacaStandIn, client: AlpacaClient) -> None:
    server.set_fill_plan([0.5, 0.5])
    client.submit_order(order())
    start = server.clock.now()
    server.clock.advance(timedelta(minutes=1))
    server.clock.advance(timedelta(minutes=1))

    first = client.fills(until=start + timedelta(seconds=90))
    second = client.fills(after=start + timedelta(seconds=90))
    none = client.fills(after=start + timedelta(minutes=5))

    assert [(f.transaction_time, f.type) for f in first] == [
        (start + timedelta(minutes=1), "partial_fill")
    ]
    assert [(f.transaction_time, f.type) for f in second] == [
        (start + timedelta(minutes=2), "fill")
    ]
    assert none == []


# -- refusals ---------------------------------------------------------------------------


def test_a_wrong_secret_names_the_variables_never_the_value(server: AlpacaStandIn) -> None:
    wrong = "wrong-secret-value-1234"

    with (
        AlpacaClient(settings_for(server.base_url, secret=wrong)) as client,
        pytest.raises(BrokerAuthFailed) as caught,
    ):
        client.account()

    message = str(caught.value)
    assert caught.value.retryable is False
    assert "APCA_API_KEY_ID" in message and "APCA_API_SECRET_KEY" in message
    assert wrong not in message and wrong not in repr(caught.value)
    assert wrong not in repr(client)
    assert len(server.requests) == 1


def test_a_used_client_order_id_is_a_duplicate_and_the_order_is_then_found(
    server: AlpacaStandIn, client: AlpacaClient
) -> None:
    first = client.submit_order(order("intent-dup"))

    with pytest.raises(DuplicateClientOrderId) as caught:
        client.submit_order(order("intent-dup", qty=Decimal(3)))

    assert caught.value.retryable is False
    assert caught.value.client_order_id == "intent-dup"
    assert application_error(caught.value).details == ("intent-dup",)
    found = client.order_by_client_id("intent-dup")
    assert found is not None and (found.id, found.qty) == (first.id, Decimal(10))
    assert server.order_counts() == {"intent-dup": 1}
    assert sent(server, "POST", "/v2/orders") == 2


@pytest.mark.parametrize(
    ("request_fields", "reason"),
    [
        ({"qty": Decimal(600)}, "insufficient buying power"),  # 600 x 187.20 > 100,000
        (
            {"side": "sell"},
            "insufficient qty available for order (requested: 10, available: 5)",
        ),
    ],
    ids=["buying power", "oversell"],
)
def test_a_403_is_an_order_refusal_in_the_brokers_words(
    server: AlpacaStandIn,
    client: AlpacaClient,
    request_fields: dict[str, Any],
    reason: str,
) -> None:
    server.set_position("AAPL", Decimal(5), Decimal(150))

    with pytest.raises(OrderRefused) as caught:
        client.submit_order(order(**request_fields))

    refused = caught.value
    assert (refused.status, refused.code, refused.reason) == (403, 40310000, reason)
    assert refused.retryable is False
    assert reason in str(refused) and "intent-1" in str(refused)
    assert server.orders == {}


def test_a_422_on_submit_is_an_order_refusal(server: AlpacaStandIn, client: AlpacaClient) -> None:
    with pytest.raises(OrderRefused) as caught:
        client.submit_order(order(symbol="ZZZZ"))

    assert (caught.value.status, caught.value.reason) == (422, 'asset "ZZZZ" not found')
    assert not isinstance(caught.value, DuplicateClientOrderId)


# -- throttling and faults ---------------------------------------------------------------


def test_a_429_is_retryable_after_the_delay_asked(
    server: AlpacaStandIn, client: AlpacaClient
) -> None:
    server.force_rate_limit(1, retry_after=3)

    with pytest.raises(BrokerRateLimited) as caught:
        client.submit_order(order())

    assert caught.value.retryable is True
    assert caught.value.retry_after == timedelta(seconds=3)
    assert application_error(caught.value).next_retry_delay == timedelta(seconds=3)
    assert server.orders == {}
    assert len(server.requests) == 1


def test_the_quota_running_out_is_a_429_too(server: AlpacaStandIn, client: AlpacaClient) -> None:
    server.set_rate_limit(1)
    client.clock()

    with pytest.raises(BrokerRateLimited) as caught:
        client.clock()

    assert caught.value.retry_after is not None
    assert timedelta(0) < caught.value.retry_after <= MAX_RETRY_AFTER
    assert len(server.requests) == 2


@pytest.mark.parametrize(
    ("kind", "said"),
    [
        (FaultKind.GATEWAY_TIMEOUT_AFTER_SAVE, "HTTP 504: 504 Gateway Time-out"),
        (FaultKind.DROP_AFTER_SAVE, "RemoteProtocolError"),
        (FaultKind.SLOW_AFTER_SAVE, "did not answer within 0.2 s"),
    ],
)
def test_a_lost_answer_is_retryable_and_the_order_is_there_to_find(
    server: AlpacaStandIn, kind: FaultKind, said: str
) -> None:
    server.arm_fault(kind, method="POST", path="/v2/orders", delay=1.0)

    with (
        AlpacaClient(settings_for(server.base_url, timeout=0.2)) as client,
        pytest.raises(BrokerUnavailable) as caught,
    ):
        client.submit_order(order("intent-lost"))

    assert caught.value.retryable is True
    assert said in str(caught.value)
    assert "intent-lost" in str(caught.value)  # the fix: resend under it, or look it up
    assert SECRET not in str(caught.value)
    assert sent(server, "POST", "/v2/orders") == 1
    assert server.order_counts() == {"intent-lost": 1}


def test_resending_after_a_lost_answer_finds_the_one_order(server: AlpacaStandIn) -> None:
    server.arm_fault(FaultKind.GATEWAY_TIMEOUT_AFTER_SAVE, method="POST", path="/v2/orders")

    with AlpacaClient(settings_for(server.base_url)) as client:
        with pytest.raises(BrokerUnavailable):
            client.submit_order(order("intent-again"))
        with pytest.raises(DuplicateClientOrderId):
            client.submit_order(order("intent-again"))  # what Temporal's retry does
        found = client.order_by_client_id("intent-again")

    assert found is not None
    assert server.order_counts() == {"intent-again": 1}


@pytest.mark.parametrize("status", [500, 502, 503])
def test_a_server_error_is_retryable_and_places_nothing(
    server: AlpacaStandIn, client: AlpacaClient, status: int
) -> None:
    server.arm_fault(FaultKind.ERROR_WITHOUT_SAVE, status=status, method="POST")

    with pytest.raises(BrokerUnavailable) as caught:
        client.submit_order(order())

    assert (caught.value.status, caught.value.retryable) == (status, True)
    assert server.orders == {}
    assert len(server.requests) == 1
