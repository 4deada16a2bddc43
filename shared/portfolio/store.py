"""The book in SQL: portfolios, their holdings, and trades booked exactly once per key.

A trade is one transaction: its row, the cash and the holding change together
or not at all. The trade row goes in first, keyed by its idempotency key with
``ON CONFLICT DO NOTHING``: a second attempt with the same key inserts nothing
and gets the booked trade back, whoever retried it (a Temporal retry, a re-run
workflow, a worker that came back from the dead). Inserting first also takes
the write lock before the cash is read (SQLite takes its writer lock at the
first write; PostgreSQL locks the portfolio row ``FOR UPDATE`` first), so two
trades on one book never both read the same cash.
"""

from __future__ import annotations

import json
from datetime import UTC, datetime
from typing import Any

from pydantic import ValidationError
from sqlalchemy import ColumnElement, Connection, Row, Table, delete, select, update
from sqlalchemy.exc import IntegrityError

from shared.database import SqlStore, record_of, row_values
from shared.errors import InvalidInput, QuantdeskError
from shared.portfolio.models import (
    BrokerKind,
    DecisionRecord,
    Holding,
    Portfolio,
    Side,
    Snapshot,
    SnapshotPosition,
    Trade,
    TradeOutcome,
    TradeRequest,
    money,
    price,
)
from shared.portfolio.schema import (
    decisions,
    ensure_schema,
    holdings,
    portfolios,
    snapshots,
    trades,
)
from shared.validation_errors import problem


class TradeRefused(QuantdeskError):
    """The book cannot take this trade (not enough cash or shares); retrying cannot help."""

    def __init__(self, symbol: str, problem: str) -> None:
        self.symbol = symbol
        super().__init__(f"trade in {symbol} refused: {problem}")


