"""The broker book's SQL selects and how its rows become records: the queries ``BrokerBook``
composes (intents and fills with their book's name, a day's notional), and the checks of what
a caller sends again or must explain."""

from __future__ import annotations

import json
from collections.abc import Collection, Iterable
from datetime import datetime
from decimal import Decimal
from typing import Any

from pydantic import BaseModel
from sqlalchemy import Connection, Row, Select, select

from shared.broker.guardrails import exchange_day
from shared.broker.intents import NOT_TRADING
from shared.broker.models import Adoption, IntentStatus, OrderIntent, Position
from shared.database import record_of
from shared.errors import InvalidInput
from shared.portfolio.schema import broker_fills, order_intents, portfolios


def select_intents() -> Select[Any]:
    """Intents with their book's name."""
    return select(order_intents, portfolios.c.name.label("book")).join(
        portfolios, portfolios.c.id == order_intents.c.portfolio_id
    )


def select_booked_fills() -> Select[Any]:
    """Fills with their intent's client order id and their book's name."""
    return (
        select(broker_fills, order_intents.c.client_order_id, portfolios.c.name.label("book"))
        .join(order_intents, order_intents.c.id == broker_fills.c.intent_id)
        .join(portfolios, portfolios.c.id == broker_fills.c.portfolio_id)
    )


def with_status(
    query: Select[Any], status: IntentStatus | Collection[IntentStatus] | None
) -> Select[Any]:
    """``query`` of intents narrowed to those in ``status``, when given."""
    if status is None:
        return query
    wanted = {status} if isinstance(status, IntentStatus) else set(status)
    return query.where(order_intents.c.status.in_(wanted))


def day_notional(conn: Connection, intents: Select[Any], at: datetime) -> Decimal:
    """What ``intents`` created on the exchange day ``at`` is in are worth, refused ones aside."""
    start, end = exchange_day(at)
    today = intents.where(
        order_intents.c.created_at >= start,
        order_intents.c.created_at < end,
        order_intents.c.status.not_in(NOT_TRADING),
    )
    return sum((intent_from_row(row).notional for row in conn.execute(today)), Decimal(0))


def differences(
    recorded: BaseModel, given: BaseModel, names: Iterable[str], **given_too: Any
) -> str:
    """Each of the fields ``names`` where ``given`` (or ``given_too``) is not as recorded, as
    ``qty 10 (now 11)``; empty where they agree."""
    return ", ".join(
        f"{name} {recorded_value!r} (now {value!r})"
        for name in names
        if (value := given_too[name] if name in given_too else getattr(given, name))
        != (recorded_value := getattr(recorded, name))
    )


def intent_from_row(row: Row[Any]) -> OrderIntent:
    """An intent from a row of ``select_intents``."""
    return record_of(OrderIntent, row)


def said(field: str, text: str) -> str:
    """``text``, which must say something: a halt or an adoption is explained by someone."""
    if not text.strip():
        raise InvalidInput(field, "empty", fix=f"Give the {field}.")
    return text


def positions_json(positions: list[Position]) -> str:
    """Positions as the JSON an adoption's row keeps them in."""
    return json.dumps([position.model_dump(mode="json") for position in positions])


def adoption_from_row(row: Row[Any], book: str) -> Adoption:
    """An adoption of ``book`` from its row, its positions read back from their JSON."""

    def positions(text: str) -> list[Position]:
        return [Position.model_validate(item) for item in json.loads(text)]

    return record_of(
        Adoption,
        row,
        book=book,
        positions_before=positions(row.positions_before),
        positions_after=positions(row.positions_after),
    )
