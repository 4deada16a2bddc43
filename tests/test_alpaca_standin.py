"""The Alpaca stand-in, driven over real HTTP as a broker client would drive it.

What it refuses, how fills, the clock and the faults behave, and that every
answer it gives conforms to Alpaca's published spec (``tests.fakes.alpaca.spec``).
"""

from __future__ import annotations

import re
from collections.abc import Iterator
from datetime import UTC, datetime, timedelta
from decimal import Decimal
from typing import Any

import httpx
import pytest

from tests.fakes.alpaca import AlpacaStandIn, FaultKind, OrderStatus
from tests.fakes.alpaca.api import ACTIVITY_TYPES, ROUTES
from tests.fakes.alpaca.model import OrderType, Side, TimeInForce
from tests.fakes.alpaca.spec import load_spec, problems, schema

KEY, SECRET = "PKTESTKEY", "test-secret"
AUTH = {"APCA-API-KEY-ID": KEY, "APCA-API-SECRET-KEY": SECRET}
# 2025-06-24 is a Tuesday: the stand-in's clock starts at 10:30 in New York.
AFTER_CLOSE = datetime(2025, 6, 24, 21, 0, tzinfo=UTC)  # 17:00 ET
NEXT_OPEN = datetime(2025, 6, 25, 13, 30, tzinfo=UTC)  # 09:30 ET


@pytest.fixture
def server() -> Iterator[AlpacaStandIn]:
    prices = {"AAPL": Decimal("187.20"), "MSFT": Decimal("420.50")}
    with AlpacaStandIn(key_id=KEY, secret=SECRET, cash=Decimal("100000"), prices=prices) as s:
        yield s


@pytest.fixture
def client(server: AlpacaStandIn) -> Iterator[httpx.Client]:
    with httpx.Client(base_url=server.base_url, headers=AUTH, timeout=5) as c:
        yield c


def order_body(**fields: Any) -> dict[str, Any]:
    """A valid market buy of 10 AAPL, with ``fields`` changed (None removes a field)."""
    body = {"symbol": "AAPL", "qty": "10", "side": "buy", "type": "market", "time_in_force": "day"}
    body.update(fields)
    return {name: value for name, value in body.items() if value is not None}


def place(client: httpx.Client, **fields: Any) -> dict[str, Any]:
    response = client.post("/v2/orders", json=order_body(**fields))
    assert response.status_code == 200, response.text
    order: dict[str, Any] = response.json()
    return order


def fetch(client: httpx.Client, path: str, **params: str) -> Any:
    response = client.get(path, params=params)
    assert response.status_code == 200, response.text
    return response.json()


# -- authentication ----------------------------------------------------------------


@pytest.mark.parametrize(
    "headers",
    [{}, {"APCA-API-KEY-ID": KEY}, {"APCA-API-KEY-ID": KEY, "APCA-API-SECRET-KEY": "wrong"}],
    ids=["no headers", "key only", "wrong secret"],
)
def test_requests_without_the_key_pair_are_refused(
    server: AlpacaStandIn, headers: dict[str, str]
) -> None:
    response = httpx.get(f"{server.base_url}/v2/account", headers=headers)

    assert response.status_code == 401
    assert response.json() == {"code": 40110000, "message": "request is not authorized"}


def test_recorded_requests_keep_no_secret(server: AlpacaStandIn, client: httpx.Client) -> None:
    client.get("/v2/account")

    (request,) = server.requests
    assert request.headers["apca-api-key-id"] == KEY
    assert "apca-api-secret-key" not in request.headers


# -- what POST /v2/orders refuses --------------------------------------------------------


