"""The memory tables, in SQLAlchemy Core, and the version they are at.

The schema's version lives in the database (``schema_versions``, one row per
component) so that a process never writes with a layout it does not know:
``ensure_schema`` creates the tables in an empty database, accepts its own
version, and refuses any other one, or a ``memories`` table nobody versioned.
Every step is idempotent (``IF NOT EXISTS``, ``ON CONFLICT DO NOTHING``) and
runs in one transaction (under an advisory lock on PostgreSQL), so workers that
start together on a fresh database all end up agreeing.
"""

from __future__ import annotations

from collections.abc import Callable
from datetime import UTC, datetime

from sqlalchemy import (
    Column,
    Connection,
    DateTime,
    Dialect,
    Engine,
    Enum,
    Float,
    Index,
    Integer,
    MetaData,
    String,
    Table,
    Text,
    UniqueConstraint,
    func,
    inspect,
    select,
)
from sqlalchemy.dialects import postgresql, sqlite
from sqlalchemy.schema import CreateIndex, CreateTable
from sqlalchemy.types import TypeDecorator

from shared.config import ENV_PREFIX
from shared.errors import ConfigError
from shared.memory.models import SYMBOL_MAX_LENGTH, MemoryRole

# Bump with every change to the tables below; a database at another version is refused.
SCHEMA_VERSION = 1
# This component's row in the shared version table.
COMPONENT = "memory"
DATABASE_SETTING = f"{ENV_PREFIX}DATABASE_URL"
# PostgreSQL advisory lock key held while creating the tables (any fixed number; "qdmemory").
PG_SCHEMA_LOCK = 0x71646D656D6F7279

# Each dialect's INSERT that supports ON CONFLICT DO NOTHING; the only databases supported.
INSERTS: dict[str, Callable[[Table], sqlite.Insert | postgresql.Insert]] = {
    "sqlite": sqlite.insert,
    "postgresql": postgresql.insert,
}


class SchemaVersionError(ConfigError):
    """The database holds memory tables of a version this code does not know."""

    def __init__(self, where: str, problem: str) -> None:
        super().__init__(
            DATABASE_SETTING,
            f"{problem} in {where}",
            fix=(
                f"Upgrade quantdesk to a release that knows it, or point {DATABASE_SETTING} "
                "at another database."
            ),
        )


class UtcDateTime(TypeDecorator[datetime]):
    """A timezone-aware UTC datetime on every backend.

    PostgreSQL keeps ``timestamptz``; SQLite has no time zones, so values are
    stored as naive UTC text of fixed width, which sorts and compares in time order.
    """

    impl = DateTime(timezone=True)
    cache_ok = True

    def process_bind_param(self, value: datetime | None, dialect: Dialect) -> datetime | None:
        if value is None:
            return None
        if value.tzinfo is None:
            raise ValueError(f"naive datetime {value.isoformat()}: give a time zone")
        utc = value.astimezone(UTC)
        return utc.replace(tzinfo=None) if dialect.name == "sqlite" else utc

    def process_result_value(self, value: datetime | None, dialect: Dialect) -> datetime | None:
        if value is None:
            return None
        return value.replace(tzinfo=UTC) if value.tzinfo is None else value.astimezone(UTC)


metadata = MetaData()

schema_versions = Table(
    "schema_versions",
    metadata,
    Column("component", String(64), primary_key=True),
    Column("version", Integer, nullable=False),
)

memories = Table(
    "memories",
    metadata,
    Column("id", Integer, primary_key=True, autoincrement=True),
    Column(
        "role",
        Enum(
            MemoryRole,
            name="memory_role",
            native_enum=False,
            create_constraint=True,
            values_callable=lambda roles: [role.value for role in roles],
        ),
        nullable=False,
    ),
    Column("symbol", String(SYMBOL_MAX_LENGTH), nullable=False),
    Column("as_of", UtcDateTime, nullable=False),
    Column("learned_at", UtcDateTime, nullable=False),
    Column("situation", Text, nullable=False),
    Column("decision", Text, nullable=False),
    Column("realised_return", Float, nullable=False),
    Column("alpha", Float, nullable=False),
    Column("horizon_days", Integer, nullable=False),
    Column("lesson", Text, nullable=False),
    Column("source_workflow_id", Text, nullable=False),
    Column("source_run_id", Text, nullable=False),
    Column("created_at", UtcDateTime, nullable=False),
    UniqueConstraint("source_workflow_id", "source_run_id", "role", name="uq_memories_source_role"),
)
# Recall reads one role's rows in id order.
Index("ix_memories_role_id", memories.c.role, memories.c.id)


def ensure_schema(engine: Engine) -> None:
    """Create the tables in a fresh database; verify the version of an existing one."""
    where = engine.url.render_as_string(hide_password=True)
    with engine.connect() as conn:
        # Tables before version: both are committed together, so a visible `memories`
        # table means its version row is visible too.
        has_memories = inspect(conn).has_table(memories.name)
        found = _stored_version(conn)
    if found is None and has_memories:
        raise SchemaVersionError(where, "found a `memories` table with no recorded version")
    if found is not None and found != SCHEMA_VERSION:
        raise SchemaVersionError(where, _mismatch(found))
    insert = INSERTS[engine.dialect.name]
    with engine.begin() as conn:
        if conn.dialect.name == "postgresql":
            # Concurrent CREATE ... IF NOT EXISTS can still collide in PostgreSQL's catalog.
            conn.execute(select(func.pg_advisory_xact_lock(PG_SCHEMA_LOCK)))
        conn.execute(CreateTable(schema_versions, if_not_exists=True))
        conn.execute(
            insert(schema_versions)
            .values(component=COMPONENT, version=SCHEMA_VERSION)
            .on_conflict_do_nothing(index_elements=["component"])
        )
        conn.execute(CreateTable(memories, if_not_exists=True))
        for index in memories.indexes:
            conn.execute(CreateIndex(index, if_not_exists=True))
    with engine.connect() as conn:
        found = _stored_version(conn)
    if found != SCHEMA_VERSION:
        raise SchemaVersionError(where, _mismatch(found))


def _stored_version(conn: Connection) -> int | None:
    """The memory schema version recorded in the database, or None if there is none."""
    if not inspect(conn).has_table(schema_versions.name):
        return None
    query = select(schema_versions.c.version).where(schema_versions.c.component == COMPONENT)
    return conn.execute(query).scalar_one_or_none()


def _mismatch(found: int | None) -> str:
    if found is None:
        return "no memory schema version recorded"
    relation = "newer than" if found > SCHEMA_VERSION else "unknown to"
    return f"memory schema version {found} is {relation} this quantdesk (knows {SCHEMA_VERSION})"
