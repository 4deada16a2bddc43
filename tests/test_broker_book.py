"""A book at a real broker, in SQL: intents written before sending, fills booked once,
guardrails read from the book, halts and adoptions on record; SQLite and PostgreSQL alike."""

from __future__ import annotations

from concurrent.futures import ThreadPoolExecutor
from datetime import UTC, datetime, timedelta
from decimal import Decimal
from typing import Any

import pytest

from shared.broker.book import BrokerBook
from shared.broker.guardrails import BrokerLimits
from shared.broker.models import (
    BrokerFill,
    IntentStatus,
    OrderIntent,
    OrderSpec,
    OrderType,
    Position,
)
from shared.data.contracts import Sector
from shared.errors import InvalidInput
from shared.portfolio.models import BrokerKind, Side
from shared.portfolio.schema import broker_fills, order_intents, trades
from shared.portfolio.store import TradeRefused
from tests.servers import count_rows

ALPACA = BrokerKind.ALPACA
T0 = datetime(2024, 6, 3, 14, 0, tzinfo=UTC)
SECOND = timedelta(seconds=1)
LIMITS = BrokerLimits(max_order_notional=Decimal(5000), max_daily_notional=Decimal(8000))


@pytest.fixture
def book(database_url: str) -> BrokerBook:
    store = BrokerBook(database_url)
    store.create("live", Decimal("10000"), broker=ALPACA)
    return store


def _spec(index: int = 0, side: Side = Side.BUY, qty: int = 10, **fields: Any) -> OrderSpec:
    values: dict[str, Any] = {
        "workflow_id": "wf-1",
        "order_index": index,
        "symbol": "QBTX",
        "side": side,
        "qty": qty,
        "reference_price": Decimal("25"),
        "sector": Sector.INFORMATION_TECHNOLOGY,
        "rationale": "momentum",
    }
    return OrderSpec(**(values | fields))


def _fill(intent: OrderIntent, fill_id: str, qty: int, price: str, **fields: Any) -> BrokerFill:
    values: dict[str, Any] = {
        "fill_id": fill_id,
        "client_order_id": intent.client_order_id,
        "symbol": intent.symbol,
        "side": intent.side,
        "qty": qty,
        "price": Decimal(price),
        "transaction_time": T0,
    }
    return BrokerFill(**(values | fields))


def _submitted(book: BrokerBook, spec: OrderSpec, broker_order_id: str) -> OrderIntent:
    intent = book.record_intent("live", spec, broker=ALPACA)
    return book.mark_submitted(intent.client_order_id, broker_order_id)


# --- intents ----------------------------------------------------------------------------


def test_an_intent_is_recorded_pending_under_its_client_order_id(book: BrokerBook) -> None:
    intent = book.record_intent("live", _spec(), broker=ALPACA)

    assert intent.status is IntentStatus.PENDING
    assert intent.client_order_id.startswith("qd-live-") and intent.client_order_id.endswith("-0")
    assert (intent.book, intent.filled_qty, intent.broker_order_id) == ("live", 0, None)
    assert book.intent(intent.client_order_id) == intent
    assert book.intent("qd-nope") is None


def test_recording_an_intent_again_returns_it_as_it_stands(
    book: BrokerBook, database_url: str
) -> None:
    first = book.record_intent("live", _spec(), broker=ALPACA)
    submitted = book.mark_submitted(first.client_order_id, "b-1")

    assert book.record_intent("live", _spec(), broker=ALPACA) == submitted
    assert count_rows(database_url, order_intents) == 1


def test_another_order_under_a_used_client_order_id_is_refused(book: BrokerBook) -> None:
    book.record_intent("live", _spec(), broker=ALPACA)
    with pytest.raises(InvalidInput, match=r"for another order: qty 10 \(now 11\)"):
        book.record_intent("live", _spec(qty=11), broker=ALPACA)


def test_intents_go_only_to_the_books_own_broker_and_never_for_paper(book: BrokerBook) -> None:
    book.create("paper", 1000)
    with pytest.raises(InvalidInput, match="`broker`: the paper broker fills plans"):
        book.record_intent("paper", _spec(), broker=BrokerKind.PAPER)
    with pytest.raises(InvalidInput, match="'paper' trades at the paper broker, not alpaca"):
        book.record_intent("paper", _spec(), broker=ALPACA)