@pytest.mark.parametrize(
    ("fields", "status", "code", "message"),
    [
        ({"qty": None}, 422, 40010001, "qty or notional is required"),
        ({"notional": "100"}, 422, 40010001, "qty and notional cannot both be specified"),
        ({"side": "short"}, 422, 40010001, "invalid side: short"),
        ({"type": None}, 422, 40010001, "type is required"),
        ({"time_in_force": "gtd"}, 422, 40010001, "invalid time_in_force: gtd"),
        ({"type": "limit"}, 422, 40010001, "limit price is required for limit orders"),
        ({"limit_price": "180"}, 422, 40010001, "limit price is only valid for limit orders"),
        ({"type": "stop"}, 422, 40010001, "stop price is required for stop orders"),
        ({"qty": "0"}, 422, 40010001, "qty must be > 0"),
        ({"qty": "ten"}, 422, 40010001, "qty must be a decimal number"),
        ({"qty": True}, 422, 40010001, "qty must be a decimal number"),
        ({"qty": "0.0000000001"}, 422, 40010001, "qty can take up to 9 decimal places"),
        ({"client_order_id": "x" * 49}, 422, 40010001, "no more than 48 characters"),
        ({"client_order_id": "intent:1"}, 422, 40010001, "only letters, digits and '-'"),
        ({"order_type": "market"}, 422, 40010001, 'unknown field "order_type"'),
        ({"symbol": "ZZZZ"}, 422, 42210000, 'asset "ZZZZ" not found'),
        (
            {"type": "limit", "limit_price": "187.205"},
            422,
            42210000,
            "sub-penny increment does not fulfill minimum pricing criteria",
        ),
        (
            {"type": "limit", "limit_price": "187", "qty": "1.5"},
            422,
            42210000,
            "fractional orders must be market orders with time_in_force day",
        ),
        ({"qty": None, "notional": "500", "time_in_force": "gtc"}, 422, 42210000, "notional"),
        ({"time_in_force": "opg"}, 422, 42210000, "opg orders are not accepted between"),
        ({"type": "trailing_stop"}, 501, 50110000, "not simulated"),
        ({"order_class": "bracket"}, 501, 50110000, "not simulated"),
    ],
)
def test_order_bodies_alpaca_refuses_are_refused_and_save_nothing(
    server: AlpacaStandIn,
    client: httpx.Client,
    fields: dict[str, Any],
    status: int,
    code: int,
    message: str,
) -> None:
    response = client.post("/v2/orders", json=order_body(**fields))

    assert response.status_code == status
    assert response.json()["code"] == code
    assert message in response.json()["message"]
    assert server.orders == {}


def test_a_body_that_is_not_json_is_a_400(server: AlpacaStandIn, client: httpx.Client) -> None:
    response = client.post("/v2/orders", content=b"symbol=AAPL&qty=10")

    assert response.status_code == 400
    assert response.json() == {"code": 40010000, "message": "request body format is invalid"}


def test_numbers_may_come_as_strings_or_json_numbers_and_which_is_recorded(
    server: AlpacaStandIn, client: httpx.Client
) -> None:
    as_strings = place(client, type="limit", limit_price="187.25", qty="3")
    as_numbers = client.post(
        "/v2/orders",
        content=b'{"symbol": "AAPL", "qty": 3, "side": "buy", "type": "limit", '
        b'"limit_price": 187.25, "time_in_force": "day"}',
    ).json()

    orders = server.orders
    assert orders[as_strings["id"]].wire_types == {"qty": "string", "limit_price": "string"}
    assert orders[as_numbers["id"]].wire_types == {"qty": "number", "limit_price": "number"}
    assert as_numbers["limit_price"] == "187.25"  # read exactly, not through a binary float


# -- client_order_id ---------------------------------------------------------------------


def test_a_client_order_id_is_refused_for_ever_once_used(
    server: AlpacaStandIn, client: httpx.Client
) -> None:
    cancelled = place(client, client_order_id="intent-1", type="limit", limit_price="100")
    assert client.delete(f"/v2/orders/{cancelled['id']}").status_code == 204
    place(client, client_order_id="intent-2")
    server.step()

    for used in ("intent-1", "intent-2"):
        again = client.post("/v2/orders", json=order_body(client_order_id=used))
        assert again.status_code == 422
        assert again.json() == {"code": 40010001, "message": "client_order_id must be unique"}
    assert server.order_counts() == {"intent-1": 1, "intent-2": 1}