class PortfolioStore(SqlStore):
    """Portfolios, holdings, trades, snapshots and decisions in one database."""

    ensure_schema = staticmethod(ensure_schema)

    # --- portfolios -----------------------------------------------------------------------

    def create(
        self, name: str, cash: Any, *, currency: str = "USD", broker: BrokerKind = BrokerKind.PAPER
    ) -> Portfolio:
        """A new book holding ``cash``, bound to ``broker`` for good; a taken name is refused."""
        try:
            created = Portfolio(
                name=name,
                currency=currency,
                initial_cash=cash,
                cash=cash,
                created_at=datetime.now(UTC),
                broker=broker,
            )
        except ValidationError as error:
            first = error.errors()[0]
            field = "cash" if first["loc"][0] == "initial_cash" else str(first["loc"][0])
            raise InvalidInput(field, problem(first)) from None
        try:
            with self._engine.begin() as conn:
                conn.execute(portfolios.insert().values(**created.model_dump()))
        except IntegrityError:
            raise InvalidInput(
                "name", f"a portfolio called {name!r} exists", fix="Choose another name."
            ) from None
        return created

    def open(
        self, name: str, cash: Any, *, broker: BrokerKind = BrokerKind.PAPER
    ) -> tuple[Portfolio, bool]:
        """The book called ``name`` (created with ``cash`` if there is none), and whether this
        call created it; a book bound to another broker is refused, never switched."""
        try:
            return self.get(name, broker=broker), False
        except InvalidInput as error:
            if error.field != "portfolio":
                raise
        try:
            return self.create(name, cash, broker=broker), True
        except InvalidInput as error:
            if error.field != "name":
                raise
            return self.get(name, broker=broker), False  # another process created it first

    def portfolios(self) -> list[Portfolio]:
        """Every book, by name."""
        with self._engine.connect() as conn:
            rows = conn.execute(portfolios.select().order_by(portfolios.c.name)).all()
        return [_portfolio(row) for row in rows]

    def get(self, name: str, *, broker: BrokerKind | None = None) -> Portfolio:
        """The book called ``name``, or an error listing the books there are; given a
        ``broker``, a book bound to another is refused."""
        with self._engine.connect() as conn:
            return _portfolio(self._row(conn, name, broker=broker))

    def holdings(self, name: str) -> list[Holding]:
        """The book's positions, by symbol."""
        return [_holding(row) for row in self._book_rows(name, holdings.c.symbol)]

    def _book_rows(
        self, name: str, *order: ColumnElement[Any], limit: int | None = None
    ) -> list[Row[Any]]:
        """The rows of book ``name`` in the table of the ``order`` columns, ascending by them
        (the last ``limit`` when given)."""
        table = order[0].table
        with self._engine.connect() as conn:
            book = self._row(conn, name)
            query = table.select().where(table.c.portfolio_id == book.id)
            query = query.order_by(*(column.desc() for column in order))
            rows = conn.execute(query.limit(limit) if limit else query).all()
        return list(reversed(rows))

    def _insert_once(
        self, conn: Connection, table: Table, values: dict[str, Any], key: str | None = None
    ) -> Row[Any]:
        """Insert a keyed row unless its key is stored already; the stored row, either way.

        The key is the unique column ``key``, by default the table's one unique column
        besides the generated id."""
        if key is None:
            (key,) = [c.name for c in table.columns if c.unique and not c.primary_key]
        conn.execute(
            self._insert(table).values(values).on_conflict_do_nothing(index_elements=[key])
        )
        return conn.execute(table.select().where(table.c[key] == values[key])).one()

    def _row(
        self,
        conn: Connection,
        name: str,
        *,
        lock: bool = False,
        broker: BrokerKind | None = None,
    ) -> Row[Any]:
        """The book's row (locked for update when ``lock``); given a ``broker``, it must be
        the book's own."""
        query = portfolios.select().where(portfolios.c.name == name)
        row = conn.execute(query.with_for_update() if lock else query).first()
        if row is None:
            known = conn.execute(select(portfolios.c.name).order_by(portfolios.c.name)).scalars()
            names = ", ".join(known) or "none yet"
            raise InvalidInput(
                "portfolio",
                f"no portfolio called {name!r} (there are: {names})",
                fix="Create it with `quantdesk portfolio create NAME --cash 100000`.",
            )
        if broker is not None and row.broker != broker:
            raise InvalidInput(
                "broker",
                f"portfolio {name!r} trades at the {row.broker.value} broker, not {broker.value}",
                fix=f"Use its own broker ({row.broker.value}), or create another book for "
                f"{broker.value}.",
            )
        return row

    # --- trades ---------------------------------------------------------------------------

    def execute_trade(self, name: str, request: TradeRequest) -> TradeOutcome:
        """Book a paper fill once: cash, holding and trade row in one transaction.

        The same key again returns the booked trade with ``new=False``; the same key
        for a different trade is refused, since that is a caller's bug, not a retry. A book
        bound to a real broker is refused: only the fills its broker reports move it.
        """
        with self._engine.begin() as conn:
            # PostgreSQL: lock the book's row before the trade row's foreign key share-locks it,
            # or two trades would each wait for the other to upgrade. SQLite ignores it.
            book = self._row(conn, name, lock=True, broker=BrokerKind.PAPER)
            return self._book_trade(conn, book, request)

    def _book_trade(self, conn: Connection, book: Row[Any], request: TradeRequest) -> TradeOutcome:
        """Book ``request`` in ``conn``'s transaction, the book's row locked by the caller."""
        now = datetime.now(UTC)
        inserted = conn.execute(
            self._insert(trades)
            .values(
                row_values(
                    trades,
                    request,
                    portfolio_id=book.id,
                    idempotency_key=request.key,
                    created_at=now,
                )
            )
            .on_conflict_do_nothing(index_elements=["idempotency_key"])
            .returning(trades.c.id)
        ).first()
        if inserted is None:
            return TradeOutcome(trade=self._same_trade(conn, book.id, request), new=False)
        # Read again now that the insert holds the write lock (SQLite takes it only then).
        book = self._row(conn, book.name)
        realized = self._apply(conn, book, request, now)
        conn.execute(update(trades).where(trades.c.id == inserted.id).values(realized_pnl=realized))
        row = conn.execute(trades.select().where(trades.c.id == inserted.id)).one()
        return TradeOutcome(trade=_trade(row), new=True)

    def _apply(self, conn: Connection, book: Row[Any], request: TradeRequest, now: datetime) -> Any:
        """Move cash and the holding for ``request``; the realized P&L of a sell, else None.

        Raises ``TradeRefused`` (rolling the whole trade back) when the book lacks the
        cash for a buy or the shares for a sell."""
        cash = book.cash + request.cash_change
        if cash < 0:
            raise TradeRefused(
                request.symbol,
                f"it needs {-request.cash_change} in cash and the book has {book.cash}",
            )
        held = conn.execute(
            holdings.select()
            .where(holdings.c.portfolio_id == book.id, holdings.c.symbol == request.symbol)
            .with_for_update()
        ).first()
        realized = None
        if request.side is Side.BUY:
            self._add_shares(conn, book.id, held, request, now)
        else:
            realized = self._remove_shares(conn, held, request, now)
        conn.execute(update(portfolios).where(portfolios.c.id == book.id).values(cash=cash))
        return realized

    def _remove_shares(
        self, conn: Connection, held: Row[Any] | None, request: TradeRequest, now: datetime
    ) -> Any:
        """A sell reduces or closes the position; its realized P&L is net of fees."""
        if held is None or held.shares < request.shares:
            shares = 0 if held is None else held.shares
            raise TradeRefused(
                request.symbol, f"selling {request.shares} shares but the book holds {shares}"
            )
        left = held.shares - request.shares
        where = holdings.c.id == held.id
        if left == 0:
            conn.execute(delete(holdings).where(where))
        else:
            conn.execute(update(holdings).where(where).values(shares=left, updated_at=now))
        return money(request.value - request.fees - held.avg_cost * request.shares)

    def _add_shares(
        self,
        conn: Connection,
        portfolio_id: int,
        held: Row[Any] | None,
        request: TradeRequest,
        now: datetime,
    ) -> None:
        """A buy opens the position or averages into it; fees go into the cost basis."""
        paid = request.value + request.fees
        if held is None:
            conn.execute(
                holdings.insert().values(
                    portfolio_id=portfolio_id,
                    symbol=request.symbol,
                    shares=request.shares,
                    avg_cost=price(paid / request.shares),
                    sector=request.sector,
                    opened_at=now,
                    updated_at=now,
                )
            )
            return
        shares = held.shares + request.shares
        cost = price((held.avg_cost * held.shares + paid) / shares)
        conn.execute(
            update(holdings)
            .where(holdings.c.id == held.id)
            .values(
                shares=shares, avg_cost=cost, updated_at=now, sector=request.sector or held.sector
            )
        )

    def _same_trade(self, conn: Connection, portfolio_id: int, request: TradeRequest) -> Trade:
        """The trade already booked under ``request.key``, which must be this very trade."""
        row = conn.execute(trades.select().where(trades.c.idempotency_key == request.key)).one()
        booked = _trade(row)
        same = (row.portfolio_id, booked.symbol, booked.side, booked.shares) == (
            portfolio_id,
            request.symbol,
            request.side,
            request.shares,
        )
        if not same:
            raise InvalidInput(
                "key",
                f"{request.key!r} already booked {booked.side.value} {booked.shares} "
                f"{booked.symbol}, not {request.side.value} {request.shares} {request.symbol}",
                fix="Give every distinct trade its own idempotency key.",
            )
        return booked

    def trades(self, name: str, *, limit: int | None = None) -> list[Trade]:
        """The book's trades, oldest first (the latest ``limit`` when given)."""
        return [_trade(row) for row in self._book_rows(name, trades.c.id, limit=limit)]

    def trade(self, key: str) -> Trade | None:
        """The trade booked under ``key``, if any."""
        with self._engine.connect() as conn:
            return self._trade_at(conn, key)

    def _trade_at(self, conn: Connection, key: str) -> Trade | None:
        row = conn.execute(trades.select().where(trades.c.idempotency_key == key)).first()
        return None if row is None else _trade(row)

    # --- snapshots and decisions ----------------------------------------------------------

    def record_snapshot(self, name: str, snapshot: Snapshot) -> Snapshot:
        """Store ``snapshot`` under its key; the one already stored there wins."""
        positions = json.dumps([p.model_dump(mode="json") for p in snapshot.positions])
        with self._engine.begin() as conn:
            book = self._row(conn, name)
            values = row_values(
                snapshots,
                snapshot,
                portfolio_id=book.id,
                snapshot_key=snapshot.key,
                positions=positions,
            )
            return _snapshot(self._insert_once(conn, snapshots, values))

    def snapshots(self, name: str, *, limit: int | None = None) -> list[Snapshot]:
        """The book's snapshots in time order (the latest ``limit`` when given)."""
        rows = self._book_rows(name, snapshots.c.as_of, snapshots.c.id, limit=limit)
        return [_snapshot(row) for row in rows]

    def record_decision(self, name: str, record: DecisionRecord) -> DecisionRecord:
        """Store a PM decision under its key; the one already stored there wins."""
        decision = json.dumps(record.decision, default=str)
        with self._engine.begin() as conn:
            book = self._row(conn, name)
            values = row_values(
                decisions, record, portfolio_id=book.id, decision_key=record.key, decision=decision
            )
            return _decision(self._insert_once(conn, decisions, values))

    def decisions(self, name: str) -> list[DecisionRecord]:
        """The book's recorded decisions, oldest first."""
        return [_decision(row) for row in self._book_rows(name, decisions.c.id)]

    def last_activity(self, name: str) -> datetime | None:
        """The as-of time of the book's latest trade or snapshot: where its paper clock stands."""
        with self._engine.connect() as conn:
            book = self._row(conn, name)
            times = [
                conn.execute(
                    select(table.c[column])
                    .where(table.c.portfolio_id == book.id)
                    .order_by(table.c[column].desc())
                    .limit(1)
                ).scalar_one_or_none()
                for table, column in ((trades, "executed_at"), (snapshots, "as_of"))
            ]
        found = [time for time in times if time is not None]
        return max(found) if found else None


def _portfolio(row: Row[Any]) -> Portfolio:
    return record_of(Portfolio, row)


def _holding(row: Row[Any]) -> Holding:
    return record_of(Holding, row)


def _trade(row: Row[Any]) -> Trade:
    return record_of(Trade, row, key=row.idempotency_key)


def _snapshot(row: Row[Any]) -> Snapshot:
    positions = [SnapshotPosition.model_validate(p) for p in json.loads(row.positions)]
    return record_of(Snapshot, row, key=row.snapshot_key, positions=positions)


def _decision(row: Row[Any]) -> DecisionRecord:
    return record_of(DecisionRecord, row, key=row.decision_key, decision=json.loads(row.decision))
