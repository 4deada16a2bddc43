"""The broker side's pure rules: client order ids, status moves, fills against their order,
guardrails, the exchange day and drift."""

from __future__ import annotations

import re
from datetime import UTC, datetime, timedelta
from decimal import Decimal
from typing import Any

import pytest
from hypothesis import given
from hypothesis import strategies as st
from pydantic import ValidationError

from shared.broker.drift import Drift, drift
from shared.broker.guardrails import BrokerLimits, Exposure, check_order, exchange_day
from shared.broker.intents import NEXT, TERMINAL, after_fill, client_order_id, moves
from shared.broker.models import (
    CLIENT_ORDER_ID_MAX_LENGTH,
    MAX_ORDER_INDEX,
    BrokerFill,
    Halt,
    IntentStatus,
    OrderIntent,
    OrderSpec,
    OrderType,
)
from shared.errors import InvalidInput
from shared.portfolio.models import NAME_PATTERN, RUN_ID_MAX_LENGTH, Side

T0 = datetime(2024, 6, 3, 14, 0, tzinfo=UTC)
books = st.from_regex(NAME_PATTERN, fullmatch=True)
workflow_ids = st.text(min_size=1, max_size=RUN_ID_MAX_LENGTH)
indexes = st.integers(0, MAX_ORDER_INDEX)


def _spec(side: Side = Side.BUY, qty: int = 10, **fields: Any) -> OrderSpec:
    values: dict[str, Any] = {
        "workflow_id": "wf-1",
        "order_index": 0,
        "symbol": "QBTX",
        "side": side,
        "qty": qty,
        "reference_price": Decimal("25"),
    }
    return OrderSpec(**(values | fields))


def _intent(status: IntentStatus = IntentStatus.SUBMITTED, **fields: Any) -> OrderIntent:
    values: dict[str, Any] = {
        "book": "live",
        "client_order_id": "qd-live-x-0",
        "status": status,
        "created_at": T0,
        "updated_at": T0,
    }
    return OrderIntent(**(_spec().model_dump() | values | fields))


def _fill(qty: int = 4, price: str = "25", **fields: Any) -> BrokerFill:
    values: dict[str, Any] = {
        "fill_id": "f-1",
        "client_order_id": "qd-live-x-0",
        "symbol": "QBTX",
        "side": Side.BUY,
        "qty": qty,
        "price": Decimal(price),
        "transaction_time": T0,
    }
    return BrokerFill(**(values | fields))


# --- client order ids -------------------------------------------------------------------


@given(books, workflow_ids, indexes)
def test_a_client_order_id_is_short_plain_readable_and_repeatable(
    book: str, workflow_id: str, index: int
) -> None:
    made = client_order_id(book, workflow_id, index)

    assert len(made) <= CLIENT_ORDER_ID_MAX_LENGTH
    assert re.fullmatch(r"qd-[A-Za-z0-9-]+", made)
    assert made.endswith(f"-{index}")
    assert made == client_order_id(book, workflow_id, index)


@given(st.tuples(books, workflow_ids, indexes), st.tuples(books, workflow_ids, indexes))
def test_different_orders_never_share_a_client_order_id(
    one: tuple[str, str, int], other: tuple[str, str, int]
) -> None:
    if one != other:
        assert client_order_id(*one) != client_order_id(*other)


@given(st.text(min_size=60, max_size=RUN_ID_MAX_LENGTH), st.characters(), st.characters())
def test_long_workflow_ids_that_differ_only_at_the_end_get_their_own_ids(
    prefix: str, last: str, other: str
) -> None:
    if last != other:
        assert client_order_id("a-very-long-book-name", prefix + last, 7) != client_order_id(
            "a-very-long-book-name", prefix + other, 7
        )


def test_books_whose_names_look_alike_get_their_own_ids() -> None:
    made = {client_order_id(book, "wf", 0) for book in ("my.book", "my_book", "my-book", "My.Book")}
    assert len(made) == 4
    assert all(made_id.startswith("qd-my-book-") for made_id in made if "My" not in made_id)


def test_an_order_index_out_of_range_is_refused() -> None:
    with pytest.raises(InvalidInput, match="`order_index`: 1000000 is not within 0..999999"):
        client_order_id("live", "wf", MAX_ORDER_INDEX + 1)


# --- statuses and fills -----------------------------------------------------------------


def test_an_intent_moves_forward_and_a_repeat_is_no_move() -> None:
    assert moves(_intent(IntentStatus.PENDING), IntentStatus.SUBMITTED)
    assert not moves(_intent(IntentStatus.SUBMITTED), IntentStatus.SUBMITTED)
    with pytest.raises(InvalidInput, match="is submitted; it cannot become pending"):
        moves(_intent(IntentStatus.SUBMITTED), IntentStatus.PENDING)


@pytest.mark.parametrize("terminal", sorted(TERMINAL))
def test_a_terminal_intent_never_becomes_anything_else(terminal: IntentStatus) -> None:
    assert NEXT[terminal] == frozenset()
    for other in set(IntentStatus) - {terminal}:
        with pytest.raises(InvalidInput, match="a terminal status never changes"):
            moves(_intent(terminal), other)


def test_fills_average_their_prices_and_fill_the_order() -> None:
    first = after_fill(_intent(), _fill(4, "25"))
    assert first == (4, Decimal("25"), IntentStatus.PARTIALLY_FILLED)

    partly = _intent(IntentStatus.PARTIALLY_FILLED, filled_qty=4, avg_fill_price=Decimal(25))
    assert after_fill(partly, _fill(6, "26")) == (10, Decimal("25.6"), IntentStatus.FILLED)