def test_by_client_order_id_is_404_until_the_order_exists(client: httpx.Client) -> None:
    path = "/v2/orders:by_client_order_id"

    before = client.get(path, params={"client_order_id": "intent-7"})
    placed = place(client, client_order_id="intent-7")
    after = client.get(path, params={"client_order_id": "intent-7"})

    assert before.status_code == 404
    assert before.json() == {"code": 40410000, "message": "order not found"}
    assert after.json()["id"] == placed["id"]


def test_an_unknown_order_id_is_404(client: httpx.Client) -> None:
    response = client.get("/v2/orders/0b7ad5a9-5a8e-4c4e-9c55-6d1b2a7f0e11")

    assert response.status_code == 404
    assert response.json() == {"code": 40410000, "message": "order not found"}


# -- buying power and shares --------------------------------------------------------------


def test_a_buy_beyond_buying_power_is_refused(server: AlpacaStandIn, client: httpx.Client) -> None:
    too_much = client.post("/v2/orders", json=order_body(qty="600"))  # 600 x 187.20 > 100,000

    assert too_much.status_code == 403
    assert too_much.json() == {"code": 40310000, "message": "insufficient buying power"}
    assert server.orders == {}


def test_open_buy_orders_hold_back_buying_power(client: httpx.Client) -> None:
    place(client, type="limit", limit_price="187", qty="500")  # holds 93,500

    account = fetch(client, "/v2/account")
    refused = client.post("/v2/orders", json=order_body(qty="50"))  # 9,360 > 6,500 left

    assert account["buying_power"] == "6500"
    assert account["cash"] == "100000"
    assert refused.status_code == 403


def test_selling_more_than_is_held_is_refused(server: AlpacaStandIn, client: httpx.Client) -> None:
    server.set_position("AAPL", Decimal("5"), Decimal("150"))
    place(client, side="sell", qty="3", type="limit", limit_price="999")

    refused = client.post("/v2/orders", json=order_body(side="sell", qty="3"))

    assert refused.status_code == 403
    assert refused.json() == {
        "code": 40310000,
        "message": "insufficient qty available for order (requested: 3, available: 2)",
    }
    assert fetch(client, "/v2/positions/AAPL")["qty_available"] == "2"


def test_a_flat_symbol_has_no_position(client: httpx.Client) -> None:
    response = client.get("/v2/positions/AAPL")

    assert response.status_code == 404
    assert response.json() == {"code": 40410000, "message": "position does not exist"}


# -- rate limit ------------------------------------------------------------------------------


def test_past_the_rate_limit_the_answer_is_429_with_its_headers(
    server: AlpacaStandIn, client: httpx.Client
) -> None:
    server.set_rate_limit(3)

    answers = [client.get("/v2/clock") for _ in range(4)]

    assert [a.status_code for a in answers] == [200, 200, 200, 429]
    assert [a.headers["X-RateLimit-Remaining"] for a in answers] == ["2", "1", "0", "0"]
    limited = answers[-1]
    assert limited.headers["X-RateLimit-Limit"] == "3"
    assert int(limited.headers["X-RateLimit-Reset"]) > datetime.now(UTC).timestamp()
    assert 1 <= int(limited.headers["Retry-After"]) <= 60


def test_forced_429s_save_nothing(server: AlpacaStandIn, client: httpx.Client) -> None:
    server.force_rate_limit(2, retry_after=3)

    answers = [client.post("/v2/orders", json=order_body()) for _ in range(3)]

    assert [a.status_code for a in answers] == [429, 429, 200]
    assert answers[0].headers["Retry-After"] == "3"
    assert len(server.orders) == 1


# -- fills ------------------------------------------------------------------------------------


