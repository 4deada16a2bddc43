"""The desk's spending ledger: every model call's cost, and the limits they are held to.

Before a model call the ``chat`` step *reserves* what the call could cost (its prompt and
its longest reply, at the model's price) under its own key (the workflow and activity ids:
a retried step replaces its reservation, never adds one); after the call it *settles* the
reservation with what the vendor counted. The check and the reservation are one
transaction, serialized across every worker (SQLite's write lock, taken by the reservation
being the first statement; PostgreSQL's advisory lock), so two runs of one book spending at
once cannot both pass its daily limit. A failed call keeps its reservation: it may have been
paid for. A refused call stays recorded at nothing, so the runs waiting on a book are known.

A call counts against two limits: its root run's (the run a person started, with every run
below it) and its book's for the UTC day. The run's limit is the one it started with until a
person raises it (``raise_limit``, kept here, so every worker sees it at once); a book's is
the desk's ``QUANTDESK_BUDGET__DAILY_USD`` until a person sets the book's own. Dollars count
against a dollar limit and tokens against a token limit, so a model without a price (a local
model) is held by tokens.
"""

from __future__ import annotations

import time
from datetime import UTC, datetime

from pydantic import BaseModel, Field
from sqlalchemy import (
    Boolean,
    Column,
    Connection,
    Engine,
    Float,
    Index,
    Integer,
    MetaData,
    String,
    Table,
    func,
    select,
    update,
)

from shared.config import BudgetSettings
from shared.database import SchemaStep, SqlStore, ensure_versioned_schema
from shared.errors import InvalidInput, SpendingLimitReached
from shared.llm.contracts import SpendScope

COMPONENT = "spending"
PG_SCHEMA_LOCK = 0x71647370656E64
PG_RESERVE_LOCK = 0x7164726573657276

metadata = MetaData()

spend_calls = Table(
    "spend_calls",
    metadata,
    Column("call", String(300), primary_key=True, comment="workflow id / activity id"),
    Column("run", String(255), nullable=False, comment="the root run's workflow id"),
    Column("book", String(64), nullable=True),
    Column("day", String(10), nullable=False, comment="the UTC day of the call"),
    Column("usd", Float, nullable=False),
    Column("tokens", Integer, nullable=False),
    Column("settled", Boolean, nullable=False, comment="false: the reservation's estimate"),
    Column("at", Float, nullable=False, comment="seconds since the epoch"),
    Index("spend_calls_run", "run"),
    Index("spend_calls_book_day", "book", "day"),
)

spend_limits = Table(
    "spend_limits",
    metadata,
    Column("scope", String(300), primary_key=True, comment="run:<id> or book:<name>"),
    Column("usd", Float, nullable=True),
    Column("tokens", Integer, nullable=True),
    Column("at", Float, nullable=False),
)

STEPS = (SchemaStep(tables=(spend_calls, spend_limits)),)


def ensure_schema(engine: Engine) -> None:
    """Bring the ledger's tables to this version (creating them in a fresh database)."""
    ensure_versioned_schema(engine, component=COMPONENT, steps=STEPS, lock_key=PG_SCHEMA_LOCK)


class Spend(BaseModel):
    """Dollars and tokens."""

    usd: float = Field(0.0, ge=0)
    tokens: int = Field(0, ge=0)


class RunTotals(BaseModel):
    """What a root run's tree spent: its model calls (stopped calls not counted)."""

    calls: int = 0
    usd: float = 0.0
    tokens: int = 0


class Limit(BaseModel):
    """A ceiling in dollars, tokens, both or neither."""

    usd: float | None = None
    tokens: int | None = None


class Standing(BaseModel):
    """What a run or a book has spent against its limit."""

    spent: Spend
    limit: Limit


def run_scope(run: str) -> str:
    """The limits row of a run."""
    return f"run:{run}"


def book_scope(book: str) -> str:
    """The limits row of a book."""
    return f"book:{book}"


def utc_day(at: float | None = None) -> str:
    """The UTC day of ``at`` (default: now), as the ledger keys days."""
    return datetime.fromtimestamp(time.time() if at is None else at, UTC).date().isoformat()


