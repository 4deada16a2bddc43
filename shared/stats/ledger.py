"""The trials ledger: every evaluation and backtest configuration ever run, in SQL.

A deflated figure is only honest if it counts every configuration tried, the ones that
looked bad included; so each scored evaluation and backtest records its configuration
here (component ``trials``, version 1, in the same database as the books and memory,
``shared.database``). A configuration is its canonical JSON (keys sorted); its SHA-256
is unique per kind, so a re-run of the same configuration updates its row (latest
Sharpe and returns) and counts once. A backtest row also keeps its daily returns and
the dates they fall on, which is what Hansen's SPA test compares across configurations.
"""

from __future__ import annotations

import hashlib
import json
from collections.abc import Sequence
from datetime import UTC, date, datetime
from typing import Any, Literal

from sqlalchemy import (
    JSON,
    Column,
    Engine,
    Float,
    Integer,
    MetaData,
    String,
    Table,
    Text,
    UniqueConstraint,
    func,
    select,
)

from shared.database import SchemaStep, SqlStore, UtcDateTime, ensure_versioned_schema

COMPONENT = "trials"
PG_SCHEMA_LOCK = 0x71647472696C73
"""PostgreSQL advisory lock key held while migrating the ledger ("qdtrils")."""

TrialKind = Literal["evaluation", "backtest"]

metadata = MetaData()

trials = Table(
    "trials",
    metadata,
    Column("id", Integer, primary_key=True, autoincrement=True),
    Column("kind", String(16), nullable=False),
    Column("config_key", String(64), nullable=False, comment="SHA-256 of the canonical JSON"),
    Column("config", Text, nullable=False, comment="the configuration, canonical JSON"),
    Column("label", String(200), nullable=False),
    Column("first_run_at", UtcDateTime, nullable=False),
    Column("last_run_at", UtcDateTime, nullable=False),
    Column("sharpe", Float, nullable=True, comment="per-period Sharpe of the latest run"),
    Column("dates_key", String(64), nullable=True, comment="symbol and dates of the returns"),
    Column("returns", JSON, nullable=True, comment="the latest run's per-period returns"),
    UniqueConstraint("kind", "config_key", name="uq_trials_kind_config"),
)

STEPS = (SchemaStep(tables=(trials,)),)
"""Step ``n`` brings the ledger to version ``n``: append a step with every change."""


def ensure_schema(engine: Engine) -> None:
    """Bring the ledger's table to this version (creating it in a fresh database)."""
    ensure_versioned_schema(engine, component=COMPONENT, steps=STEPS, lock_key=PG_SCHEMA_LOCK)


def canonical(config: dict[str, Any]) -> str:
    """The configuration as JSON with sorted keys: equal configurations, equal text."""
    return json.dumps(config, sort_keys=True, separators=(",", ":"), default=str)


def dates_key(symbol: str, dates: Sequence[date]) -> str:
    """What two backtests must share for their returns to be compared day by day."""
    text = symbol.upper() + ":" + ",".join(day.isoformat() for day in dates)
    return hashlib.sha256(text.encode()).hexdigest()


class TrialsLedger(SqlStore):
    """Every configuration run, one row each, in the configured database."""

    ensure_schema = staticmethod(ensure_schema)

    def record(
        self,
        kind: TrialKind,
        config: dict[str, Any],
        *,
        label: str,
        sharpe: float | None = None,
        dates: str | None = None,
        returns: Sequence[float] | None = None,
    ) -> None:
        """Record a run of ``config``; a configuration run before keeps its one row."""
        text = canonical(config)
        now = datetime.now(UTC)
        values = {
            "last_run_at": now,
            "sharpe": sharpe,
            "dates_key": dates,
            "returns": list(returns) if returns is not None else None,
        }
        statement = self._insert(trials).values(
            kind=kind,
            config_key=hashlib.sha256(text.encode()).hexdigest(),
            config=text,
            label=label[:200],
            first_run_at=now,
            **values,
        )
        with self._engine.begin() as conn:
            conn.execute(
                statement.on_conflict_do_update(index_elements=["kind", "config_key"], set_=values)
            )

    def count(self, kind: TrialKind) -> int:
        """Configurations of ``kind`` ever run (each once, however often it ran)."""
        query = select(func.count()).select_from(trials).where(trials.c.kind == kind)
        with self._engine.connect() as conn:
            return int(conn.execute(query).scalar_one())

    def sharpes(self, kind: TrialKind) -> list[float]:
        """The latest per-period Sharpe of every configuration of ``kind`` that has one."""
        query = (
            select(trials.c.sharpe)
            .where(trials.c.kind == kind, trials.c.sharpe.is_not(None))
            .order_by(trials.c.id)
        )
        with self._engine.connect() as conn:
            return [float(value) for value in conn.execute(query).scalars()]

    def returns_on(self, kind: TrialKind, dates: str) -> list[list[float]]:
        """The returns of every configuration of ``kind`` measured on the same ``dates``."""
        query = (
            select(trials.c.returns)
            .where(trials.c.kind == kind, trials.c.dates_key == dates)
            .order_by(trials.c.id)
        )
        with self._engine.connect() as conn:
            return [list(values) for values in conn.execute(query).scalars() if values]
