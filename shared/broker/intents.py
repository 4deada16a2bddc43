"""Order intents: the client order id a broker dedupes on, and how an intent's status moves.

An intent is written before anything is sent, under a client order id derived from
the book, the workflow id and the order's index. A retried activity or a re-run of
the workflow therefore sends the same id, and the broker refuses a second order
with an id it knows: an order reaches the broker once. Statuses only move forward;
a terminal one never changes again.
"""

from __future__ import annotations

import hashlib
import json
import re
from decimal import Decimal

from shared.broker.models import (
    MAX_ORDER_INDEX,
    BrokerFill,
    IntentStatus,
    OrderIntent,
)
from shared.errors import InvalidInput
from shared.portfolio.models import price

SLUG_LENGTH = 12
"""Characters of the book's name an id shows, so a person can tell whose order it is."""
DIGEST_LENGTH = 20
"""Hex digits of SHA-256 over the book and the workflow id: 80 bits, collisions negligible."""

S = IntentStatus
OPEN = frozenset({S.PENDING, S.SUBMITTED, S.PARTIALLY_FILLED})
"""Statuses whose unfilled shares may still trade."""
TERMINAL = frozenset(S) - OPEN
NEXT: dict[IntentStatus, frozenset[IntentStatus]] = {
    # Pending may have reached the broker unrecorded, so anything the broker says can follow.
    S.PENDING: frozenset(S) - {S.PENDING},
    S.SUBMITTED: frozenset({S.PARTIALLY_FILLED, S.FILLED, S.CANCELED, S.EXPIRED, S.REJECTED}),
    S.PARTIALLY_FILLED: frozenset({S.FILLED, S.CANCELED, S.EXPIRED}),
} | {status: frozenset() for status in TERMINAL}
"""The statuses each may move to."""
FILLABLE = OPEN | {S.CANCELED, S.EXPIRED}
"""Statuses a fill may arrive in: a canceled or expired order keeps what filled before."""
ACCEPTED = frozenset(S) - {S.PENDING, S.REFUSED}
"""Statuses of an order the broker accepted."""
SET_BY_FILLS = frozenset({S.PARTIALLY_FILLED, S.FILLED})
"""Statuses only a booked fill sets, so an intent's filled shares always match its fills."""
NOT_TRADING = frozenset({S.REFUSED, S.REJECTED})
"""Intents that never reached the market: they count against no cap."""


def client_order_id(book: str, workflow_id: str, index: int) -> str:
    """``qd-<book slug>-<digest>-<index>``: at most 48 characters of ``[A-Za-z0-9-]``, the
    same for the same arguments, different for different ones (the digest covers the book
    and the workflow id whole, however long; the index is spelled out)."""
    if not 0 <= index <= MAX_ORDER_INDEX:
        raise InvalidInput("order_index", f"{index} is not within 0..{MAX_ORDER_INDEX}")
    slug = re.sub(r"[^A-Za-z0-9]+", "-", book)[:SLUG_LENGTH].strip("-") or "book"
    digest = hashlib.sha256(json.dumps([book, workflow_id]).encode()).hexdigest()
    return f"qd-{slug}-{digest[:DIGEST_LENGTH]}-{index}"


def moves(intent: OrderIntent, status: IntentStatus) -> bool:
    """Whether setting ``status`` changes ``intent`` (False: it is there already, as after a
    retry); a move the statuses do not allow is refused."""
    if status is intent.status:
        return False
    if status not in NEXT[intent.status]:
        raise InvalidInput(
            "status",
            f"order {intent.client_order_id} is {intent.status.value}; it cannot become "
            f"{status.value}"
            + (" (a terminal status never changes)" if intent.status in TERMINAL else ""),
        )
    return True


def after_fill(intent: OrderIntent, fill: BrokerFill) -> tuple[int, Decimal, IntentStatus]:
    """The intent's filled shares, average fill price and status once ``fill`` is booked.

    A fill must be of the intent's symbol and side and fit in its unfilled shares."""
    problem = None
    if (fill.symbol, fill.side) != (intent.symbol, intent.side):
        problem = (
            f"is {fill.side.value} {fill.symbol}, the order {intent.side.value} {intent.symbol}"
        )
    elif intent.filled_qty + fill.qty > intent.qty:
        problem = f"of {fill.qty} overfills the order: {intent.filled_qty} of {intent.qty} filled"
    elif intent.status not in FILLABLE:
        problem = f"arrived for an order that is {intent.status.value}"
    if problem:
        raise InvalidInput(
            "fill",
            f"fill {fill.fill_id} of order {intent.client_order_id} {problem}",
            fix="Compare the book with the broker (drift) and adopt the broker's numbers if right.",
        )
    filled = intent.filled_qty + fill.qty
    paid = (intent.avg_fill_price or Decimal(0)) * intent.filled_qty + fill.price * fill.qty
    if intent.status in TERMINAL:
        status = intent.status
    else:
        status = S.FILLED if filled == intent.qty else S.PARTIALLY_FILLED
    return filled, price(paid / filled), status
