"""Did the runs under faults do what the fault-free runs did? Decisions and booked trades.

Run ``i`` of each phase has the same input but its own book (``base-<i>``,
``chaos-<i>``), so the books must end alike: the same trades (symbol, side,
shares, price), each booked once. Trades are read from the SQL trades table
itself, not from the runs' results: a trade booked twice by a retried activity
would show there and nowhere else. The table's unique idempotency key makes a
second row under one key impossible; a duplicate would be the same order booked
under another key, so every book is compared trade by trade with its twin.
"""

from __future__ import annotations

from collections import Counter
from dataclasses import dataclass, field
from decimal import Decimal

from sqlalchemy import create_engine, func, select

from shared.config import Settings
from shared.portfolio.schema import portfolios, trades

Fill = tuple[str, str, int, Decimal]
"""A booked trade without its key or clock: symbol, side, shares, price."""


@dataclass(frozen=True)
class Ledger:
    """The trades table as the bench reads it."""

    fills: dict[str, list[Fill]] = field(default_factory=dict)
    """Each book's trades, oldest first."""
    keys_used_twice: int = 0

    @classmethod
    def read(cls, settings: Settings) -> Ledger:
        """Every book's trades, and how many idempotency keys appear more than once."""
        engine = create_engine(settings.resolved_database_url)
        try:
            with engine.connect() as conn:
                rows = conn.execute(
                    select(portfolios.c.name, trades.c.symbol, trades.c.side)
                    .add_columns(trades.c.shares, trades.c.price)
                    .join(portfolios, trades.c.portfolio_id == portfolios.c.id)
                    .order_by(trades.c.id)
                ).all()
                twice = conn.execute(
                    select(func.count()).select_from(
                        select(trades.c.idempotency_key)
                        .group_by(trades.c.idempotency_key)
                        .having(func.count() > 1)
                        .subquery()
                    )
                ).scalar_one()
        finally:
            engine.dispose()
        fills: dict[str, list[Fill]] = {}
        for book, symbol, side, shares, price in rows:
            fills.setdefault(book, []).append((symbol, str(side), int(shares), price))
        return cls(fills, int(twice))

    def count(self, book: str) -> int:
        """How many trades ``book`` holds."""
        return len(self.fills.get(book, []))

    def extra(self, book: str, twin: str) -> int:
        """Trades in ``book`` beyond those of ``twin``: each one booked more than once."""
        surplus = Counter(self.fills.get(book, [])) - Counter(self.fills.get(twin, []))
        return sum(surplus.values())

    def same(self, book: str, twin: str) -> bool:
        """Whether ``book`` holds exactly ``twin``'s trades."""
        return Counter(self.fills.get(book, [])) == Counter(self.fills.get(twin, []))


def rating_mismatches(base: dict[str, str], chaos: dict[str, str]) -> list[str]:
    """Tickers whose rating differs between two runs of one input (or is in one run only)."""
    return sorted(
        f"{ticker}: {base.get(ticker, 'none')} vs {chaos.get(ticker, 'none')}"
        for ticker in base.keys() | chaos.keys()
        if base.get(ticker) != chaos.get(ticker)
    )