def test_racing_workers_record_one_intent(book: BrokerBook, database_url: str) -> None:
    others = [BrokerBook(database_url) for _ in range(4)]
    with ThreadPoolExecutor(4) as pool:
        made = list(pool.map(lambda s: s.record_intent("live", _spec(), broker=ALPACA), others))

    assert len(set(made)) == 1
    assert count_rows(database_url, order_intents) == 1


def test_intents_are_listed_oldest_first_and_by_status(book: BrokerBook) -> None:
    first = book.record_intent("live", _spec(0), broker=ALPACA)
    second = _submitted(book, _spec(1), "b-1")

    assert book.intents("live") == [first, second]
    assert book.intents("live", IntentStatus.SUBMITTED) == [second]
    assert book.intents("live", {IntentStatus.PENDING, IntentStatus.FILLED}) == [first]
    with pytest.raises(InvalidInput, match="no portfolio called 'nope'"):
        book.intents("nope")


def test_the_latest_intents_are_listed_and_counted(book: BrokerBook) -> None:
    intents = [book.record_intent("live", _spec(i), broker=ALPACA) for i in range(3)]
    book.mark_submitted(intents[2].client_order_id, "b-2")

    assert book.intents("live", limit=2) == [intents[1], book.intent(intents[2].client_order_id)]
    assert book.intent_count("live") == 3
    assert book.intent_count("live", IntentStatus.PENDING) == 2
    with pytest.raises(InvalidInput, match="no portfolio called 'nope'"):
        book.intent_count("nope")


def test_only_a_book_bound_to_a_broker_is_bound(book: BrokerBook) -> None:
    book.create("paper", 1000)

    assert book.bound("live").broker is ALPACA
    assert [b.name for b in book.bound_books()] == ["live"]
    with pytest.raises(InvalidInput, match="'paper' is a paper book: it fills its plans at the"):
        book.bound("paper")
    with pytest.raises(InvalidInput, match="no portfolio called 'nope'"):
        book.bound("nope")


def test_submitting_records_the_brokers_id_once(book: BrokerBook) -> None:
    intent = book.record_intent("live", _spec(), broker=ALPACA)

    submitted = book.mark_submitted(intent.client_order_id, "b-1")
    assert (submitted.status, submitted.broker_order_id) == (IntentStatus.SUBMITTED, "b-1")
    assert book.mark_submitted(intent.client_order_id, "b-1") == submitted
    with pytest.raises(InvalidInput, match="is the broker's b-1, not b-2"):
        book.mark_submitted(intent.client_order_id, "b-2")


def test_an_order_ends_once_and_a_terminal_one_never_changes(book: BrokerBook) -> None:
    intent = _submitted(book, _spec(), "b-1")

    canceled = book.mark_terminal(intent.client_order_id, IntentStatus.CANCELED, "by the user")
    assert (canceled.status, canceled.reason) == (IntentStatus.CANCELED, "by the user")
    assert book.mark_terminal(intent.client_order_id, IntentStatus.CANCELED) == canceled
    with pytest.raises(InvalidInput, match="is canceled; it cannot become expired"):
        book.mark_terminal(intent.client_order_id, IntentStatus.EXPIRED)
    with pytest.raises(InvalidInput, match="filled is not how an order ends without fills"):
        book.mark_terminal(intent.client_order_id, IntentStatus.FILLED)


def test_a_refused_order_is_never_submitted(book: BrokerBook) -> None:
    intent = book.record_intent("live", _spec(), broker=ALPACA)
    book.mark_terminal(intent.client_order_id, IntentStatus.REFUSED, "over the daily cap")

    with pytest.raises(InvalidInput, match="is refused; it cannot become submitted"):
        book.mark_submitted(intent.client_order_id, "b-1")
    with pytest.raises(InvalidInput, match="no order intent 'qd-nope'"):
        book.mark_submitted("qd-nope", "b-1")


