"""The SQL database quantdesk keeps its memories and books in: engines, types, versions.

One URL (``QUANTDESK_DATABASE_URL``; a SQLite file in the data directory by
default, or PostgreSQL) serves every component. Each component's tables carry a
version in the shared ``schema_versions`` table (one row per component), so a
process never writes with a layout it does not know. A component lists its
schema steps in order, step ``n`` bringing its tables to version ``n``;
``ensure_versioned_schema`` applies the steps a database lacks (all of them to an
empty one), accepts its own version and refuses a newer one, or tables nobody
versioned. The steps and the new version row go in one transaction, after the
version is read again under a lock (PostgreSQL's advisory lock; SQLite's write
lock, taken by the first write), so workers starting together all agree and a
database is never left half-migrated.
"""

from __future__ import annotations

import sqlite3
import time
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from datetime import UTC, datetime
from pathlib import Path
from typing import Any, Self, TypeVar

from pydantic import BaseModel
from sqlalchemy import (
    CheckConstraint,
    Column,
    Connection,
    DateTime,
    Dialect,
    Engine,
    Integer,
    MetaData,
    Row,
    String,
    Table,
    create_engine,
    event,
    func,
    inspect,
    select,
    text,
    update,
)
from sqlalchemy.dialects import postgresql, sqlite
from sqlalchemy.engine import URL, make_url
from sqlalchemy.exc import ArgumentError
from sqlalchemy.pool import StaticPool
from sqlalchemy.schema import CreateIndex, CreateTable
from sqlalchemy.types import TypeDecorator

from shared.config import ENV_PREFIX, Settings
from shared.errors import ConfigError
from shared.extras import install_command

DATABASE_SETTING = f"{ENV_PREFIX}DATABASE_URL"

# Each dialect's INSERT that supports ON CONFLICT DO NOTHING; the only databases supported.
INSERTS: dict[str, Callable[[Table], sqlite.Insert | postgresql.Insert]] = {
    "sqlite": sqlite.insert,
    "postgresql": postgresql.insert,
}


class SchemaVersionError(ConfigError):
    """The database holds a component's tables at a version this code does not know."""

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


@dataclass(frozen=True)
class SchemaStep:
    """What brings a component's tables to its next version: the tables it adds (in
    creation order) and the columns it adds to tables an earlier step made.

    Steps only add, and each addition is skipped where it is there already, so the steps
    applied in order bring an empty database, or one at any earlier version, to the tables
    as the code defines them now. (A step that must change or drop something will need SQL
    of its own.)"""

    tables: tuple[Table, ...] = ()
    columns: tuple[Column[Any], ...] = ()

    def __post_init__(self) -> None:
        for column in self.columns:
            if not column.nullable and column.server_default is None:
                raise ValueError(
                    f"{column.table.name}.{column.name} is NOT NULL: give it a server_default "
                    "for the rows already there"
                )


def ensure_versioned_schema(
    engine: Engine, *, component: str, steps: Sequence[SchemaStep], lock_key: int
) -> None:
    """Bring ``component``'s tables to version ``len(steps)`` by the steps the database
    lacks; refuse a newer version, or the component's tables with no version recorded.
    ``lock_key``: the component's advisory lock on PostgreSQL."""
    version = len(steps)
    with engine.connect() as conn:
        if _stored_version(conn, component) == version:
            return  # up to date: no lock, no write
    where = engine.url.render_as_string(hide_password=True)
    first = steps[0].tables[0].name
    insert = INSERTS[engine.dialect.name]
    with engine.begin() as conn:
        if conn.dialect.name == "postgresql":
            # Concurrent CREATE ... IF NOT EXISTS can still collide in PostgreSQL's catalog.
            conn.execute(select(func.pg_advisory_xact_lock(lock_key)))
        conn.execute(CreateTable(schema_versions, if_not_exists=True))
        # The first write: on SQLite it takes the write lock, so the version read next is the
        # one this transaction migrates from, whoever else is starting.
        conn.execute(
            insert(schema_versions)
            .values(component=component, version=0)
            .on_conflict_do_nothing(index_elements=["component"])
        )
        found = _stored_version(conn, component) or 0
        if found == 0 and inspect(conn).has_table(first):
            raise SchemaVersionError(where, f"found a `{first}` table with no recorded version")
        if found > version:
            raise SchemaVersionError(
                where,
                f"{component} schema version {found} is newer than this quantdesk "
                f"(knows {version})",
            )
        for step in steps[found:]:
            _apply(conn, step)
        conn.execute(
            update(schema_versions)
            .where(schema_versions.c.component == component)
            .values(version=version)
        )


def _apply(conn: Connection, step: SchemaStep) -> None:
    """Add the step's tables (and their indexes) and columns that are not there yet."""
    for table in step.tables:
        conn.execute(CreateTable(table, if_not_exists=True))
        for index in table.indexes:
            conn.execute(CreateIndex(index, if_not_exists=True))
    for column in step.columns:
        present = {found["name"] for found in inspect(conn).get_columns(column.table.name)}
        if column.name not in present:
            conn.execute(text(_add_column(column, conn.dialect)))


