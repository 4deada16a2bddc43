"""The book in SQL: exact money, one transaction per trade, each key booked once; SQLite and
PostgreSQL alike (on the session's throwaway server)."""

from __future__ import annotations

import sqlite3
from concurrent.futures import ThreadPoolExecutor
from datetime import UTC, datetime, timedelta
from decimal import Decimal
from pathlib import Path
from typing import Any

import pytest
from sqlalchemy import create_engine, update

from shared.data.contracts import Sector
from shared.database import SchemaVersionError, schema_versions
from shared.errors import InvalidInput
from shared.portfolio.models import (
    BrokerKind,
    DecisionRecord,
    DecisionStatus,
    Side,
    Snapshot,
    SnapshotPosition,
    TradeRequest,
)
from shared.portfolio.schema import COMPONENT, SCHEMA_VERSION, trades
from shared.portfolio.store import PortfolioStore, TradeRefused
from tests.servers import count_rows

AS_OF = datetime(2012, 6, 1, tzinfo=UTC)


@pytest.fixture
def store(database_url: str) -> PortfolioStore:
    book = PortfolioStore(database_url)
    book.create("demo", Decimal("100000"))
    return book


def _order(key: str, side: Side = Side.BUY, shares: int = 10, **fields: Any) -> TradeRequest:
    values: dict[str, Any] = {
        "key": key,
        "symbol": "QBTX",
        "side": side,
        "shares": shares,
        "price": Decimal("25.125"),
        "fees": Decimal("0.0251"),
        "executed_at": AS_OF,
        "sector": Sector.INFORMATION_TECHNOLOGY,
        "rationale": "test",
        "source": "wf-1",
    }
    return TradeRequest(**(values | fields))


def test_a_new_book_holds_its_cash_exactly(store: PortfolioStore) -> None:
    book = store.get("demo")
    assert book.cash == book.initial_cash == Decimal("100000.0000")
    assert [b.name for b in store.portfolios()] == ["demo"]
    assert store.holdings("demo") == []


def test_a_taken_name_and_an_unknown_one_are_refused_with_the_fix(store: PortfolioStore) -> None:
    with pytest.raises(InvalidInput, match="exists"):
        store.create("demo", 5)
    with pytest.raises(InvalidInput, match=r"no portfolio called 'nope' \(there are: demo\)"):
        store.get("nope")
    with pytest.raises(InvalidInput, match="`cash`"):
        store.create("other", -1)


def test_a_book_is_bound_to_its_broker_and_opened_only_with_it(store: PortfolioStore) -> None:
    live = store.create("live", 1000, broker=BrokerKind.ALPACA)

    assert store.get("demo").broker is BrokerKind.PAPER
    assert store.open("live", 5, broker=BrokerKind.ALPACA) == (live, False)
    with pytest.raises(
        InvalidInput, match=r"`broker`: portfolio 'live' trades at the alpaca broker, not paper"
    ):
        store.open("live", 5)
    opened, created = store.open("new", 7, broker=BrokerKind.ALPACA)
    assert created and (opened.cash, opened.broker) == (Decimal(7), BrokerKind.ALPACA)


def test_a_book_at_a_real_broker_takes_no_paper_fills(store: PortfolioStore) -> None:
    store.create("live", 1000, broker=BrokerKind.ALPACA)

    with pytest.raises(InvalidInput, match="alpaca broker, not paper"):
        store.execute_trade("live", _order("k"))
    assert store.trades("live") == []


def test_a_buy_and_a_sell_move_cash_shares_and_cost_basis_to_the_cent(
    store: PortfolioStore,
) -> None:
    store.execute_trade("demo", _order("k1", shares=10))
    store.execute_trade("demo", _order("k2", shares=30, price=Decimal("27")))
    sold = store.execute_trade("demo", _order("k3", Side.SELL, 15, price=Decimal("30")))

    [held] = store.holdings("demo")
    # Cost: 10 x 25.125 + 0.0251 + 30 x 27 + 0.0251 = 1061.3002 for 40 shares.
    assert held.avg_cost == Decimal("26.532505")
    assert held.shares == 25 and held.sector is Sector.INFORMATION_TECHNOLOGY
    # 450 - 0.0251 - 15 x 26.532505 = 51.987325, to the hundredth of a cent.
    assert sold.trade.realized_pnl == Decimal("51.9873")
    cash = Decimal("100000") - Decimal("251.25") - Decimal("810") + Decimal("450")
    assert store.get("demo").cash == cash - 3 * Decimal("0.0251")


def test_the_same_key_books_one_trade_however_often_it_is_sent(
    store: PortfolioStore, database_url: str
) -> None:
    first = store.execute_trade("demo", _order("wf-1/order-0"))
    again = store.execute_trade("demo", _order("wf-1/order-0"))

    assert first.new and not again.new
    assert again.trade == first.trade
    assert store.get("demo").cash == Decimal("100000") + first.trade.cash_change
    assert count_rows(database_url, trades) == 1