# --- fills ------------------------------------------------------------------------------


def test_fills_move_the_holding_the_cash_and_the_intent_and_write_trades(
    book: BrokerBook,
) -> None:
    intent = _submitted(book, _spec(qty=10), "b-1")

    first = book.book_fill("live", _fill(intent, "f-1", 4, "25", fees=Decimal("0.04")))
    second = book.book_fill("live", _fill(intent, "f-2", 6, "26"))

    assert first.new and second.new
    assert first.intent.status is IntentStatus.PARTIALLY_FILLED
    assert (second.intent.status, second.intent.filled_qty) == (IntentStatus.FILLED, 10)
    assert second.intent.avg_fill_price == Decimal("25.6")
    [held] = book.holdings("live")
    # 4 x 25 + 0.04 + 6 x 26 = 256.04 for 10 shares
    assert (held.shares, held.avg_cost, held.sector) == (
        10,
        Decimal("25.604"),
        Sector.INFORMATION_TECHNOLOGY,
    )
    assert book.get("live").cash == Decimal("10000") - Decimal("256.04")
    assert [t.key for t in book.trades("live")] == ["fill/f-1", "fill/f-2"]
    assert first.trade is not None and first.trade == book.trades("live")[0]
    assert (first.trade.source, first.trade.rationale, first.trade.executed_at) == (
        "wf-1",
        "momentum",
        T0,
    )
    assert first.fill.trade_key == "fill/f-1" and first.fill.book == "live"


def test_the_same_fill_twice_is_booked_once(book: BrokerBook, database_url: str) -> None:
    intent = _submitted(book, _spec(), "b-1")
    fill = _fill(intent, "f-1", 10, "25")

    booked = book.book_fill("live", fill)
    again = book.book_fill("live", fill)

    assert booked.new and not again.new
    assert again.fill == booked.fill and again.trade == booked.trade
    assert again.intent == booked.intent
    assert book.get("live").cash == Decimal("9750")
    assert (count_rows(database_url, trades), count_rows(database_url, broker_fills)) == (1, 1)


def test_a_fill_reported_again_by_the_brokers_order_id_is_the_booked_one(
    book: BrokerBook,
) -> None:
    intent = _submitted(book, _spec(), "b-1")
    booked = book.book_fill("live", _fill(intent, "f-1", 10, "25"))

    again = book.book_fill(
        "live", _fill(intent, "f-1", 10, "25", client_order_id=None, broker_order_id="b-1")
    )

    assert not again.new and again.fill == booked.fill


def test_a_fill_id_sent_again_for_another_fill_is_refused(book: BrokerBook) -> None:
    intent = _submitted(book, _spec(), "b-1")
    book.book_fill("live", _fill(intent, "f-1", 4, "25"))

    with pytest.raises(
        InvalidInput, match=r"`fill_id`: f-1 was booked for another fill: qty 4 \(now 5\)"
    ):
        book.book_fill("live", _fill(intent, "f-1", 5, "25"))
    assert book.holdings("live")[0].shares == 4


def test_racing_workers_book_a_fill_once(book: BrokerBook, database_url: str) -> None:
    intent = _submitted(book, _spec(), "b-1")
    fill = _fill(intent, "f-race", 10, "25")
    others = [BrokerBook(database_url) for _ in range(4)]

    with ThreadPoolExecutor(4) as pool:
        outcomes = list(pool.map(lambda s: s.book_fill("live", fill), others))

    assert sum(outcome.new for outcome in outcomes) == 1
    assert book.holdings("live")[0].shares == 10
    assert book.get("live").cash == Decimal("9750")
    assert (count_rows(database_url, trades), count_rows(database_url, broker_fills)) == (1, 1)


def test_a_sell_fill_realizes_its_profit(book: BrokerBook) -> None:
    bought = _submitted(book, _spec(0), "b-1")
    book.book_fill("live", _fill(bought, "f-1", 10, "25"))
    sold = _submitted(book, _spec(1, Side.SELL, 4), "b-2")

    outcome = book.book_fill("live", _fill(sold, "f-2", 4, "30", fees=Decimal("0.02")))

    assert outcome.trade is not None and outcome.trade.realized_pnl == Decimal("19.98")
    assert book.holdings("live")[0].shares == 6
    assert book.get("live").cash == Decimal("9750") + Decimal("119.98")