def _overrun(
    what: str, spent: Spend, estimate: Spend, limit: Limit, raise_with: str
) -> SpendingLimitReached | None:
    """The refusal when ``spent`` and the next call's ``estimate`` could pass ``limit``."""
    if limit.usd is not None and spent.usd + estimate.usd > limit.usd:
        return SpendingLimitReached(
            f"spending limit reached: ${spent.usd + estimate.usd:,.2f} of ${limit.usd:,.2f} "
            f"for {what} (spent ${spent.usd:,.2f}; the next call may cost "
            f"${estimate.usd:,.2f})",
            fix=f"Raise it with `{raise_with} --to N` (or the console), or cancel the run.",
        )
    if limit.tokens is not None and spent.tokens + estimate.tokens > limit.tokens:
        return SpendingLimitReached(
            f"token limit reached: {spent.tokens + estimate.tokens:,} of {limit.tokens:,} "
            f"tokens for {what} (spent {spent.tokens:,}; the next call may take "
            f"{estimate.tokens:,})",
            fix=f"Raise it with `{raise_with} --tokens N` (or the console), or cancel the run.",
        )
    return None


class SpendLedger(SqlStore):
    """Model calls' costs and the limits on them, in the desk's database."""

    ensure_schema = staticmethod(ensure_schema)

    def reserve(
        self, call: str, scope: SpendScope, estimate: Spend, daily: BudgetSettings
    ) -> dict[str, float]:
        """Hold ``estimate`` for ``call``, or raise ``SpendingLimitReached`` (holding nothing)
        when it could pass the run's limit or the book's for today. What each limit that
        applies has used, with this hold, by its scope (``run:<id>``, ``book:<name>``)."""
        now = time.time()
        day = utc_day(now)
        with self._engine.begin() as conn:
            if conn.dialect.name == "postgresql":
                conn.execute(select(func.pg_advisory_xact_lock(PG_RESERVE_LOCK)))
            # The first write: on SQLite it takes the write lock before anything is summed.
            row = {
                "call": call,
                "run": scope.run,
                "book": scope.book,
                "day": day,
                "usd": estimate.usd,
                "tokens": estimate.tokens,
                "settled": False,
                "at": now,
            }
            conn.execute(
                self._insert(spend_calls)
                .values(row)
                .on_conflict_do_update(
                    index_elements=[spend_calls.c.call],
                    set_={"usd": estimate.usd, "tokens": estimate.tokens, "settled": False},
                )
            )
            started = Limit(usd=scope.run_usd, tokens=scope.run_tokens)
            if started != Limit():
                # The run's limit as it started, so readers of the ledger see it too.
                conn.execute(
                    self._insert(spend_limits)
                    .values(
                        scope=run_scope(scope.run), usd=started.usd, tokens=started.tokens, at=now
                    )
                    .on_conflict_do_nothing()
                )
            others = spend_calls.c.call != call
            used: dict[str, float | None] = {}
            refusal, used[run_scope(scope.run)] = _refusal(
                conn,
                f"run {scope.run}",
                _limit(conn, run_scope(scope.run), started),
                estimate,
                f"quantdesk budget raise {scope.run}",
                others,
                spend_calls.c.run == scope.run,
            )
            if refusal is None and scope.book is not None:
                refusal, used[book_scope(scope.book)] = _refusal(
                    conn,
                    f"book {scope.book} on {day} (UTC)",
                    _limit(conn, book_scope(scope.book), _daily(daily)),
                    estimate,
                    f"quantdesk budget raise --book {scope.book}",
                    others,
                    spend_calls.c.book == scope.book,
                    spend_calls.c.day == day,
                )
            if refusal is not None:
                # Kept at nothing: the run is known to wait on this book (``runs_of_book``).
                conn.execute(
                    update(spend_calls)
                    .where(spend_calls.c.call == call)
                    .values(usd=0.0, tokens=0, settled=True)
                )
        if refusal is not None:
            raise refusal
        return {where: share for where, share in used.items() if share is not None}

    def settle(self, call: str, spent: Spend) -> None:
        """``call`` cost ``spent``, as the vendor counted it."""
        with self._engine.begin() as conn:
            conn.execute(
                update(spend_calls)
                .where(spend_calls.c.call == call)
                .values(usd=spent.usd, tokens=spent.tokens, settled=True)
            )

    def run_standing(self, run: str, started: Limit | None = None) -> Standing:
        """What root run ``run`` spent against its limit (raised, else ``started``)."""
        with self._engine.connect() as conn:
            spent = _sum(conn, spend_calls.c.run == run)
            limit = _limit(conn, run_scope(run), started or Limit())
        return Standing(spent=spent, limit=limit)

    def book_standing(self, book: str, daily: BudgetSettings, day: str | None = None) -> Standing:
        """What ``book`` spent on ``day`` (default: today, UTC) against its daily limit."""
        with self._engine.connect() as conn:
            spent = _sum(conn, spend_calls.c.book == book, spend_calls.c.day == (day or utc_day()))
            limit = _limit(conn, book_scope(book), _daily(daily))
        return Standing(spent=spent, limit=limit)

    def run_totals(self, run: str) -> RunTotals:
        """Root run ``run``'s calls, dollars and tokens, as the vendors counted them."""
        paid = (spend_calls.c.run == run, spend_calls.c.settled.is_(True), spend_calls.c.tokens > 0)
        query = select(
            func.count(),
            func.coalesce(func.sum(spend_calls.c.usd), 0.0),
            func.coalesce(func.sum(spend_calls.c.tokens), 0),
        ).where(*paid)
        with self._engine.connect() as conn:
            calls, usd, tokens = conn.execute(query).one()
        return RunTotals(calls=int(calls), usd=float(usd), tokens=int(tokens))

    def runs_of_book(self, book: str, day: str | None = None) -> list[str]:
        """The root runs that spent for ``book`` on ``day`` (default: today), or were stopped
        by its limit."""
        query = (
            select(spend_calls.c.run)
            .where(spend_calls.c.book == book, spend_calls.c.day == (day or utc_day()))
            .distinct()
        )
        with self._engine.connect() as conn:
            return sorted(conn.execute(query).scalars())

    def raise_limit(self, scope: str, limit: Limit, spent: Spend) -> None:
        """Set ``scope``'s limit (a part not given keeps its value; a part never set here
        stays the one the run started with, or the desk's daily one). A new limit at or under
        what is ``spent`` already would stop the next call at once, so it is refused."""
        if limit.usd is not None and limit.usd <= spent.usd:
            raise InvalidInput(
                "--to", f"${limit.usd:,.2f} is not above the ${spent.usd:,.2f} spent already"
            )
        if limit.tokens is not None and limit.tokens <= spent.tokens:
            raise InvalidInput(
                "--tokens", f"{limit.tokens:,} is not above the {spent.tokens:,} spent already"
            )
        with self._engine.begin() as conn:
            old = _limit(conn, scope, Limit())
            new = Limit(
                usd=limit.usd if limit.usd is not None else old.usd,
                tokens=limit.tokens if limit.tokens is not None else old.tokens,
            )
            row = {"scope": scope, "usd": new.usd, "tokens": new.tokens, "at": time.time()}
            conn.execute(
                self._insert(spend_limits)
                .values(row)
                .on_conflict_do_update(
                    index_elements=[spend_limits.c.scope],
                    set_={"usd": new.usd, "tokens": new.tokens, "at": row["at"]},
                )
            )