def test_partial_fills_are_separate_fill_activities(
    server: AlpacaStandIn, client: httpx.Client
) -> None:
    server.set_fill_plan([0.4, 0.6])
    placed = place(client)

    server.step()
    halfway = fetch(client, f"/v2/orders/{placed['id']}")
    server.step()
    done = fetch(client, f"/v2/orders/{placed['id']}")
    fills = fetch(client, "/v2/account/activities/FILL", direction="asc")

    assert placed["status"] == "new"
    assert (halfway["status"], halfway["filled_qty"]) == ("partially_filled", "4")
    assert (done["status"], done["filled_qty"], done["filled_avg_price"]) == (
        "filled",
        "10",
        "187.2",
    )
    assert [(f["type"], f["qty"], f["cum_qty"], f["leaves_qty"]) for f in fills] == [
        ("partial_fill", "4", "4", "6"),
        ("fill", "6", "10", "0"),
    ]
    assert len({f["id"] for f in fills}) == 2
    assert fetch(client, "/v2/account/activities", activity_types="FILL", direction="asc") == fills
    assert fetch(client, "/v2/positions/AAPL")["qty"] == "10"
    assert fetch(client, "/v2/account")["cash"] == "98128"


def test_fill_activities_page_by_token(server: AlpacaStandIn, client: httpx.Client) -> None:
    for _ in range(3):
        place(client, qty="1")
    server.step()

    newest_first = fetch(client, "/v2/account/activities/FILL")
    first = fetch(client, "/v2/account/activities/FILL", page_size="2")
    rest = fetch(client, "/v2/account/activities/FILL", page_size="2", page_token=first[-1]["id"])

    assert first + rest == newest_first
    assert len(rest) == 1


def test_limit_orders_fill_only_once_the_price_reaches_them(
    server: AlpacaStandIn, client: httpx.Client
) -> None:
    placed = place(client, type="limit", limit_price="180", time_in_force="gtc")

    server.step()
    waiting = fetch(client, f"/v2/orders/{placed['id']}")
    server.set_price("AAPL", Decimal("179.50"))
    server.step()
    filled = fetch(client, f"/v2/orders/{placed['id']}")

    assert waiting["status"] == "new"
    assert (filled["status"], filled["filled_avg_price"]) == ("filled", "179.5")


def test_notional_orders_fill_fractional_shares(
    server: AlpacaStandIn, client: httpx.Client
) -> None:
    placed = place(client, qty=None, notional="1000")

    server.step()
    filled = fetch(client, f"/v2/orders/{placed['id']}")

    assert (placed["qty"], placed["notional"]) == (None, "1000")
    assert filled["filled_qty"] == "5.341880341"  # 1000 / 187.20, to 9 places, rounded down


def test_ioc_fills_one_round_and_cancels_the_rest(
    server: AlpacaStandIn, client: httpx.Client
) -> None:
    server.set_fill_plan([0.5, 0.5])
    placed = place(client, time_in_force="ioc")

    server.step()
    order = fetch(client, f"/v2/orders/{placed['id']}")

    assert (order["status"], order["filled_qty"]) == ("canceled", "5")


# -- clock and calendar -----------------------------------------------------------------------


def test_an_order_placed_after_the_close_waits_for_the_next_open(
    server: AlpacaStandIn, client: httpx.Client
) -> None:
    server.clock.set(AFTER_CLOSE)
    clock = fetch(client, "/v2/clock")
    placed = place(client)

    server.step()
    queued = fetch(client, f"/v2/orders/{placed['id']}")
    server.clock.set(NEXT_OPEN - timedelta(minutes=1))
    before_open = fetch(client, f"/v2/orders/{placed['id']}")
    server.clock.advance(timedelta(minutes=2))
    after_open = fetch(client, f"/v2/orders/{placed['id']}")

    assert clock == {
        "timestamp": "2025-06-24T17:00:00-04:00",
        "is_open": False,
        "next_open": "2025-06-25T09:30:00-04:00",
        "next_close": "2025-06-25T16:00:00-04:00",
    }
    assert placed["status"] == queued["status"] == before_open["status"] == "accepted"
    assert after_open["status"] == "filled"
    assert after_open["filled_at"] == "2025-06-25T13:30:00.000000Z"