def test_a_fill_found_by_the_brokers_order_id_alone(book: BrokerBook) -> None:
    intent = _submitted(book, _spec(), "b-1")

    outcome = book.book_fill(
        "live", _fill(intent, "f-1", 10, "25", client_order_id=None, broker_order_id="b-1")
    )

    assert outcome.fill.client_order_id == intent.client_order_id
    assert outcome.intent.status is IntentStatus.FILLED


def test_a_fill_before_submission_was_recorded_submits_the_intent(book: BrokerBook) -> None:
    intent = book.record_intent("live", _spec(), broker=ALPACA)

    outcome = book.book_fill("live", _fill(intent, "f-1", 10, "25", broker_order_id="b-1"))

    assert (outcome.intent.status, outcome.intent.broker_order_id) == (IntentStatus.FILLED, "b-1")
    assert book.mark_submitted(intent.client_order_id, "b-1") == outcome.intent


@pytest.mark.parametrize(
    "names",
    [
        {"client_order_id": "qd-nope"},
        {"client_order_id": None, "broker_order_id": "b-nope"},
        {"broker_order_id": "b-other"},
    ],
)
def test_a_fill_of_no_order_of_the_book_is_refused(
    book: BrokerBook, database_url: str, names: dict[str, Any]
) -> None:
    intent = _submitted(book, _spec(), "b-1")

    with pytest.raises(InvalidInput, match="which is no order intent of 'live'"):
        book.book_fill("live", _fill(intent, "f-1", 10, "25", **names))
    assert count_rows(database_url, broker_fills) == 0


def test_a_fill_of_another_books_order_is_refused(book: BrokerBook) -> None:
    intent = _submitted(book, _spec(), "b-1")
    book.create("other", 1000, broker=ALPACA)

    with pytest.raises(InvalidInput, match="no order intent of 'other'"):
        book.book_fill("other", _fill(intent, "f-1", 10, "25"))


def test_a_fill_the_book_cannot_take_writes_nothing_and_stays_unbooked(
    book: BrokerBook, database_url: str
) -> None:
    intent = _submitted(book, _spec(qty=500), "b-1")

    with pytest.raises(TradeRefused, match="needs 12500.0000 in cash"):
        book.book_fill("live", _fill(intent, "f-1", 500, "25"))
    with pytest.raises(InvalidInput, match="overfills the order"):
        book.book_fill("live", _fill(intent, "f-2", 501, "1"))

    assert book.fill_ids("live") == set()
    assert count_rows(database_url, trades) == 0
    assert book.intent(intent.client_order_id) == intent


def test_a_late_fill_of_a_canceled_order_is_booked_and_it_stays_canceled(
    book: BrokerBook,
) -> None:
    intent = _submitted(book, _spec(), "b-1")
    book.mark_terminal(intent.client_order_id, IntentStatus.CANCELED, "by the user")

    outcome = book.book_fill("live", _fill(intent, "f-1", 3, "25"))

    assert (outcome.intent.status, outcome.intent.filled_qty) == (IntentStatus.CANCELED, 3)
    assert book.holdings("live")[0].shares == 3


def test_fill_ids_are_the_books_side_of_a_window(book: BrokerBook) -> None:
    intent = _submitted(book, _spec(), "b-1")
    book.book_fill("live", _fill(intent, "f-old", 2, "25"))
    later = T0 + timedelta(days=1)
    book.book_fill("live", _fill(intent, "f-new", 2, "25", transaction_time=later))

    assert book.fill_ids("live") == {"f-old", "f-new"}
    assert book.fill_ids("live", since=later) == {"f-new"}


