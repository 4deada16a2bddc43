"""The memory tables, in SQLAlchemy Core, and the version they are at.

Versioned and created like every component's (``shared.database``): a process
never writes with a layout it does not know, and workers starting together on a
fresh database all agree.
"""

from __future__ import annotations

from sqlalchemy import (
    Column,
    Engine,
    Enum,
    Float,
    Index,
    Integer,
    String,
    Table,
    Text,
    UniqueConstraint,
)

from shared.database import SchemaStep, UtcDateTime, ensure_versioned_schema, metadata
from shared.memory.models import SYMBOL_MAX_LENGTH, MemoryRole

# This component's row in the shared version table.
COMPONENT = "memory"
# PostgreSQL advisory lock key held while creating the tables (any fixed number; "qdmemory").
PG_SCHEMA_LOCK = 0x71646D656D6F7279

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


STEPS = (SchemaStep(tables=(memories,)),)
"""Step ``n`` brings the tables to version ``n``: append one with every change to them."""
SCHEMA_VERSION = len(STEPS)


def ensure_schema(engine: Engine) -> None:
    """Bring the memory table to this version (creating it in a fresh database)."""
    ensure_versioned_schema(engine, component=COMPONENT, steps=STEPS, lock_key=PG_SCHEMA_LOCK)