def test_day_orders_expire_at_the_close_and_cannot_then_be_cancelled(
    server: AlpacaStandIn, client: httpx.Client
) -> None:
    day = place(client, type="limit", limit_price="100")
    gtc = place(client, type="limit", limit_price="100", time_in_force="gtc")

    server.clock.set(AFTER_CLOSE)
    expired = fetch(client, f"/v2/orders/{day['id']}")
    cancel = client.delete(f"/v2/orders/{day['id']}")

    assert (expired["status"], expired["expired_at"]) == ("expired", "2025-06-24T20:00:00.000000Z")
    assert fetch(client, f"/v2/orders/{gtc['id']}")["status"] == "new"
    assert cancel.status_code == 422
    assert cancel.json() == {"code": 42210000, "message": 'order is already in "expired" state'}


def test_the_calendar_is_xnys_with_its_holidays_and_early_closes(client: httpx.Client) -> None:
    days = fetch(client, "/v2/calendar", start="2025-11-26", end="2025-12-01")

    assert [(d["date"], d["open"], d["close"], d["settlement_date"]) for d in days] == [
        ("2025-11-26", "09:30", "16:00", "2025-11-28"),
        ("2025-11-28", "09:30", "13:00", "2025-12-01"),  # the day after Thanksgiving
        ("2025-12-01", "09:30", "16:00", "2025-12-02"),
    ]


def test_the_clock_is_the_one_the_test_sets(server: AlpacaStandIn, client: httpx.Client) -> None:
    server.clock.set(datetime(2025, 11, 29, 15, 0, tzinfo=UTC))  # a Saturday

    clock = fetch(client, "/v2/clock")

    assert clock["is_open"] is False
    assert clock["next_open"] == "2025-12-01T09:30:00-05:00"
    with pytest.raises(ValueError, match="only moves forward"):
        server.clock.set(AFTER_CLOSE)


# -- listing and cancelling ----------------------------------------------------------------------


def test_orders_list_by_status_and_cancel_all_answers_207(
    server: AlpacaStandIn, client: httpx.Client
) -> None:
    filled = place(client, qty="1")
    server.step()
    resting = [place(client, type="limit", limit_price="100", qty="1") for _ in range(2)]

    open_ids = {o["id"] for o in fetch(client, "/v2/orders")}
    closed_ids = {o["id"] for o in fetch(client, "/v2/orders", status="closed")}
    cancel_all = client.delete("/v2/orders")

    assert open_ids == {o["id"] for o in resting}
    assert closed_ids == {filled["id"]}
    assert cancel_all.status_code == 207
    assert sorted(cancel_all.json(), key=lambda r: r["id"]) == sorted(
        ({"id": o["id"], "status": 200} for o in resting), key=lambda r: r["id"]
    )
    assert fetch(client, "/v2/orders") == []
    assert client.get("/v2/orders", params={"status": "pending"}).status_code == 422


# -- faults -----------------------------------------------------------------------------------


def test_a_504_after_saving_leaves_the_order_saved(
    server: AlpacaStandIn, client: httpx.Client
) -> None:
    server.arm_fault(FaultKind.GATEWAY_TIMEOUT_AFTER_SAVE, method="POST", path="/v2/orders")

    response = client.post("/v2/orders", json=order_body(client_order_id="intent-504"))

    assert response.status_code == 504
    assert response.headers["content-type"] == "text/html"
    assert response.text.startswith("<html>")
    assert server.order_counts() == {"intent-504": 1}


def test_a_dropped_connection_after_saving_leaves_the_order_saved(
    server: AlpacaStandIn, client: httpx.Client
) -> None:
    server.arm_fault(FaultKind.DROP_AFTER_SAVE, method="POST", path="/v2/orders")

    with pytest.raises(httpx.RemoteProtocolError):
        client.post("/v2/orders", json=order_body(client_order_id="intent-drop"))

    assert server.order_counts() == {"intent-drop": 1}