def test_fills_are_listed_as_booked_the_latest_last(book: BrokerBook) -> None:
    intent = _submitted(book, _spec(), "b-1")
    book.book_fill("live", _fill(intent, "f-1", 2, "25"))
    book.book_fill("live", _fill(intent, "f-2", 3, "26"))

    fills = book.fills("live")

    assert [(f.fill_id, f.qty, f.client_order_id, f.book) for f in fills] == [
        ("f-1", 2, intent.client_order_id, "live"),
        ("f-2", 3, intent.client_order_id, "live"),
    ]
    assert [f.fill_id for f in book.fills("live", limit=1)] == ["f-2"]
    assert fills[0].trade_key == "fill/f-1"


# --- guardrails read from the book ------------------------------------------------------


def test_an_intent_is_checked_against_the_days_other_orders(book: BrokerBook) -> None:
    placed = book.record_intent("live", _spec(0, qty=200), broker=ALPACA)  # 5000
    refused = book.record_intent("live", _spec(1, qty=200), broker=ALPACA)
    book.mark_terminal(refused.client_order_id, IntentStatus.REFUSED, "test")
    asked = book.record_intent("live", _spec(2, qty=150), broker=ALPACA)  # 3750

    broken = book.check_intent(
        asked.client_order_id, LIMITS, buying_power=Decimal(100000), at=asked.created_at
    )

    assert broken == [
        "with 5000.0000 ordered today already it makes 8750.0000, over the daily cap of 8000.0000"
    ]
    tomorrow = asked.created_at + timedelta(days=1)
    assert (
        book.check_intent(asked.client_order_id, LIMITS, buying_power=Decimal(100000), at=tomorrow)
        == []
    )
    assert placed.status is IntentStatus.PENDING


def test_the_days_notional_counts_what_may_trade(book: BrokerBook) -> None:
    placed = book.record_intent("live", _spec(0, qty=200), broker=ALPACA)  # 5000
    refused = book.record_intent("live", _spec(1, qty=100), broker=ALPACA)
    book.mark_terminal(refused.client_order_id, IntentStatus.REFUSED, "test")

    assert book.notional_today("live", placed.created_at) == Decimal(5000)
    assert book.notional_today("live", placed.created_at + timedelta(days=1)) == 0


def test_a_sell_is_checked_against_holdings_and_open_sells(book: BrokerBook) -> None:
    bought = _submitted(book, _spec(0), "b-1")
    book.book_fill("live", _fill(bought, "f-1", 10, "25"))
    _submitted(book, _spec(1, Side.SELL, 6), "b-2")
    sell = book.record_intent("live", _spec(2, Side.SELL, 5), broker=ALPACA)

    exposure = book.exposure(sell, datetime.now(UTC))
    assert (exposure.held_shares, exposure.open_sell_shares) == (10, 6)
    assert book.check_intent(sell.client_order_id, LIMITS, buying_power=Decimal(0)) == [
        "it sells 5 shares of QBTX and the book holds 10, 6 of them in open sell orders"
    ]


def test_a_limit_order_is_valued_at_its_limit(book: BrokerBook) -> None:
    spec = _spec(qty=100, order_type=OrderType.LIMIT, limit_price=Decimal("60"))
    intent = book.record_intent("live", spec, broker=ALPACA)

    assert book.check_intent(intent.client_order_id, LIMITS, buying_power=Decimal(5500)) == [
        "the order is worth 6000.0000, over the cap of 5000.0000 an order",
        "the buy is worth 6000.0000, over the broker's buying power of 5500.0000",
    ]


# --- halts ------------------------------------------------------------------------------


def test_a_halt_stops_every_order_until_resumed_and_each_change_is_kept(
    book: BrokerBook,
) -> None:
    intent = book.record_intent("live", _spec(), broker=ALPACA)
    assert book.halted("live") is None

    halt = book.halt("live", "drift in QBTX", "ops")
    broken = book.check_intent(intent.client_order_id, LIMITS, buying_power=Decimal(9000))
    resumed = book.resume("live", "lead")

    assert book.halted("live") is None
    assert broken == [
        f"the book is halted since {halt.at:%Y-%m-%d %H:%M} UTC by ops: drift in QBTX"
    ]
    assert book.halts("live") == [halt, resumed]
    assert (resumed.halted, resumed.who) == (False, "lead")
    assert book.check_intent(intent.client_order_id, LIMITS, buying_power=Decimal(9000)) == []


