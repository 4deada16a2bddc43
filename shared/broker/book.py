"""``BrokerBook``: the store of books bound to a real broker, one SQL transaction a step.

The order lifecycle the activities drive: ``record_intent`` before anything is sent,
``check_intent`` against the guardrails and halt, then ``mark_submitted`` with the
broker's order id, or ``mark_terminal`` as refused; ``book_fill`` for each fill the
broker reports; ``mark_terminal`` when the broker cancels or expires the rest.
``drift`` (with ``fill_ids``) compares the book with the broker; ``adopt_broker``
is a person's choice of the broker's numbers.

A step that reads and then writes takes its lock with a write that changes nothing
(``_locked_book``, ``_locked_intent``): SQLite takes its write lock only at a write,
PostgreSQL locks the row an update touches, so what the step reads next stays true
until it commits. Every step locks the book before the intent, never after.

The selects the steps compose, and how rows become records, are ``shared.broker.book_rows``.
"""

from __future__ import annotations

from collections.abc import Collection, Sequence
from datetime import UTC, datetime
from decimal import Decimal
from typing import Any

from sqlalchemy import ColumnElement, Connection, Row, delete, func, select, update

from shared.broker.book_rows import (
    adoption_from_row,
    day_notional,
    differences,
    intent_from_row,
    positions_json,
    said,
    select_booked_fills,
    select_intents,
    with_status,
)
from shared.broker.guardrails import BrokerLimits, Exposure, check_order
from shared.broker.intents import (
    ACCEPTED,
    OPEN,
    SET_BY_FILLS,
    TERMINAL,
    after_fill,
    client_order_id,
    moves,
)
from shared.broker.models import (
    Adoption,
    BookedFill,
    BrokerFill,
    FillOutcome,
    Halt,
    IntentStatus,
    OrderIntent,
    OrderSpec,
    Position,
)
from shared.database import record_of, row_values
from shared.errors import InvalidInput
from shared.portfolio.models import BrokerKind, Portfolio, Side, Trade, TradeRequest
from shared.portfolio.schema import (
    adoptions,
    broker_fills,
    broker_halts,
    holdings,
    order_intents,
    portfolios,
)
from shared.portfolio.store import PortfolioStore

SAME_FILL = ("book", "symbol", "side", "qty", "price")
"""What a fill id sent again must repeat; its order ids may come by another report."""


def fill_trade_key(fill_id: str) -> str:
    """The idempotency key of the trade a broker's fill books."""
    return f"fill/{fill_id}"


