"""What the broker chaos bench counts at the end: the stand-in's orders and fills against the
books' intents, fill rows, trades and holdings, read from the SQL tables themselves.

The stand-in is one paper account shared by every book, so a book's side of the broker is
what the broker filled of that book's orders (its client order ids); the account's
positions must equal the books' holdings summed.
"""

from __future__ import annotations

from collections import Counter, defaultdict
from collections.abc import Sequence
from dataclasses import dataclass, field
from typing import Any

from sqlalchemy import Row, create_engine, select

from shared.broker.book import fill_trade_key
from shared.broker.models import IntentStatus
from shared.portfolio.schema import broker_fills, holdings, order_intents, portfolios, trades
from tests.fakes.alpaca.model import Side as BrokerSide
from tests.fakes.alpaca.server import AlpacaStandIn


@dataclass(frozen=True)
class BookSide:
    """One book's holdings and the shares the broker filled of its orders, by symbol."""

    book: dict[str, int]
    broker: dict[str, int]

    @property
    def equal(self) -> bool:
        """Whether the book holds what the broker filled for it."""
        return _nonzero(self.book) == _nonzero(self.broker)


@dataclass
class Tally:
    """Every figure of the bench's table, and what makes a goal missed."""

    intents: int = 0
    refused: int = 0
    still_open: int = 0
    orders_at_broker: int = 0
    duplicates: list[str] = field(default_factory=list)
    lost: list[str] = field(default_factory=list)
    unknown_orders: list[str] = field(default_factory=list)
    fills_at_broker: int = 0
    fills_booked: int = 0
    trades_booked: int = 0
    booked_twice: list[str] = field(default_factory=list)
    never_booked: list[str] = field(default_factory=list)
    books: dict[str, BookSide] = field(default_factory=dict)
    account: BookSide = field(default_factory=lambda: BookSide({}, {}))

    @property
    def holdings_equal(self) -> bool:
        """Every book holds what the broker filled for it, and the account what they hold."""
        return self.account.equal and all(side.equal for side in self.books.values())

    @property
    def exactly_once(self) -> bool:
        """No duplicate, no lost intent, no order the books never made, no fill booked twice
        or never, and the books' holdings are the broker's."""
        return not (
            self.duplicates
            or self.lost
            or self.unknown_orders
            or self.booked_twice
            or self.never_booked
        ) and (self.holdings_equal)


def tally(server: AlpacaStandIn, database_url: str) -> Tally:
    """The stand-in against the books in ``database_url``."""
    engine = create_engine(database_url)
    try:
        with engine.connect() as conn:
            intents = conn.execute(
                select(order_intents, portfolios.c.name.label("book")).join(
                    portfolios, portfolios.c.id == order_intents.c.portfolio_id
                )
            ).all()
            fill_rows = conn.execute(select(broker_fills.c.fill_id)).scalars().all()
            trade_keys = conn.execute(select(trades.c.idempotency_key)).scalars().all()
            held = conn.execute(
                select(portfolios.c.name, holdings.c.symbol, holdings.c.shares).join(
                    portfolios, portfolios.c.id == holdings.c.portfolio_id
                )
            ).all()
    finally:
        engine.dispose()
    orders, fills = server.orders.values(), server.fills
    with server.lock:
        positions = {s: int(p.qty) for s, p in server.book.positions.items()}
    found = Tally(intents=len(intents), orders_at_broker=len(orders), fills_at_broker=len(fills))
    at_broker = Counter(order.client_order_id for order in orders)
    status = {row.client_order_id: IntentStatus(row.status) for row in intents}
    found.refused = sum(s is IntentStatus.REFUSED for s in status.values())
    found.still_open = sum(s not in _ENDED for s in status.values())
    found.duplicates = sorted(coid for coid, count in at_broker.items() if count > 1)
    found.lost = sorted(
        coid for coid, s in status.items() if s is not IntentStatus.REFUSED and not at_broker[coid]
    )
    found.unknown_orders = sorted(
        coid for coid in at_broker if status.get(coid, IntentStatus.REFUSED) is IntentStatus.REFUSED
    )
    _count_fills(found, server, fill_rows, trade_keys, intents)
    _compare_holdings(found, server, intents, held, positions)
    return found


_ENDED = frozenset(
    {
        IntentStatus.FILLED,
        IntentStatus.REFUSED,
        IntentStatus.CANCELED,
        IntentStatus.EXPIRED,
        IntentStatus.REJECTED,
    }
)


def _count_fills(
    found: Tally,
    server: AlpacaStandIn,
    fill_rows: Sequence[str],
    trade_keys: Sequence[str],
    intents: Sequence[Row[Any]],
) -> None:
    """Fill rows and trades against the broker's fills by id, and each order's booked shares
    against what the broker filled of it."""
    broker_ids = {fill.id for fill in server.fills}
    found.fills_booked, found.trades_booked = len(fill_rows), len(trade_keys)
    rows, keys = Counter(fill_rows), Counter(trade_keys)
    twice = [f"fill {i} booked {n}×" for i, n in rows.items() if n > 1]
    twice += [f"trade {k} booked {n}×" for k, n in keys.items() if n > 1]
    twice += [f"fill {i} is not the broker's" for i in rows.keys() - broker_ids]
    twice += [
        f"trade {k} is no fill of the broker's"
        for k in keys.keys() - {fill_trade_key(i) for i in broker_ids}
    ]
    filled = {order.client_order_id: int(order.filled_qty) for order in server.orders.values()}
    twice += [
        f"{row.client_order_id}: {row.filled_qty} shares booked, {filled.get(row.client_order_id, 0)} filled"
        for row in intents
        if row.filled_qty > filled.get(row.client_order_id, 0)
    ]
    found.booked_twice = twice
    found.never_booked = sorted(broker_ids - rows.keys())


def _compare_holdings(
    found: Tally,
    server: AlpacaStandIn,
    intents: Sequence[Row[Any]],
    held: Sequence[Row[str, str, int]],
    positions: dict[str, int],
) -> None:
    """Each book's holdings against the broker's fills of its orders; the account's
    positions against every book's holdings together."""
    book_of_order = {}
    coid_book = {row.client_order_id: row.book for row in intents}
    for order in server.orders.values():
        book_of_order[order.id] = coid_book.get(order.client_order_id, "(unknown)")
    broker: dict[str, dict[str, int]] = defaultdict(lambda: defaultdict(int))
    for fill in server.fills:
        sign = 1 if fill.side is BrokerSide.BUY else -1
        broker[book_of_order[fill.order_id]][fill.symbol] += sign * int(fill.qty)
    book: dict[str, dict[str, int]] = defaultdict(dict)
    total: dict[str, int] = defaultdict(int)
    for name, symbol, shares in held:
        book[name][symbol] = shares
        total[symbol] += shares
    names = sorted({row.book for row in intents} | book.keys() | broker.keys())
    found.books = {name: BookSide(dict(book[name]), dict(broker[name])) for name in names}
    found.account = BookSide(dict(total), positions)


def _nonzero(shares: dict[str, int]) -> dict[str, int]:
    return {symbol: count for symbol, count in shares.items() if count}