def _daily(daily: BudgetSettings) -> Limit:
    return Limit(usd=daily.daily_usd, tokens=daily.daily_tokens)


def _limit(conn: Connection, scope: str, otherwise: Limit) -> Limit:
    """``scope``'s limit as set here, each part unset here being ``otherwise``'s."""
    found = conn.execute(
        select(spend_limits.c.usd, spend_limits.c.tokens).where(spend_limits.c.scope == scope)
    ).first()
    if found is None:
        return otherwise
    return Limit(
        usd=found.usd if found.usd is not None else otherwise.usd,
        tokens=found.tokens if found.tokens is not None else otherwise.tokens,
    )


def _used(spent: Spend, limit: Limit) -> float:
    """The larger share of ``limit`` that ``spent`` uses, in dollars or in tokens."""
    shares = [spent.usd / limit.usd if limit.usd else 0.0]
    shares.append(spent.tokens / limit.tokens if limit.tokens else 0.0)
    return max(shares)


def _refusal(
    conn: Connection, what: str, limit: Limit, estimate: Spend, raise_with: str, *where: object
) -> tuple[SpendingLimitReached | None, float | None]:
    """``_overrun`` of the calls ``where`` selects against ``limit``, and the share of it used
    with this call's hold (``_used``); without a limit nothing is summed (a run's tree holds
    thousands of rows, and most runs have no limit) and no share is known."""
    if limit == Limit():
        return None, None
    spent = _sum(conn, *where)
    held = Spend(usd=spent.usd + estimate.usd, tokens=spent.tokens + estimate.tokens)
    return _overrun(what, spent, estimate, limit, raise_with), _used(held, limit)


def _sum(conn: Connection, *where: object) -> Spend:
    usd, tokens = conn.execute(
        select(
            func.coalesce(func.sum(spend_calls.c.usd), 0.0),
            func.coalesce(func.sum(spend_calls.c.tokens), 0),
        ).where(*where)  # type: ignore[arg-type]
    ).one()
    return Spend(usd=float(usd), tokens=int(tokens))