def test_one_key_for_two_different_trades_is_a_bug_and_refused(store: PortfolioStore) -> None:
    store.execute_trade("demo", _order("k"))
    with pytest.raises(InvalidInput, match="already booked BUY 10 QBTX"):
        store.execute_trade("demo", _order("k", shares=11))


def test_a_trade_the_book_cannot_take_writes_nothing(
    store: PortfolioStore, database_url: str
) -> None:
    with pytest.raises(TradeRefused, match="needs 251250.0251 in cash"):
        store.execute_trade("demo", _order("big", shares=10_000))
    with pytest.raises(TradeRefused, match="holds 0"):
        store.execute_trade("demo", _order("short", Side.SELL))

    assert count_rows(database_url, trades) == 0
    assert store.get("demo").cash == Decimal("100000")
    assert store.holdings("demo") == []
    # The refused keys stay free: the fixed trade can use them.
    assert store.execute_trade("demo", _order("big", shares=100)).new


def test_selling_everything_closes_the_position(store: PortfolioStore) -> None:
    store.execute_trade("demo", _order("b"))
    store.execute_trade("demo", _order("s", Side.SELL))
    assert store.holdings("demo") == []
    assert [t.side for t in store.trades("demo")] == [Side.BUY, Side.SELL]


def test_racing_workers_with_one_key_book_it_once(store: PortfolioStore, database_url: str) -> None:
    others = [PortfolioStore(database_url) for _ in range(4)]
    with ThreadPoolExecutor(4) as pool:
        outcomes = list(pool.map(lambda s: s.execute_trade("demo", _order("race")), others))

    assert sum(outcome.new for outcome in outcomes) == 1
    assert count_rows(database_url, trades) == 1
    assert store.holdings("demo")[0].shares == 10


def test_racing_trades_on_one_book_never_lose_cash(store: PortfolioStore) -> None:
    others = [PortfolioStore(store_url) for store_url in [_url_of(store)] * 4]
    with ThreadPoolExecutor(4) as pool:
        list(pool.map(lambda k: others[k % 4].execute_trade("demo", _order(f"t{k}")), range(12)))

    assert store.holdings("demo")[0].shares == 120
    assert store.get("demo").cash == Decimal("100000") - 12 * Decimal("251.2751")


def _url_of(store: PortfolioStore) -> str:
    return store._engine.url.render_as_string(hide_password=False)


def test_snapshots_and_decisions_are_written_once_per_key(store: PortfolioStore) -> None:
    position = SnapshotPosition(
        symbol="QBTX",
        shares=10,
        price=Decimal("25"),
        value=Decimal("250"),
        weight=0.0025,
        unrealized_pnl=Decimal("-1.25"),
    )
    snap = Snapshot(
        key="wf-1",
        as_of=AS_OF,
        total_value=Decimal("100000"),
        cash=Decimal("99750"),
        equity=Decimal("250"),
        positions=[position],
    )
    first = store.record_snapshot("demo", snap)
    later = snap.model_copy(update={"total_value": Decimal("1"), "as_of": AS_OF + timedelta(1)})
    assert store.record_snapshot("demo", later) == first
    assert store.snapshots("demo") == [first] and first.positions == [position]

    record = DecisionRecord(
        key="wf-1", as_of=AS_OF, status=DecisionStatus.REJECTED, decision={"buys": ["QBTX"]}
    )
    assert store.record_decision("demo", record).decision == {"buys": ["QBTX"]}
    changed = record.model_copy(update={"status": DecisionStatus.APPROVED})
    assert store.record_decision("demo", changed).status is DecisionStatus.REJECTED
    assert len(store.decisions("demo")) == 1


def test_the_paper_clock_is_the_latest_trade_or_snapshot(store: PortfolioStore) -> None:
    assert store.last_activity("demo") is None
    store.execute_trade("demo", _order("b", executed_at=AS_OF))
    assert store.last_activity("demo") == AS_OF


def test_a_newer_schema_version_is_refused(database_url: str) -> None:
    PortfolioStore(database_url).close()
    engine = create_engine(database_url)
    with engine.begin() as conn:
        conn.execute(
            update(schema_versions)
            .where(schema_versions.c.component == COMPONENT)
            .values(version=SCHEMA_VERSION + 1)
        )
    engine.dispose()

    with pytest.raises(SchemaVersionError, match="newer than"):
        PortfolioStore(database_url)


def test_an_unversioned_portfolios_table_is_refused(tmp_path: Path) -> None:
    path = tmp_path / "book.db"
    with sqlite3.connect(path) as conn:
        conn.execute("CREATE TABLE portfolios (id INTEGER PRIMARY KEY)")

    with pytest.raises(SchemaVersionError, match="no recorded version"):
        PortfolioStore(f"sqlite:///{path}")


def test_memory_and_portfolio_share_one_database(tmp_path: Path) -> None:
    from shared.memory import MemoryStore

    url = f"sqlite:///{tmp_path / 'quantdesk.db'}"
    MemoryStore(url).close()
    PortfolioStore(url).create("demo", 1)
    MemoryStore(url).close()
    assert PortfolioStore(url).get("demo").cash == Decimal(1)