def test_a_halt_says_why_and_who(book: BrokerBook) -> None:
    with pytest.raises(InvalidInput, match="`reason`: empty"):
        book.halt("live", " ", "ops")
    with pytest.raises(InvalidInput, match="`who`: empty"):
        book.resume("live", "")
    assert book.halts("live") == []


# --- adopting the broker's numbers ------------------------------------------------------


def test_adopting_the_brokers_numbers_sets_the_book_and_keeps_both_sides(
    book: BrokerBook,
) -> None:
    intent = _submitted(book, _spec(0, qty=10), "b-1")
    book.book_fill("live", _fill(intent, "f-1", 10, "25"))
    at_broker = [
        Position(symbol="QBTX", shares=8, avg_cost=Decimal("25")),
        Position(symbol="ZZZZ", shares=3, avg_cost=Decimal("12.5")),
    ]

    adoption = book.adopt_broker(
        "live", at_broker, Decimal("9700"), as_of=T0, who="ops", reason="a sale we missed"
    )

    assert [(h.symbol, h.shares, h.avg_cost) for h in book.holdings("live")] == [
        ("QBTX", 8, Decimal("25")),
        ("ZZZZ", 3, Decimal("12.5")),
    ]
    assert book.holdings("live")[0].sector is Sector.INFORMATION_TECHNOLOGY
    assert book.get("live").cash == Decimal("9700")
    assert (adoption.cash_before, adoption.cash_after) == (Decimal("9750"), Decimal("9700"))
    assert adoption.positions_before == [Position(symbol="QBTX", shares=10, avg_cost=25)]
    assert adoption.positions_after == at_broker
    assert book.adoptions("live") == [adoption]


def test_adopting_an_empty_account_closes_every_holding(book: BrokerBook) -> None:
    intent = _submitted(book, _spec(), "b-1")
    book.book_fill("live", _fill(intent, "f-1", 10, "25"))

    book.adopt_broker("live", [], Decimal("10000"), as_of=T0, who="ops", reason="reset")

    assert book.holdings("live") == []


def test_a_fill_the_adopted_numbers_include_moves_nothing_when_booked(
    book: BrokerBook,
) -> None:
    intent = _submitted(book, _spec(qty=12), "b-1")
    at_broker = [Position(symbol="QBTX", shares=10, avg_cost=Decimal("25"))]
    adoption = book.adopt_broker(
        "live", at_broker, Decimal("9750"), as_of=T0, who="ops", reason="a fill we missed"
    )

    covered = book.book_fill("live", _fill(intent, "f-1", 10, "25"))
    after = book.book_fill("live", _fill(intent, "f-2", 2, "25", transaction_time=T0 + SECOND))

    assert covered.new and covered.trade is None
    assert (covered.fill.adoption_id, covered.fill.trade_key) == (adoption.id, None)
    assert after.trade is not None and after.fill.adoption_id is None
    assert after.intent.status is IntentStatus.FILLED
    assert book.holdings("live")[0].shares == 12
    assert book.get("live").cash == Decimal("9700")
    assert [t.key for t in book.trades("live")] == ["fill/f-2"]
    assert book.fill_ids("live") == {"f-1", "f-2"}


def test_an_adoption_must_be_explained_and_make_sense(book: BrokerBook) -> None:
    twice = [Position(symbol="QBTX", shares=1, avg_cost=Decimal(1))] * 2
    with pytest.raises(InvalidInput, match="`positions`: a symbol is given twice"):
        book.adopt_broker("live", twice, Decimal(1), as_of=T0, who="ops", reason="r")
    with pytest.raises(InvalidInput, match="`cash`: -1 is below zero"):
        book.adopt_broker("live", [], Decimal(-1), as_of=T0, who="ops", reason="r")
    with pytest.raises(InvalidInput, match="`reason`: empty"):
        book.adopt_broker("live", [], Decimal(1), as_of=T0, who="ops", reason="")
    assert book.adoptions("live") == [] and book.get("live").cash == Decimal(10000)
