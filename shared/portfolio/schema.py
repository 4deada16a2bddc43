"""The book's tables, in SQLAlchemy Core, versioned like every component's
(``shared.database``, component ``portfolio``).

Money is exact. PostgreSQL keeps ``NUMERIC``; SQLite has no decimal type (its
NUMERIC affinity rounds through a binary float), so there the same column holds
the decimal's text, which comes back as the very same ``Decimal``. Arithmetic
on money is therefore done in Python, inside each trade's transaction.
"""

from __future__ import annotations

from decimal import Decimal
from typing import Any

from sqlalchemy import (
    BigInteger,
    Column,
    Dialect,
    Engine,
    Enum,
    ForeignKey,
    Index,
    Integer,
    MetaData,
    Numeric,
    String,
    Table,
    Text,
    UniqueConstraint,
)
from sqlalchemy.types import TypeDecorator, TypeEngine

from shared.data.contracts import Sector
from shared.database import UtcDateTime, ensure_versioned_schema
from shared.portfolio.models import (
    KEY_MAX_LENGTH,
    MONEY_PLACES,
    PRICE_PLACES,
    DecisionStatus,
    Side,
)

SCHEMA_VERSION = 1
"""Bump with every change to the tables below; a database at another version is refused."""
COMPONENT = "portfolio"
PG_SCHEMA_LOCK = 0x7164626F6F6B
"""PostgreSQL advisory lock key held while creating the tables (any fixed number; "qdbook")."""
NUMERIC_PRECISION = 28


class ExactDecimal(TypeDecorator[Decimal]):
    """A decimal stored exactly: ``NUMERIC`` on PostgreSQL, the decimal's text on SQLite."""

    impl = Numeric
    cache_ok = True

    def __init__(self, places: Decimal) -> None:
        super().__init__()
        self.places = places

    def load_dialect_impl(self, dialect: Dialect) -> TypeEngine[Any]:
        if dialect.name == "sqlite":
            return dialect.type_descriptor(String(NUMERIC_PRECISION + 2))
        scale = -self.places.as_tuple().exponent  # type: ignore[operator]
        return dialect.type_descriptor(Numeric(NUMERIC_PRECISION, scale, asdecimal=True))

    def process_bind_param(self, value: Decimal | None, dialect: Dialect) -> Any:
        if value is None:
            return None
        exact = Decimal(value).quantize(self.places)
        return str(exact) if dialect.name == "sqlite" else exact

    def process_result_value(self, value: Any, dialect: Dialect) -> Decimal | None:
        return None if value is None else Decimal(str(value)).quantize(self.places)


def _money() -> ExactDecimal:
    return ExactDecimal(MONEY_PLACES)


def _price() -> ExactDecimal:
    return ExactDecimal(PRICE_PLACES)


def _enum(enum: type[Any], name: str) -> Enum:
    """A closed set stored as its values, checked by the database."""
    return Enum(
        enum,
        name=name,
        native_enum=False,
        create_constraint=True,
        values_callable=lambda members: [member.value for member in members],
    )


metadata = MetaData()


def _of_book(name: str, *columns: Column[Any] | UniqueConstraint) -> Table:
    """A table of one book's records: a generated id and the book's id, then ``columns``."""
    return Table(
        name,
        metadata,
        Column("id", Integer, primary_key=True, autoincrement=True),
        Column("portfolio_id", Integer, ForeignKey("portfolios.id"), nullable=False),
        *columns,
    )


def _key(name: str) -> Column[str]:
    """The idempotency key of a record: chosen by the workflow, so a retry finds its row."""
    return Column(name, String(KEY_MAX_LENGTH), nullable=False, unique=True)


portfolios = Table(
    "portfolios",
    metadata,
    Column("id", Integer, primary_key=True, autoincrement=True),
    Column("name", String(64), nullable=False, unique=True),
    Column("currency", String(3), nullable=False),
    Column("initial_cash", _money(), nullable=False),
    Column("cash", _money(), nullable=False),
    Column("created_at", UtcDateTime, nullable=False),
)

holdings = _of_book(
    "holdings",
    Column("symbol", String(32), nullable=False),
    Column("shares", BigInteger, nullable=False),
    Column("avg_cost", _price(), nullable=False),
    Column("sector", _enum(Sector, "holding_sector"), nullable=True),
    Column("opened_at", UtcDateTime, nullable=False),
    Column("updated_at", UtcDateTime, nullable=False),
    UniqueConstraint("portfolio_id", "symbol", name="uq_holdings_portfolio_symbol"),
)

trades = _of_book(
    "trades",
    _key("idempotency_key"),
    Column("symbol", String(32), nullable=False),
    Column("side", _enum(Side, "trade_side"), nullable=False),
    Column("shares", BigInteger, nullable=False),
    Column("price", _price(), nullable=False),
    Column("value", _money(), nullable=False),
    Column("fees", _money(), nullable=False),
    Column("cash_change", _money(), nullable=False),
    Column("realized_pnl", _money(), nullable=True),
    Column("executed_at", UtcDateTime, nullable=False),
    Column("rationale", Text, nullable=False),
    Column("stop_loss", _price(), nullable=True),
    Column("take_profit", _price(), nullable=True),
    Column("source", Text, nullable=False),
    Column("created_at", UtcDateTime, nullable=False),
)
Index("ix_trades_portfolio_id", trades.c.portfolio_id, trades.c.id)

snapshots = _of_book(
    "snapshots",
    _key("snapshot_key"),
    Column("as_of", UtcDateTime, nullable=False),
    Column("total_value", _money(), nullable=False),
    Column("cash", _money(), nullable=False),
    Column("equity", _money(), nullable=False),
    Column("positions", Text, nullable=False),
    Column("created_at", UtcDateTime, nullable=False),
)
Index("ix_snapshots_portfolio_as_of", snapshots.c.portfolio_id, snapshots.c.as_of)

decisions = _of_book(
    "decisions",
    _key("decision_key"),
    Column("as_of", UtcDateTime, nullable=False),
    Column("status", _enum(DecisionStatus, "decision_status"), nullable=False),
    Column("decision", Text, nullable=False),
    Column("created_at", UtcDateTime, nullable=False),
)
Index("ix_decisions_portfolio_id", decisions.c.portfolio_id, decisions.c.id)

TABLES = (portfolios, holdings, trades, snapshots, decisions)
"""In creation order: every foreign key points at an earlier table."""


def ensure_schema(engine: Engine) -> None:
    """Create the book's tables in a fresh database; verify the version of an existing one."""
    ensure_versioned_schema(
        engine, component=COMPONENT, version=SCHEMA_VERSION, tables=TABLES, lock_key=PG_SCHEMA_LOCK
    )