class BrokerBook(PortfolioStore):
    """Portfolios and, for those bound to a real broker, their order intents, fills, halts
    and adoptions of the broker's numbers."""

    def bound(self, name: str) -> Portfolio:
        """The book called ``name``, which must be bound to a real broker: a paper book is
        refused, naming what it is instead."""
        book = self.get(name)
        if book.broker is BrokerKind.PAPER:
            raise InvalidInput(
                "portfolio",
                f"{name!r} is a paper book: it fills its plans at the as-of closes and has "
                "no broker",
                fix="Broker commands take a book created with `quantdesk portfolio create NAME "
                "--cash N --broker alpaca`.",
            )
        return book

    def bound_books(self) -> list[Portfolio]:
        """Every book bound to a real broker, by name."""
        return [book for book in self.portfolios() if book.broker is not BrokerKind.PAPER]

    # --- intents --------------------------------------------------------------------------

    def record_intent(self, book: str, spec: OrderSpec, *, broker: BrokerKind) -> OrderIntent:
        """Record ``spec`` as a pending intent of ``book`` (which must trade at ``broker``)
        before anything is sent. The same order again returns the recorded intent unchanged;
        another order under its client order id is refused (a caller's bug, not a retry)."""
        if broker is BrokerKind.PAPER:
            raise InvalidInput(
                "broker",
                "the paper broker fills plans at the close and takes no orders",
                fix="Execute a paper book's plan with PaperBroker.",
            )
        coid = client_order_id(book, spec.workflow_id, spec.order_index)
        now = datetime.now(UTC)
        with self._engine.begin() as conn:
            row = self._row(conn, book, broker=broker)
            values = row_values(
                order_intents,
                spec,
                portfolio_id=row.id,
                client_order_id=coid,
                status=IntentStatus.PENDING,
                filled_qty=0,
                created_at=now,
                updated_at=now,
            )
            stored = self._insert_once(conn, order_intents, values, "client_order_id")
        intent = record_of(OrderIntent, stored, book=book)
        if differs := differences(intent, spec, OrderSpec.model_fields):
            raise InvalidInput(
                "client_order_id",
                f"{coid} was recorded for another order: {differs}",
                fix="Give each order of a workflow its own index.",
            )
        return intent

    def intent(self, client_order_id: str) -> OrderIntent | None:
        """The intent recorded under ``client_order_id``, if any."""
        with self._engine.connect() as conn:
            return self._intent_where(conn, order_intents.c.client_order_id == client_order_id)

    def intents(
        self,
        book: str,
        status: IntentStatus | Collection[IntentStatus] | None = None,
        *,
        limit: int | None = None,
    ) -> list[OrderIntent]:
        """The book's intents, oldest first; only those in ``status`` when given, the latest
        ``limit`` of them when given."""
        query = with_status(select_intents().where(portfolios.c.name == book), status)
        query = query.order_by(order_intents.c.id.desc())
        with self._engine.connect() as conn:
            self._row(conn, book)  # an unknown book is an error, not an empty list
            rows = conn.execute(query.limit(limit) if limit else query).all()
        return [intent_from_row(row) for row in reversed(rows)]

    def intent_count(
        self, book: str, status: IntentStatus | Collection[IntentStatus] | None = None
    ) -> int:
        """How many intents the book has (in ``status`` when given)."""
        query = with_status(
            select(func.count())
            .select_from(order_intents)
            .join(portfolios, portfolios.c.id == order_intents.c.portfolio_id)
            .where(portfolios.c.name == book),
            status,
        )
        with self._engine.connect() as conn:
            self._row(conn, book)
            return int(conn.execute(query).scalar_one())

    def mark_submitted(self, client_order_id: str, broker_order_id: str) -> OrderIntent:
        """The broker accepted the order as ``broker_order_id``: a pending intent becomes
        submitted; one further along (its fills booked first) only learns the id."""
        with self._engine.begin() as conn:
            intent = self._locked_intent(conn, client_order_id)
            if intent.broker_order_id not in (None, broker_order_id):
                raise InvalidInput(
                    "broker_order_id",
                    f"order {client_order_id} is the broker's {intent.broker_order_id}, "
                    f"not {broker_order_id}",
                )
            changes: dict[str, Any] = {"broker_order_id": broker_order_id}
            if intent.status not in ACCEPTED:
                moves(intent, IntentStatus.SUBMITTED)  # refuses a refused order
                changes["status"] = IntentStatus.SUBMITTED
            return self._update_intent(conn, intent, changes)

    def mark_terminal(
        self, client_order_id: str, status: IntentStatus, reason: str | None = None
    ) -> OrderIntent:
        """The order ended without (more) fills: canceled, expired, rejected by the broker, or
        refused by us or by the broker on submission, for ``reason``. The same again changes
        nothing; a terminal intent never becomes another."""
        if status not in TERMINAL - SET_BY_FILLS:
            raise InvalidInput(
                "status",
                f"{status.value} is not how an order ends without fills",
                fix="Book the fills with book_fill: they make an order (partially) filled.",
            )
        with self._engine.begin() as conn:
            intent = self._locked_intent(conn, client_order_id)
            if not moves(intent, status):
                return intent
            return self._update_intent(conn, intent, {"status": status, "reason": reason})

    def _locked_intent(self, conn: Connection, client_order_id: str) -> OrderIntent:
        """The intent, its row locked until the transaction ends (see the module's doc)."""
        where = order_intents.c.client_order_id == client_order_id
        conn.execute(update(order_intents).where(where).values(status=order_intents.c.status))
        intent = self._intent_where(conn, where)
        if intent is None:
            raise InvalidInput("client_order_id", f"no order intent {client_order_id!r}")
        return intent

    def _update_intent(
        self, conn: Connection, intent: OrderIntent, changes: dict[str, Any]
    ) -> OrderIntent:
        """Write ``changes`` to the intent's row; the intent they make."""
        if all(getattr(intent, name) == value for name, value in changes.items()):
            return intent
        changes = changes | {"updated_at": datetime.now(UTC)}
        where = order_intents.c.client_order_id == intent.client_order_id
        conn.execute(update(order_intents).where(where).values(changes))
        return OrderIntent.model_validate({**intent.model_dump(), **changes})  # its rules hold

    def _intent_where(self, conn: Connection, where: ColumnElement[bool]) -> OrderIntent | None:
        row = conn.execute(select_intents().where(where)).first()
        return None if row is None else intent_from_row(row)

    # --- guardrails -----------------------------------------------------------------------

    def check_intent(
        self,
        client_order_id: str,
        limits: BrokerLimits,
        *,
        buying_power: Decimal,
        at: datetime | None = None,
    ) -> list[str]:
        """Every guardrail the intent breaks, the halt included (``check_order``), against
        the book ``at`` a time (now by default); empty: it may be sent."""
        intent = self.intent(client_order_id)
        if intent is None:
            raise InvalidInput("client_order_id", f"no order intent {client_order_id!r}")
        exposure = self.exposure(intent, at or datetime.now(UTC))
        return check_order(intent, limits, exposure, buying_power=buying_power)

    def exposure(self, intent: OrderIntent, at: datetime) -> Exposure:
        """What the intent's book holds of its symbol and has asked for besides it: unfilled
        shares of open sells of the symbol, and intents of the exchange day ``at`` is in."""
        others = select_intents().where(
            portfolios.c.name == intent.book,
            order_intents.c.client_order_id != intent.client_order_id,
        )
        selling = others.where(
            order_intents.c.symbol == intent.symbol,
            order_intents.c.side == Side.SELL,
            order_intents.c.status.in_(OPEN),
        )
        held = (
            select(holdings.c.shares)
            .join(portfolios, portfolios.c.id == holdings.c.portfolio_id)
            .where(portfolios.c.name == intent.book, holdings.c.symbol == intent.symbol)
        )
        with self._engine.connect() as conn:
            return Exposure(
                held_shares=conn.execute(held).scalar_one_or_none() or 0,
                open_sell_shares=sum(row.qty - row.filled_qty for row in conn.execute(selling)),
                notional_today=day_notional(conn, others, at),
                halt=self._halt_in_force(conn, intent.book),
            )

    def notional_today(self, book: str, at: datetime) -> Decimal:
        """What the book's intents of the exchange day ``at`` is in are worth, refused ones
        aside: what the daily cap is checked against."""
        with self._engine.connect() as conn:
            self._row(conn, book)
            return day_notional(conn, select_intents().where(portfolios.c.name == book), at)

    # --- fills ----------------------------------------------------------------------------

    def book_fill(self, book: str, fill: BrokerFill) -> FillOutcome:
        """Book ``fill`` once: its row, its intent's filled shares and the trade that moves
        the holding and cash, in one transaction. The same fill id again returns what was
        booked and changes nothing. A fill at or before an adoption's ``as_of`` is in the
        broker's numbers adopted then: it is recorded, but moves no cash or shares."""
        with self._engine.begin() as conn:
            row = self._locked_book(conn, book)
            intent = self._intent_of(conn, row, fill)
            of_intent = order_intents.c.client_order_id == intent.client_order_id
            inserted = conn.execute(
                self._insert(broker_fills)
                .values(
                    row_values(
                        broker_fills,
                        fill,
                        portfolio_id=row.id,
                        intent_id=select(order_intents.c.id).where(of_intent).scalar_subquery(),
                        created_at=datetime.now(UTC),
                    )
                )
                .on_conflict_do_nothing(index_elements=["fill_id"])
                .returning(broker_fills.c.id)
            ).first()
            if inserted is not None:
                self._apply_fill(conn, row, self._locked_intent(conn, intent.client_order_id), fill)
            outcome = self._booked_fill(conn, fill.fill_id, new=inserted is not None)
        if differs := differences(outcome.fill, fill, SAME_FILL, book=book):
            raise InvalidInput(
                "fill_id",
                f"{fill.fill_id} was booked for another fill: {differs}",
                fix="Pass the broker's own id of each fill.",
            )
        return outcome

    def _apply_fill(
        self, conn: Connection, book: Row[Any], intent: OrderIntent, fill: BrokerFill
    ) -> None:
        """Move the intent's filled shares, and book the trade unless an adoption covers it."""
        filled, average, status = after_fill(intent, fill)
        changes = {"filled_qty": filled, "avg_fill_price": average, "status": status}
        self._update_intent(
            conn,
            intent,
            changes | {"broker_order_id": intent.broker_order_id or fill.broker_order_id},
        )
        covered_by = conn.execute(
            select(adoptions.c.id)
            .where(adoptions.c.portfolio_id == book.id, adoptions.c.as_of >= fill.transaction_time)
            .order_by(adoptions.c.id.desc())
            .limit(1)
        ).scalar_one_or_none()
        booked: dict[str, Any] = {"adoption_id": covered_by}
        if covered_by is None:
            request = TradeRequest(
                key=fill_trade_key(fill.fill_id),
                symbol=fill.symbol,
                side=fill.side,
                shares=fill.qty,
                price=fill.price,
                fees=fill.fees,
                executed_at=fill.transaction_time,
                sector=intent.sector,
                rationale=intent.rationale,
                source=intent.workflow_id,
            )
            booked = {"trade_key": self._book_trade(conn, book, request).trade.key}
        where = broker_fills.c.fill_id == fill.fill_id
        conn.execute(update(broker_fills).where(where).values(booked))

    def _intent_of(self, conn: Connection, book: Row[Any], fill: BrokerFill) -> OrderIntent:
        """The book's intent that ``fill`` names: by our id if it has it, else the broker's."""
        if fill.client_order_id is not None:
            intent = self._intent_where(
                conn, order_intents.c.client_order_id == fill.client_order_id
            )
        else:
            intent = self._intent_where(
                conn, order_intents.c.broker_order_id == fill.broker_order_id
            )
        if (
            intent is None
            or intent.book != book.name
            or intent.broker_order_id not in (None, fill.broker_order_id or intent.broker_order_id)
        ):
            raise InvalidInput(
                "fill",
                f"fill {fill.fill_id} names order {fill.client_order_id or '-'} (the broker's "
                f"{fill.broker_order_id or '-'}), which is no order intent of {book.name!r}",
                fix="Look the order up at the broker and pass its client_order_id; the fills of "
                "an order quantdesk did not place come in by adopting the broker's numbers.",
            )
        return intent

    def _booked_fill(self, conn: Connection, fill_id: str, *, new: bool) -> FillOutcome:
        """What booking the fill ``fill_id`` did, read back."""
        row = conn.execute(select_booked_fills().where(broker_fills.c.fill_id == fill_id)).one()
        intent = conn.execute(select_intents().where(order_intents.c.id == row.intent_id)).one()
        trade = None if row.trade_key is None else self._trade_at(conn, row.trade_key)
        return FillOutcome(
            fill=record_of(BookedFill, row), intent=intent_from_row(intent), trade=trade, new=new
        )

    def fills(self, book: str, *, limit: int | None = None) -> list[BookedFill]:
        """The book's fills as booked (or covered by an adoption), oldest first; the latest
        ``limit`` when given."""
        query = (
            select_booked_fills()
            .where(portfolios.c.name == book)
            .order_by(broker_fills.c.id.desc())
        )
        with self._engine.connect() as conn:
            self._row(conn, book)
            rows = conn.execute(query.limit(limit) if limit else query).all()
        return [record_of(BookedFill, row) for row in reversed(rows)]

    def booked_trades(self, client_order_ids: Collection[str]) -> list[tuple[str, Trade]]:
        """The trades the fills of these orders booked, each with its order's client order
        id, in booking order (a fill an adoption covers booked none)."""
        query = (
            select(order_intents.c.client_order_id, broker_fills.c.trade_key)
            .join(order_intents, order_intents.c.id == broker_fills.c.intent_id)
            .where(
                order_intents.c.client_order_id.in_(list(client_order_ids)),
                broker_fills.c.trade_key.is_not(None),
            )
            .order_by(broker_fills.c.id)
        )
        with self._engine.connect() as conn:
            found = [
                (row.client_order_id, self._trade_at(conn, row.trade_key))
                for row in conn.execute(query)
            ]
        return [(coid, trade) for coid, trade in found if trade is not None]

    def fill_ids(self, book: str, *, since: datetime | None = None) -> set[str]:
        """The ids of the book's fills (booked, or covered by an adoption), those of
        transactions at or after ``since`` when given: the book's side of ``drift``."""
        query = (
            select(broker_fills.c.fill_id)
            .join(portfolios, portfolios.c.id == broker_fills.c.portfolio_id)
            .where(portfolios.c.name == book)
        )
        if since is not None:
            query = query.where(broker_fills.c.transaction_time >= since)
        with self._engine.connect() as conn:
            self._row(conn, book)
            return set(conn.execute(query).scalars())

    # --- halts ----------------------------------------------------------------------------

    def halt(self, book: str, reason: str, who: str) -> Halt:
        """Stop the book's orders (``check_intent`` refuses every one) until ``resume``."""
        return self._record_halt(book, halted=True, reason=said("reason", reason), who=who)

    def resume(self, book: str, who: str) -> Halt:
        """Let the book's orders through again."""
        return self._record_halt(book, halted=False, reason="", who=who)

    def halted(self, book: str) -> Halt | None:
        """The halt in force on the book, or None if it may trade."""
        with self._engine.connect() as conn:
            self._row(conn, book)
            return self._halt_in_force(conn, book)

    def halts(self, book: str) -> list[Halt]:
        """Every halt and resume of the book, oldest first: the history is only appended to."""
        rows = self._book_rows(book, broker_halts.c.id)
        return [record_of(Halt, row, book=book) for row in rows]

    def _record_halt(self, book: str, *, halted: bool, reason: str, who: str) -> Halt:
        record = Halt(
            book=book, halted=halted, reason=reason, who=said("who", who), at=datetime.now(UTC)
        )
        with self._engine.begin() as conn:
            row = self._row(conn, book)
            conn.execute(
                broker_halts.insert().values(row_values(broker_halts, record, portfolio_id=row.id))
            )
        return record

    def _halt_in_force(self, conn: Connection, book: str) -> Halt | None:
        latest = conn.execute(
            select(broker_halts)
            .join(portfolios, portfolios.c.id == broker_halts.c.portfolio_id)
            .where(portfolios.c.name == book)
            .order_by(broker_halts.c.id.desc())
            .limit(1)
        ).first()
        return record_of(Halt, latest, book=book) if latest and latest.halted else None

    # --- adoptions ------------------------------------------------------------------------

    def adopt_broker(
        self,
        book: str,
        positions: Sequence[Position],
        cash: Decimal,
        *,
        as_of: datetime,
        who: str,
        reason: str,
    ) -> Adoption:
        """Make the book's holdings and cash the broker's, as a person chose to, recording
        both sides. ``as_of``: the time of the newest fill the broker's numbers include;
        fills up to then are never booked again (``book_fill`` records them, moving nothing)."""
        after = sorted(positions, key=lambda position: position.symbol)
        symbols = [position.symbol for position in after]
        if len(set(symbols)) < len(symbols):
            raise InvalidInput("positions", f"a symbol is given twice in {symbols}")
        if cash < 0:
            raise InvalidInput("cash", f"{cash} is below zero, which a book never holds")
        now = datetime.now(UTC)
        with self._engine.begin() as conn:
            row = self._locked_book(conn, book)
            held = {
                h.symbol: h
                for h in conn.execute(holdings.select().where(holdings.c.portfolio_id == row.id))
            }
            conn.execute(
                delete(holdings).where(
                    holdings.c.portfolio_id == row.id, holdings.c.symbol.not_in(symbols)
                )
            )
            for position in after:
                values = {
                    "shares": position.shares,
                    "avg_cost": position.avg_cost,
                    "updated_at": now,
                }
                if position.symbol in held:
                    where = holdings.c.id == held[position.symbol].id
                    conn.execute(update(holdings).where(where).values(values))
                else:
                    values |= {"portfolio_id": row.id, "symbol": position.symbol, "opened_at": now}
                    conn.execute(holdings.insert().values(values))
            conn.execute(update(portfolios).where(portfolios.c.id == row.id).values(cash=cash))
            before = [
                Position(symbol=s, shares=h.shares, avg_cost=h.avg_cost) for s, h in held.items()
            ]
            inserted = conn.execute(
                adoptions.insert()
                .values(
                    portfolio_id=row.id,
                    as_of=as_of,
                    who=said("who", who),
                    reason=said("reason", reason),
                    cash_before=row.cash,
                    cash_after=cash,
                    positions_before=positions_json(sorted(before, key=lambda p: p.symbol)),
                    positions_after=positions_json(after),
                    created_at=now,
                )
                .returning(adoptions)
            ).one()
            return adoption_from_row(inserted, book)

    def adoptions(self, book: str) -> list[Adoption]:
        """The book's adoptions of the broker's numbers, oldest first."""
        return [adoption_from_row(row, book) for row in self._book_rows(book, adoptions.c.id)]

    def _locked_book(self, conn: Connection, name: str) -> Row[Any]:
        """The book's row, locked until the transaction ends (see the module's doc)."""
        where = portfolios.c.name == name
        conn.execute(update(portfolios).where(where).values(cash=portfolios.c.cash))
        return self._row(conn, name)