def _add_column(column: Column[Any], dialect: Dialect) -> str:
    """``ALTER TABLE ... ADD COLUMN`` with the column's type, default, nullability and checks,
    as the table's ``CREATE TABLE`` would give them, so a migrated table is a created one."""
    compiler = dialect.ddl_compiler(dialect, CreateTable(column.table))
    checks = [
        compiler.process(constraint)
        for constraint in column.table.constraints
        if isinstance(constraint, CheckConstraint) and constraint.columns.contains_column(column)
    ]
    table = compiler.preparer.format_table(column.table)
    spec = " ".join([compiler.get_column_specification(column), *checks])
    return f"ALTER TABLE {table} ADD COLUMN {spec}"


def _stored_version(conn: Connection, component: str) -> int | None:
    """The component's schema version recorded in the database, or None if there is none."""
    if not inspect(conn).has_table(schema_versions.name):
        return None
    query = select(schema_versions.c.version).where(schema_versions.c.component == component)
    return conn.execute(query).scalar_one_or_none()


def engine_for(url: str) -> Engine:
    """An engine for a SQLite (file or ``sqlite://`` in memory) or PostgreSQL URL."""
    try:
        parsed = make_url(url)
    except ArgumentError as error:
        raise ConfigError(DATABASE_SETTING, f"not a database URL ({error})") from None
    backend = parsed.get_backend_name()
    if backend not in INSERTS:
        raise ConfigError(
            DATABASE_SETTING,
            f"quantdesk supports {' and '.join(INSERTS)}, not {backend}",
            fix="Use sqlite:///path/to/file.db or postgresql+psycopg://user:pass@host/db.",
        )
    options: dict[str, Any] = {}
    if backend == "sqlite":
        options.update(_sqlite_options(parsed))
    else:
        # Long-lived workers outlive database restarts: test a pooled connection before use.
        options["pool_pre_ping"] = True
    try:
        engine = create_engine(parsed, **options)
    except ModuleNotFoundError as error:
        raise ConfigError(
            DATABASE_SETTING,
            f"the driver for {parsed.drivername} is not installed ({error.name})",
            fix=f"Install it with `{install_command('postgres')}` for postgresql+psycopg URLs.",
        ) from None
    if backend == "sqlite" and parsed.database not in (None, "", ":memory:"):
        event.listen(engine, "connect", _write_ahead)
    return engine


WAL_SWITCH_PATIENCE = 10.0
"""Seconds a new connection keeps asking to switch a file to write-ahead mode."""


def _write_ahead(connection: Any, _record: object) -> None:
    """A SQLite file in write-ahead mode, synced at checkpoints: a commit is an append, not
    the rollback journal's three fsyncs. Every model call commits twice in the spending
    ledger; under a 100-name desk the journal's commits held the worker's threads for a
    twelfth of its run (py-spy, issue 39). A commit survives the process crashing; only a
    power cut can lose the last ones. Readers (the console) no longer wait behind a writer.

    The mode is kept in the file, so it is switched once; switching needs the file to itself,
    which a connection opened while another writes (stores migrating one database at once)
    does not get at once: SQLite says "locked" without waiting, so it is asked again."""
    cursor = connection.cursor()
    deadline = time.monotonic() + WAL_SWITCH_PATIENCE
    while cursor.execute("PRAGMA journal_mode").fetchone()[0].lower() != "wal":
        try:
            cursor.execute("PRAGMA journal_mode=WAL")
        except sqlite3.OperationalError as error:
            if "locked" not in str(error) or time.monotonic() > deadline:
                raise
            time.sleep(0.05)
    cursor.execute("PRAGMA synchronous=NORMAL")
    cursor.close()


def _sqlite_options(url: URL) -> dict[str, Any]:
    """In memory: one shared connection, or each would see its own empty database.

    On disk: create the file's folder, as `quantdesk up` would on first start."""
    if url.database in (None, "", ":memory:"):
        return {"poolclass": StaticPool, "connect_args": {"check_same_thread": False}}
    Path(url.database).expanduser().parent.mkdir(parents=True, exist_ok=True)
    return {}


def row_values(table: Table, record: object, **given: Any) -> dict[str, Any]:
    """The values of ``record``'s row in ``table``: each column (but the generated key) from
    ``given`` where it is named or stored otherwise, else from the record's field or property
    of the same name; a column the record lacks is left to its default."""
    return {
        column.name: given[column.name] if column.name in given else getattr(record, column.name)
        for column in table.columns
        if not column.primary_key and (column.name in given or hasattr(record, column.name))
    }


R = TypeVar("R", bound=BaseModel)


def record_of(model: type[R], row: Row[Any], **given: Any) -> R:
    """The ``model`` of a row (``row_values`` the other way): each field from its column of
    the same name, or from ``given`` where the column is named or stored otherwise."""
    columns = row._mapping
    return model.model_validate(
        {name: given[name] if name in given else columns[name] for name in model.model_fields}
    )


class SqlStore:
    """A store over one database URL, its component's schema ensured when it opens.

    Subclasses name their ``ensure_schema``; one store is safe to share between
    threads (SQLAlchemy's pool hands each its own connection).
    """

    ensure_schema: staticmethod[[Engine], None]

    def __init__(self, url: str) -> None:
        self._engine: Engine = engine_for(url)
        try:
            self.ensure_schema(self._engine)
        except BaseException:
            self._engine.dispose()
            raise
        self._insert = INSERTS[self._engine.dialect.name]

    @classmethod
    def from_settings(cls, settings: Settings) -> Self:
        """The store in the configured database (a SQLite file in the data directory by default)."""
        return cls(settings.resolved_database_url)

    def close(self) -> None:
        """Release the connection pool."""
        self._engine.dispose()