def test_an_answer_slower_than_the_client_leaves_the_order_saved(
    server: AlpacaStandIn, client: httpx.Client
) -> None:
    server.arm_fault(FaultKind.SLOW_AFTER_SAVE, method="POST", path="/v2/orders", delay=2.0)

    with pytest.raises(httpx.ReadTimeout):
        client.post("/v2/orders", json=order_body(client_order_id="intent-slow"), timeout=0.2)

    assert server.order_counts() == {"intent-slow": 1}


@pytest.mark.parametrize(("status", "json_body"), [(500, True), (502, False), (503, False)])
def test_a_server_error_saves_nothing(
    server: AlpacaStandIn, client: httpx.Client, status: int, json_body: bool
) -> None:
    server.arm_fault(FaultKind.ERROR_WITHOUT_SAVE, status=status, path="/v2/orders")

    response = client.post("/v2/orders", json=order_body())

    assert response.status_code == status
    assert response.headers["content-type"].startswith("application/json" if json_body else "text")
    assert server.orders == {}


def test_faults_fire_only_on_the_requests_they_match(
    server: AlpacaStandIn, client: httpx.Client
) -> None:
    server.arm_fault(FaultKind.ERROR_WITHOUT_SAVE, times=2, method="POST", path="/v2/orders")

    account = client.get("/v2/account")
    posts = [client.post("/v2/orders", json=order_body()) for _ in range(3)]

    assert account.status_code == 200
    assert [p.status_code for p in posts] == [503, 503, 200]
    assert server.faults_pending == 0


# -- the spec --------------------------------------------------------------------------------


def test_every_answer_conforms_to_the_spec(server: AlpacaStandIn, client: httpx.Client) -> None:
    server.set_fill_plan([0.5, 0.5])
    partial = place(client, qty="2", client_order_id="spec-1")
    server.step()
    resting = place(client, type="stop_limit", stop_price="200", limit_price="201", qty="1")
    client.delete(f"/v2/orders/{resting['id']}")
    place(client, type="limit", limit_price="100", qty="1")

    answers = {
        "Order": [partial, resting, *fetch(client, "/v2/orders", status="all")],
        "Position": fetch(client, "/v2/positions"),
        "Account": [fetch(client, "/v2/account")],
        "TradingActivities": fetch(client, "/v2/account/activities/FILL"),
        "legacy_clock": [fetch(client, "/v2/clock")],
        "legacy_calendar_day": fetch(client, "/v2/calendar", start="2025-06-20", end="2025-07-07"),
        "CanceledOrderResponse": client.delete("/v2/orders").json(),
        "Error": [client.get("/v2/positions/MSFT").json(), client.get("/v2/orders/x").json()],
    }

    assert all(answers.values())
    assert {
        name: [p for a in found for p in problems(a, name)] for name, found in answers.items()
    } == {name: [] for name in answers}


def test_the_spec_checker_finds_drift() -> None:
    assert problems({"id": 5, "status": "done", "extra": 1}, "Order") == [
        "$: missing notional",
        "$: missing type",
        "$: missing time_in_force",
        "$.id: int is not string",
        "$.status: 'done' not in " + str(schema("OrderStatus")["enum"]),
        "$: extra is not in the schema",
    ]


@pytest.mark.parametrize(
    ("values", "spec_enum"),
    [
        ({str(v) for v in Side}, "OrderSide"),
        ({str(v) for v in OrderType}, "OrderType"),
        ({str(v) for v in TimeInForce}, "TimeInForce"),
        ({str(v) for v in OrderStatus}, "OrderStatus"),
        (set(ACTIVITY_TYPES), "ActivityType"),
    ],
)
def test_the_stand_ins_vocabulary_is_the_specs(values: set[str], spec_enum: str) -> None:
    assert values <= set(schema(spec_enum)["enum"])


def test_every_route_is_an_operation_of_the_spec() -> None:
    spec_routes = {
        (method.upper(), re.sub(r"\{[^}]+\}", "([^/]+)", path))
        for path, operations in load_spec()["paths"].items()
        for method in operations
    }

    assert {(method, pattern.pattern) for method, pattern, _ in ROUTES} <= spec_routes
