"""Which notices went where: each (run, event, URL) is sent once.

The activity that sends a notice may run again (a worker killed after the send, a retry after
another URL failed); before each URL it asks the ledger, and it records a URL the moment its
send succeeded. So a retry sends only to the URLs that did not take the notice yet, and a
kill between a send and its record is the one gap (a notice sent twice, never lost): the
record is the next statement after the send.
"""

from __future__ import annotations

import time

from sqlalchemy import Column, Engine, Float, MetaData, String, Table, select

from shared.database import SchemaStep, SqlStore, ensure_versioned_schema

COMPONENT = "notices"
PG_SCHEMA_LOCK = 0x71646E6F74696365

metadata = MetaData()

notices_sent = Table(
    "notices_sent",
    metadata,
    Column("run", String(255), primary_key=True),
    Column("event", String(120), primary_key=True),
    Column("target", String(64), primary_key=True, comment="a hash of the URL, never the URL"),
    Column("sent_at", Float, nullable=False, comment="seconds since the epoch"),
)

STEPS = (SchemaStep(tables=(notices_sent,)),)


def ensure_schema(engine: Engine) -> None:
    """Bring the ledger's table to this version (creating it in a fresh database)."""
    ensure_versioned_schema(engine, component=COMPONENT, steps=STEPS, lock_key=PG_SCHEMA_LOCK)


class NoticeLedger(SqlStore):
    """The notices sent, per run, event and URL, in the desk's database."""

    ensure_schema = staticmethod(ensure_schema)

    def sent(self, run: str, event: str) -> set[str]:
        """The URLs (their hashes) that took ``run``'s ``event`` already."""
        query = select(notices_sent.c.target).where(
            notices_sent.c.run == run, notices_sent.c.event == event
        )
        with self._engine.connect() as conn:
            return set(conn.execute(query).scalars())

    def record(self, run: str, event: str, target: str) -> None:
        """``target`` took ``run``'s ``event`` (once: a second record is a no-op)."""
        row = {"run": run, "event": event, "target": target, "sent_at": time.time()}
        with self._engine.begin() as conn:
            conn.execute(self._insert(notices_sent).values(row).on_conflict_do_nothing())
