"""A book's database moves from schema version 1 to the current one (3) in place, on SQLite
and PostgreSQL: the version-1 tables are built from the DDL quantdesk c69a7df wrote
(tests/data/portfolio_v1), then opened by this code."""

from __future__ import annotations

from concurrent.futures import ThreadPoolExecutor
from datetime import UTC, datetime
from decimal import Decimal
from pathlib import Path
from typing import Any

import pytest
from sqlalchemy import Column, Integer, MetaData, String, Table, create_engine, inspect, select

from shared.broker.book import BrokerBook
from shared.broker.models import IntentStatus, OrderSpec
from shared.database import SchemaStep, schema_versions
from shared.errors import InvalidInput
from shared.portfolio.models import BrokerKind, Side
from shared.portfolio.schema import COMPONENT, SCHEMA_VERSION
from shared.portfolio.store import PortfolioStore
from shared.watchlists.store import WatchlistStore
from tests.servers import fresh_database

V1_DDL = Path(__file__).parent / "data" / "portfolio_v1"
T0 = datetime(2024, 1, 2, 15, 0, tzinfo=UTC)

V1_ROWS: dict[str, dict[str, Any]] = {
    "portfolios": {
        "name": "old",
        "currency": "USD",
        "initial_cash": "1000.0000",
        "cash": "748.7249",
        "created_at": T0,
    },
    "holdings": {
        "portfolio_id": 1,
        "symbol": "QBTX",
        "shares": 10,
        "avg_cost": "25.127510",
        "opened_at": T0,
        "updated_at": T0,
    },
    "trades": {
        "portfolio_id": 1,
        "idempotency_key": "wf-1/order-0",
        "symbol": "QBTX",
        "side": "BUY",
        "shares": 10,
        "price": "25.125000",
        "value": "251.2500",
        "fees": "0.0251",
        "cash_change": "-251.2751",
        "executed_at": T0,
        "rationale": "v1",
        "source": "wf-1",
        "created_at": T0,
    },
}
"""One book that bought 10 QBTX at 25.125 (fee 0.0251), as version 1 stored it; money is
given as text, which both SQLite's text columns and PostgreSQL's NUMERIC take exactly."""


def _version_1_database(url: str) -> None:
    """The version-1 tables, holding ``V1_ROWS``."""
    engine = create_engine(url)
    ddl = (V1_DDL / f"{engine.dialect.name}.sql").read_text()
    with engine.begin() as conn:
        for statement in ddl.split(";\n"):
            if statement.strip():
                conn.exec_driver_sql(statement)
        tables = MetaData()
        tables.reflect(conn, only=list(V1_ROWS))
        for name, values in V1_ROWS.items():
            conn.execute(tables.tables[name].insert().values(values))
    engine.dispose()


def _version(url: str) -> int:
    engine = create_engine(url)
    with engine.connect() as conn:
        query = select(schema_versions.c.version).where(schema_versions.c.component == COMPONENT)
        found = conn.execute(query).scalar_one()
    engine.dispose()
    return found


def test_a_version_1_book_opens_as_a_paper_book_with_its_money_intact(database_url: str) -> None:
    _version_1_database(database_url)

    store = PortfolioStore(database_url)

    assert _version(database_url) == SCHEMA_VERSION == 3
    book = store.get("old")
    assert book.broker is BrokerKind.PAPER
    assert (book.cash, book.initial_cash) == (Decimal("748.7249"), Decimal("1000"))
    [held] = store.holdings("old")
    assert (held.shares, held.avg_cost) == (10, Decimal("25.12751"))
    [trade] = store.trades("old")
    assert (trade.key, trade.cash_change) == ("wf-1/order-0", Decimal("-251.2751"))
    with pytest.raises(InvalidInput, match="trades at the paper broker, not alpaca"):
        store.get("old", broker=BrokerKind.ALPACA)


def test_a_migrated_database_takes_orders_at_a_broker(database_url: str) -> None:
    _version_1_database(database_url)
    store = BrokerBook(database_url)
    store.create("live", 5000, broker=BrokerKind.ALPACA)

    spec = OrderSpec(
        workflow_id="wf-2",
        order_index=0,
        symbol="QBTX",
        side=Side.BUY,
        qty=1,
        reference_price=Decimal("25"),
    )
    intent = store.record_intent("live", spec, broker=BrokerKind.ALPACA)

    assert intent.status is IntentStatus.PENDING
    assert store.halted("live") is None and store.adoptions("live") == []


def test_a_migrated_database_keeps_watchlists(database_url: str) -> None:
    _version_1_database(database_url)
    lists = WatchlistStore(database_url)

    lists.create("tech", ["QBTX", "LMNW"])

    assert lists.get("tech").symbols == ["QBTX", "LMNW"]
    assert [book.name for book in PortfolioStore(database_url).portfolios()] == ["old"]


def test_a_migrated_database_has_the_tables_a_fresh_one_has(
    database_url: str, tmp_path: Path
) -> None:
    _version_1_database(database_url)
    PortfolioStore(database_url).close()
    if database_url.startswith("sqlite"):
        fresh = f"sqlite:///{tmp_path / 'fresh.db'}"
    else:
        fresh = fresh_database(database_url.rsplit("/", 1)[0])
    PortfolioStore(fresh).close()

    assert _layout(database_url) == _layout(fresh)


def _layout(url: str) -> dict[str, Any]:
    """Every table's columns, keys, indexes and checks, as the database reports them."""
    engine = create_engine(url)
    with engine.connect() as conn:
        seen = inspect(conn)
        layout = {
            table: (
                [
                    (c["name"], str(c["type"]), c["nullable"], c.get("default"))
                    for c in seen.get_columns(table)
                ],
                seen.get_pk_constraint(table)["constrained_columns"],
                sorted(
                    (f["referred_table"], f["constrained_columns"])
                    for f in seen.get_foreign_keys(table)
                ),
                sorted(
                    (i["name"], i["column_names"], i["unique"]) for i in seen.get_indexes(table)
                ),
                sorted(u["column_names"] for u in seen.get_unique_constraints(table)),
                sorted((c["name"], c["sqltext"]) for c in seen.get_check_constraints(table)),
            )
            for table in seen.get_table_names()
        }
    engine.dispose()
    return layout


def test_stores_opening_a_version_1_database_together_migrate_it_once(
    database_url: str,
) -> None:
    _version_1_database(database_url)

    with ThreadPoolExecutor(4) as pool:
        stores = list(pool.map(lambda _: PortfolioStore(database_url), range(4)))

    assert _version(database_url) == SCHEMA_VERSION
    assert [book.broker for book in stores[0].portfolios()] == [BrokerKind.PAPER]


def test_a_step_adding_a_required_column_needs_a_default_for_the_rows_there() -> None:
    table = Table("t", MetaData(), Column("id", Integer, primary_key=True))
    table.append_column(Column("kind", String(8), nullable=False))

    with pytest.raises(ValueError, match="t.kind is NOT NULL: give it a server_default"):
        SchemaStep(columns=(table.c.kind,))
