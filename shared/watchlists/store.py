"""Watchlists in SQL, beside the books (the ``portfolio`` component's tables, version 3).

A watchlist is a name and its symbols in the order they were added. The store takes
symbols already checked (``shared.watchlists.symbols.known_symbols``: the data layer is
not the database's business) and refuses what would make a list ambiguous: a taken name,
a symbol already on the list, removing one that is not, or leaving a list empty. Each
change is one transaction.
"""

from __future__ import annotations

from datetime import UTC, datetime
from typing import Any

from pydantic import AwareDatetime, BaseModel, Field, ValidationError
from sqlalchemy import Connection, Row, delete, func, select, update
from sqlalchemy.exc import IntegrityError

from shared.database import SqlStore
from shared.errors import InvalidInput
from shared.portfolio.models import NAME_PATTERN
from shared.portfolio.schema import ensure_schema, watchlist_symbols, watchlists
from shared.watchlists.symbols import symbol_list

CREATE_HINT = "Create it with `quantdesk watchlist create NAME --symbols A,B,C` (or --csv FILE)."


class Watchlist(BaseModel):
    """A named list of symbols, in the order they were added."""

    name: str = Field(pattern=NAME_PATTERN, description="letters, digits, _ . - (up to 64)")
    symbols: list[str] = Field(description="upper-case, each once, in the order added")
    created_at: AwareDatetime
    updated_at: AwareDatetime


class WatchlistStore(SqlStore):
    """Named watchlists in the book's database."""

    ensure_schema = staticmethod(ensure_schema)

    def create(self, name: str, symbols: list[str]) -> Watchlist:
        """A new watchlist of ``symbols``; a taken name or an empty list is refused."""
        listed = symbol_list(symbols)
        now = datetime.now(UTC)
        created = _valid(name, listed, now)
        try:
            with self._engine.begin() as conn:
                row = conn.execute(
                    watchlists.insert()
                    .values(name=name, created_at=now, updated_at=now)
                    .returning(watchlists.c.id)
                ).one()
                _append(conn, row.id, listed)
        except IntegrityError:
            raise InvalidInput(
                "name",
                f"a watchlist called {name!r} exists",
                fix=f"Choose another name, or add to it with `quantdesk watchlist add {name}`.",
            ) from None
        return created

    def add(self, name: str, symbols: list[str]) -> Watchlist:
        """``symbols`` appended to the watchlist; one it holds already is refused, named."""
        listed = symbol_list(symbols)
        with self._engine.begin() as conn:
            row = _row(conn, name)
            held = _symbols(conn, row.id)
            again = [s for s in listed if s in held]
            if again:
                raise InvalidInput(
                    "symbols",
                    f"already on {name}: {', '.join(again)}",
                    fix="Add only symbols the watchlist does not hold.",
                )
            _append(conn, row.id, listed)
            _touch(conn, row.id)
        return self.get(name)

    def remove(self, name: str, symbols: list[str]) -> Watchlist:
        """The watchlist without ``symbols``; one it does not hold, or removing them all, is
        refused."""
        listed = symbol_list(symbols)
        with self._engine.begin() as conn:
            row = _row(conn, name)
            held = _symbols(conn, row.id)
            missing = [s for s in listed if s not in held]
            if missing:
                raise InvalidInput(
                    "symbols",
                    f"not on {name}: {', '.join(missing)}",
                    fix=f"See its symbols with `quantdesk watchlist show {name}`.",
                )
            if len(listed) == len(held):
                raise InvalidInput(
                    "symbols",
                    f"removing every symbol would leave {name} empty",
                    fix=f"Delete it with `quantdesk watchlist delete {name}`.",
                )
            conn.execute(
                delete(watchlist_symbols).where(
                    watchlist_symbols.c.watchlist_id == row.id,
                    watchlist_symbols.c.symbol.in_(listed),
                )
            )
            _touch(conn, row.id)
        return self.get(name)

    def get(self, name: str) -> Watchlist:
        """The watchlist called ``name``, or an error listing the ones there are."""
        with self._engine.connect() as conn:
            row = _row(conn, name)
            return _valid(row.name, _symbols(conn, row.id), row.created_at, row.updated_at)

    def delete(self, name: str) -> None:
        """Forget the watchlist and its symbols."""
        with self._engine.begin() as conn:
            row = _row(conn, name)
            conn.execute(
                delete(watchlist_symbols).where(watchlist_symbols.c.watchlist_id == row.id)
            )
            conn.execute(delete(watchlists).where(watchlists.c.id == row.id))

    def watchlists(self) -> list[Watchlist]:
        """Every watchlist, by name."""
        with self._engine.connect() as conn:
            rows = conn.execute(watchlists.select().order_by(watchlists.c.name)).all()
            return [
                _valid(row.name, _symbols(conn, row.id), row.created_at, row.updated_at)
                for row in rows
            ]


def _valid(
    name: str, symbols: list[str], created: datetime, updated: datetime | None = None
) -> Watchlist:
    """The record, its name checked before anything is written."""
    try:
        return Watchlist(
            name=name, symbols=symbols, created_at=created, updated_at=updated or created
        )
    except ValidationError:
        raise InvalidInput(
            "name",
            f"{name!r} is not a watchlist name",
            fix="Use letters, digits, _ . - (up to 64).",
        ) from None


def _row(conn: Connection, name: str) -> Row[Any]:
    row = conn.execute(watchlists.select().where(watchlists.c.name == name)).first()
    if row is None:
        known = conn.execute(select(watchlists.c.name).order_by(watchlists.c.name)).scalars()
        raise InvalidInput(
            "watchlist",
            f"no watchlist called {name!r} (there are: {', '.join(known) or 'none yet'})",
            fix=CREATE_HINT,
        )
    return row


def _symbols(conn: Connection, watchlist_id: int) -> list[str]:
    query = (
        select(watchlist_symbols.c.symbol)
        .where(watchlist_symbols.c.watchlist_id == watchlist_id)
        .order_by(watchlist_symbols.c.position)
    )
    return list(conn.execute(query).scalars())


def _append(conn: Connection, watchlist_id: int, symbols: list[str]) -> None:
    """The symbols after the list's last position (positions only grow, so removals leave
    gaps but never reorder)."""
    last = conn.execute(
        select(func.max(watchlist_symbols.c.position)).where(
            watchlist_symbols.c.watchlist_id == watchlist_id
        )
    ).scalar_one()
    first = 0 if last is None else last + 1
    conn.execute(
        watchlist_symbols.insert(),
        [
            {"watchlist_id": watchlist_id, "position": first + index, "symbol": symbol}
            for index, symbol in enumerate(symbols)
        ],
    )


def _touch(conn: Connection, watchlist_id: int) -> None:
    conn.execute(
        update(watchlists)
        .where(watchlists.c.id == watchlist_id)
        .values(updated_at=datetime.now(UTC))
    )
