"""The book's tables, in SQLAlchemy Core, versioned like every component's
(``shared.database``, component ``portfolio``): a book, its holdings, trades,
snapshots and decisions (version 1), its orders at a broker (version 2), and the named
watchlists an AutoRun may analyse (version 3).

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
    Boolean,
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

from shared.broker.models import (
    BROKER_ID_MAX_LENGTH,
    CLIENT_ORDER_ID_MAX_LENGTH,
    IntentStatus,
    OrderType,
    TimeInForce,
)
from shared.data.contracts import Sector
from shared.database import SchemaStep, UtcDateTime, ensure_versioned_schema
from shared.portfolio.models import (
    KEY_MAX_LENGTH,
    MONEY_PLACES,
    PRICE_PLACES,
    BrokerKind,
    DecisionStatus,
    Side,
)

COMPONENT = "portfolio"
PG_SCHEMA_LOCK = 0x7164626F6F6B
"""PostgreSQL advisory lock key held while migrating the tables (any fixed number; "qdbook")."""
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
    # Version 2: books made before it traded on paper.
    Column(
        "broker",
        _enum(BrokerKind, "broker_kind"),
        nullable=False,
        server_default=BrokerKind.PAPER.value,
    ),
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

adoptions = _of_book(
    "adoptions",
    Column("as_of", UtcDateTime, nullable=False),
    Column("who", Text, nullable=False),
    Column("reason", Text, nullable=False),
    Column("cash_before", _money(), nullable=False),
    Column("cash_after", _money(), nullable=False),
    Column("positions_before", Text, nullable=False),
    Column("positions_after", Text, nullable=False),
    Column("created_at", UtcDateTime, nullable=False),
)
Index("ix_adoptions_portfolio_as_of", adoptions.c.portfolio_id, adoptions.c.as_of)


def _broker_id(name: str, **options: Any) -> Column[str]:
    return Column(name, String(BROKER_ID_MAX_LENGTH), **options)


order_intents = _of_book(
    "order_intents",
    Column("client_order_id", String(CLIENT_ORDER_ID_MAX_LENGTH), nullable=False, unique=True),
    Column("workflow_id", Text, nullable=False),
    Column("order_index", Integer, nullable=False),
    Column("symbol", String(32), nullable=False),
    Column("side", _enum(Side, "intent_side"), nullable=False),
    Column("qty", BigInteger, nullable=False),
    Column("order_type", _enum(OrderType, "intent_order_type"), nullable=False),
    Column("limit_price", _price(), nullable=True),
    Column("time_in_force", _enum(TimeInForce, "intent_time_in_force"), nullable=False),
    Column("reference_price", _price(), nullable=False),
    Column("sector", _enum(Sector, "intent_sector"), nullable=True),
    Column("rationale", Text, nullable=False),
    Column("status", _enum(IntentStatus, "intent_status"), nullable=False),
    _broker_id("broker_order_id", nullable=True, unique=True),
    Column("filled_qty", BigInteger, nullable=False),
    Column("avg_fill_price", _price(), nullable=True),
    Column("reason", Text, nullable=True),
    Column("created_at", UtcDateTime, nullable=False),
    Column("updated_at", UtcDateTime, nullable=False),
)
Index(
    "ix_order_intents_portfolio_created", order_intents.c.portfolio_id, order_intents.c.created_at
)

broker_fills = _of_book(
    "broker_fills",
    _broker_id("fill_id", nullable=False, unique=True),
    Column("intent_id", Integer, ForeignKey("order_intents.id"), nullable=False),
    _broker_id("broker_order_id", nullable=True),
    Column("symbol", String(32), nullable=False),
    Column("side", _enum(Side, "fill_side"), nullable=False),
    Column("qty", BigInteger, nullable=False),
    Column("price", _price(), nullable=False),
    Column("fees", _money(), nullable=False),
    Column("transaction_time", UtcDateTime, nullable=False),
    Column("trade_key", String(KEY_MAX_LENGTH), nullable=True),
    Column("adoption_id", Integer, ForeignKey("adoptions.id"), nullable=True),
    Column("created_at", UtcDateTime, nullable=False),
)
Index(
    "ix_broker_fills_portfolio_time", broker_fills.c.portfolio_id, broker_fills.c.transaction_time
)

broker_halts = _of_book(
    "broker_halts",
    Column("halted", Boolean, nullable=False),
    Column("reason", Text, nullable=False),
    Column("who", Text, nullable=False),
    Column("at", UtcDateTime, nullable=False),
)
Index("ix_broker_halts_portfolio_id", broker_halts.c.portfolio_id, broker_halts.c.id)

watchlists = Table(
    "watchlists",
    metadata,
    Column("id", Integer, primary_key=True, autoincrement=True),
    Column("name", String(64), nullable=False, unique=True),
    Column("created_at", UtcDateTime, nullable=False),
    Column("updated_at", UtcDateTime, nullable=False),
)

watchlist_symbols = Table(
    "watchlist_symbols",
    metadata,
    Column("id", Integer, primary_key=True, autoincrement=True),
    Column("watchlist_id", Integer, ForeignKey("watchlists.id"), nullable=False),
    # The order symbols were added in: a watchlist's candidates keep it, run after run.
    Column("position", Integer, nullable=False),
    Column("symbol", String(32), nullable=False),
    UniqueConstraint("watchlist_id", "symbol", name="uq_watchlist_symbols_symbol"),
)

STEPS = (
    SchemaStep(tables=(portfolios, holdings, trades, snapshots, decisions)),
    SchemaStep(
        tables=(adoptions, order_intents, broker_fills, broker_halts),
        columns=(portfolios.c.broker,),
    ),
    SchemaStep(tables=(watchlists, watchlist_symbols)),
)
"""Step ``n`` brings the tables to version ``n``, each table after those its foreign keys
name: append a step with every change to the tables above."""
SCHEMA_VERSION = len(STEPS)


def ensure_schema(engine: Engine) -> None:
    """Bring the book's tables to this version (creating them in a fresh database)."""
    ensure_versioned_schema(engine, component=COMPONENT, steps=STEPS, lock_key=PG_SCHEMA_LOCK)