def test_a_late_fill_of_a_canceled_order_keeps_it_canceled() -> None:
    canceled = _intent(IntentStatus.CANCELED)
    assert after_fill(canceled, _fill(4))[2] is IntentStatus.CANCELED


@pytest.mark.parametrize(
    ("intent", "fill", "problem"),
    [
        (_intent(), _fill(11), "of 11 overfills the order: 0 of 10 filled"),
        (_intent(), _fill(symbol="OTHR"), "is BUY OTHR, the order BUY QBTX"),
        (_intent(IntentStatus.REFUSED), _fill(), "arrived for an order that is refused"),
    ],
)
def test_a_fill_that_cannot_be_the_orders_is_refused(
    intent: OrderIntent, fill: BrokerFill, problem: str
) -> None:
    with pytest.raises(InvalidInput, match=re.escape(problem)):
        after_fill(intent, fill)


def test_a_limit_order_needs_its_limit_and_a_market_order_has_none() -> None:
    with pytest.raises(ValidationError, match="a limit order needs a limit_price"):
        _spec(order_type=OrderType.LIMIT)
    with pytest.raises(ValidationError, match="a market order takes no limit_price"):
        _spec(limit_price=Decimal(30))
    limit = _spec(order_type=OrderType.LIMIT, limit_price=Decimal("24.5"), symbol=" qbtx ")
    assert (limit.notional, limit.symbol) == (Decimal("245"), "QBTX")
    assert _spec().notional == Decimal("250")


def test_a_fill_names_its_order() -> None:
    with pytest.raises(ValidationError, match="client_order_id or broker_order_id"):
        _fill(client_order_id=None)


# --- guardrails -------------------------------------------------------------------------

LIMITS = BrokerLimits(max_order_notional=Decimal(1000), max_daily_notional=Decimal(2000))
CALM = Exposure(held_shares=0, open_sell_shares=0, notional_today=Decimal(0))


def test_an_order_within_every_limit_passes() -> None:
    assert check_order(_spec(), LIMITS, CALM, buying_power=Decimal(5000)) == []


def test_every_broken_rule_is_named_with_its_figure_and_limit() -> None:
    limits = LIMITS.model_copy(update={"symbols": frozenset({"AAPL", "MSFT"})})
    busy = Exposure(held_shares=0, open_sell_shares=0, notional_today=Decimal(1900))

    broken = check_order(_spec(qty=50), limits, busy, buying_power=Decimal(1000))

    assert broken == [
        "the order is worth 1250.0000, over the cap of 1000.0000 an order",
        "with 1900.0000 ordered today already it makes 3150.0000, over the daily cap of 2000.0000",
        "QBTX is not among the symbols allowed (AAPL, MSFT)",
        "the buy is worth 1250.0000, over the broker's buying power of 1000.0000",
    ]


def test_a_sell_may_not_reach_shares_held_or_promised_to_open_sells() -> None:
    holding = Exposure(held_shares=10, open_sell_shares=4, notional_today=Decimal(0))

    assert check_order(_spec(Side.SELL, 6), LIMITS, holding, buying_power=Decimal(0)) == []
    assert check_order(_spec(Side.SELL, 7), LIMITS, holding, buying_power=Decimal(0)) == [
        "it sells 7 shares of QBTX and the book holds 10, 4 of them in open sell orders"
    ]


def test_a_halted_book_sends_nothing() -> None:
    halt = Halt(book="live", halted=True, reason="drift in AAPL", who="ops", at=T0)
    halted = CALM.model_copy(update={"halt": halt})

    assert check_order(_spec(), LIMITS, halted, buying_power=Decimal(5000)) == [
        "the book is halted since 2024-06-03 14:00 UTC by ops: drift in AAPL"
    ]


@pytest.mark.parametrize("cap", ["max_order_notional", "max_daily_notional"])
def test_caps_must_be_above_zero(cap: str) -> None:
    with pytest.raises(ValidationError, match=cap):
        BrokerLimits(**(LIMITS.model_dump() | {cap: Decimal(0)}))
    assert BrokerLimits.model_fields[cap].description


def test_the_allow_list_compares_symbols_as_the_book_does() -> None:
    assert BrokerLimits(**(LIMITS.model_dump() | {"symbols": [" qbtx"]})).symbols == {"QBTX"}


def test_the_exchange_day_is_new_yorks_even_when_the_clocks_change() -> None:
    evening = datetime(2024, 6, 3, 2, 30, tzinfo=UTC)  # 22:30 on 2 June in New York
    assert exchange_day(evening) == (
        datetime(2024, 6, 2, 4, tzinfo=UTC),
        datetime(2024, 6, 3, 4, tzinfo=UTC),
    )
    start, end = exchange_day(datetime(2024, 3, 10, 12, tzinfo=UTC))
    assert end - start == timedelta(hours=23)


# --- drift ------------------------------------------------------------------------------


def test_drift_names_every_difference_as_the_brokers_figure_less_the_books() -> None:
    found = drift(
        {"AAPL": 10, "MSFT": 5},
        Decimal("1000"),
        {"AAPL": 12, "NVDA": 3, "MSFT": 5},
        Decimal("990.5"),
        {"f1", "f2"},
        {"f2", "f3"},
    )

    assert found.shares == {"AAPL": 2, "NVDA": 3}
    assert found.cash == Decimal("-9.5")
    assert (found.unbooked_fills, found.unknown_fills) == (["f3"], ["f1"])
    assert not found.clean
    # What a workflow decodes from an activity's result: the same drift, clean or not.
    assert Drift.model_validate_json(found.model_dump_json()) == found


def test_a_book_that_matches_its_broker_has_no_drift() -> None:
    found = drift({"AAPL": 10}, Decimal(5), {"AAPL": 10}, Decimal("5.00"), {"f"}, ["f"])
    assert found.clean and found.shares == {}
