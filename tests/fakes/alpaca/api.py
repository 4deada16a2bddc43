"""The endpoints: one function per operation of the spec the stand-in serves, and the route
table that finds them. Each takes the account and the call and answers a Reply, or raises
the Refusal Alpaca would answer."""

from __future__ import annotations

import re
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass
from datetime import date, datetime, time, timedelta
from typing import Any, TypeVar

from tests.fakes.alpaca.book import Brokerage
from tests.fakes.alpaca.model import Fill, StoredOrder, asset_id
from tests.fakes.alpaca.order_request import parse_order_request
from tests.fakes.alpaca.refusals import Refusal, invalid, malformed, not_found, not_simulated
from tests.fakes.alpaca.sessions import NEW_YORK
from tests.fakes.alpaca.wire import (
    account_json,
    calendar_day_json,
    clock_json,
    fill_json,
    order_json,
    position_json,
)

# The spec's ActivityType; the stand-in has only FILL activities, the others list empty.
ACTIVITY_TYPES = frozenset(
    {
        "FILL",
        "TRANS",
        "MISC",
        "ACATC",
        "ACATS",
        "CFEE",
        "CGD",
        "CSD",
        "CSW",
        "DIV",
        "DIVCGL",
        "DIVCGS",
        "DIVFEE",
        "DIVFT",
        "DIVNRA",
        "DIVROC",
        "DIVTW",
        "DIVTXEX",
        "FEE",
        "INT",
        "INTNRA",
        "INTTW",
        "JNL",
        "JNLC",
        "JNLS",
        "MA",
        "NC",
        "OPASN",
        "OPCA",
        "OPCSH",
        "OPEXC",
        "OPEXP",
        "OPTRD",
        "PTC",
        "PTR",
        "REORG",
        "SPIN",
        "SPLIT",
        "FOPT",
    }
)
ORDER_LIMIT_DEFAULT, ORDER_LIMIT_MAX = 50, 500
PAGE_SIZE_DEFAULT, PAGE_SIZE_MAX = 100, 100
_T = TypeVar("_T")


@dataclass(frozen=True)
class Call:
    """A request as an endpoint sees it: the route's captures, the query, the parsed body."""

    params: tuple[str, ...]
    query: Mapping[str, list[str]]
    body: Any  # the JSON body with numbers as int/Decimal, or None when absent or not JSON


@dataclass(frozen=True)
class Reply:
    """An endpoint's answer: a status and a JSON value (None: no body, as 204)."""

    status: int
    body: Any = None


Endpoint = Callable[[Brokerage, Call], Reply]


# -- query parameters ------------------------------------------------------------


def _one(call: Call, name: str) -> str | None:
    values = call.query.get(name)
    return values[-1] if values else None


def _choice(call: Call, name: str, choices: Sequence[str], default: str) -> str:
    value = _one(call, name) or default
    if value not in choices:
        raise invalid(f"invalid {name}: {value}")
    return value


def _bounded_int(call: Call, name: str, default: int, high: int) -> int:
    text = _one(call, name)
    if text is None:
        return default
    if not text.isdigit() or not 1 <= int(text) <= high:
        raise invalid(f"{name} must be an integer from 1 to {high}")
    return int(text)


def _moment(call: Call, name: str) -> datetime | None:
    """A time parameter: RFC 3339, or a bare date meaning its midnight in New York."""
    text = _one(call, name)
    if text is None:
        return None
    try:
        if len(text) == 10:
            return datetime.combine(date.fromisoformat(text), time(), NEW_YORK)
        moment = datetime.fromisoformat(text)
    except ValueError:
        raise invalid(f"invalid {name}: {text}") from None
    if moment.tzinfo is None:
        raise invalid(f"invalid {name}: {text} (no timezone)")
    return moment


def _window(items: list[_T], call: Call, when: Callable[[_T], datetime]) -> list[_T]:
    """``after`` and ``until`` (both exclusive) applied, then ``direction`` (default desc)."""
    after, until = _moment(call, "after"), _moment(call, "until")
    kept = [
        item
        for item in items
        if (after is None or when(item) > after) and (until is None or when(item) < until)
    ]
    return kept[::-1] if _choice(call, "direction", ("asc", "desc"), "desc") == "desc" else kept


# -- account and positions ---------------------------------------------------------


def get_account(book: Brokerage, call: Call) -> Reply:
    """GET /v2/account."""
    return Reply(200, account_json(book))


def list_positions(book: Brokerage, call: Call) -> Reply:
    """GET /v2/positions, by symbol."""
    return Reply(200, [position_json(book, book.positions[s]) for s in sorted(book.positions)])


def get_position(book: Brokerage, call: Call) -> Reply:
    """GET /v2/positions/{symbol_or_asset_id}: 404 when flat, as Alpaca."""
    wanted = call.params[0]
    for symbol, position in book.positions.items():
        if wanted in (symbol, asset_id(symbol)):
            return Reply(200, position_json(book, position))
    raise not_found("position does not exist")


# -- orders ------------------------------------------------------------------------


def post_order(book: Brokerage, call: Call) -> Reply:
    """POST /v2/orders: 200 with the Order, or Alpaca's 4xx."""
    if call.body is None:
        raise malformed()
    return Reply(200, order_json(book.submit(parse_order_request(call.body))))


_ORDER_STATUS_FILTER: dict[str, Callable[[StoredOrder], bool]] = {
    "open": lambda order: order.is_open,
    "closed": lambda order: not order.is_open,
    "all": lambda order: True,
}


def list_orders(book: Brokerage, call: Call) -> Reply:
    """GET /v2/orders: status, limit, after/until, direction, symbols, side."""
    wanted = _ORDER_STATUS_FILTER[_choice(call, "status", tuple(_ORDER_STATUS_FILTER), "open")]
    limit = _bounded_int(call, "limit", ORDER_LIMIT_DEFAULT, ORDER_LIMIT_MAX)
    symbols = set(filter(None, (_one(call, "symbols") or "").split(",")))
    side = _one(call, "side")
    orders = [
        order
        for order in book.orders.values()
        if wanted(order)
        and (not symbols or order.symbol in symbols)
        and (side is None or order.side == side)
    ]
    chosen = _window(orders, call, lambda order: order.created_at)[:limit]
    return Reply(200, [order_json(order) for order in chosen])


def get_order(book: Brokerage, call: Call) -> Reply:
    """GET /v2/orders/{order_id}."""
    return Reply(200, order_json(book.find(call.params[0])))


def get_order_by_client_order_id(book: Brokerage, call: Call) -> Reply:
    """GET /v2/orders:by_client_order_id: how a client finds an order whose answer it lost."""
    client_order_id = _one(call, "client_order_id")
    if not client_order_id:
        raise invalid("client_order_id is required")
    return Reply(200, order_json(book.find_by_client_order_id(client_order_id)))


def cancel_order(book: Brokerage, call: Call) -> Reply:
    """DELETE /v2/orders/{order_id}: 204, or 422 once the order is done."""
    book.cancel(call.params[0])
    return Reply(204)


def cancel_all_orders(book: Brokerage, call: Call) -> Reply:
    """207 with the spec's CanceledOrderResponse for each order it cancelled."""
    return Reply(207, [{"id": order.id, "status": 200} for order in book.cancel_open()])


def replace_order(book: Brokerage, call: Call) -> Reply:
    """PATCH /v2/orders/{order_id}: in the spec, not simulated."""
    raise not_simulated("PATCH /v2/orders/{order_id} (replace)")


def close_positions(book: Brokerage, call: Call) -> Reply:
    """DELETE /v2/positions and /v2/positions/{symbol_or_asset_id}: not simulated."""
    raise not_simulated("closing positions through DELETE /v2/positions")


# -- activities --------------------------------------------------------------------


def _page_of_fills(fills: list[Fill], call: Call) -> Reply:
    """``date``, ``after``/``until``, ``direction``, then the page after ``page_token``."""
    day = _moment(call, "date")
    if day is not None:
        fills = [f for f in fills if f.transaction_time.astimezone(NEW_YORK).date() == day.date()]
    ordered = _window(fills, call, lambda fill: fill.transaction_time)
    size = _bounded_int(call, "page_size", PAGE_SIZE_DEFAULT, PAGE_SIZE_MAX)
    token = _one(call, "page_token")
    if token is not None:
        ids = [fill.id for fill in ordered]
        if token not in ids:
            raise invalid(f"invalid page_token: {token}")
        ordered = ordered[ids.index(token) + 1 :]
    return Reply(200, [fill_json(fill) for fill in ordered[:size]])


def get_activities(book: Brokerage, call: Call) -> Reply:
    """GET /v2/account/activities: activity_types or category, then paging."""
    types, category = _one(call, "activity_types"), _one(call, "category")
    if types is not None and category is not None:
        raise invalid("activity_types and category cannot be used together")
    wanted = set(types.split(",")) if types else set(ACTIVITY_TYPES)
    if not wanted <= ACTIVITY_TYPES:
        raise invalid(f"invalid activity_types: {types}")
    if category is not None:
        _choice(call, "category", ("trade_activity", "non_trade_activity"), category)
    fills = book.fills if "FILL" in wanted and category != "non_trade_activity" else []
    return _page_of_fills(fills, call)


def get_activities_of_type(book: Brokerage, call: Call) -> Reply:
    """GET /v2/account/activities/{activity_type}."""
    kind = call.params[0]
    if kind not in ACTIVITY_TYPES:
        raise invalid(f"invalid activity_type: {kind}")
    return _page_of_fills(book.fills if kind == "FILL" else [], call)


# -- clock and calendar --------------------------------------------------------------


def get_clock(book: Brokerage, call: Call) -> Reply:
    """GET /v2/clock, from the test's clock."""
    return Reply(200, clock_json(book.calendar, book.now))


def _calendar_day(call: Call, name: str, default: date) -> date:
    try:
        moment = _moment(call, name)
    except Refusal as refusal:  # the calendar's bad parameters are 400s, not 422s
        raise malformed(refusal.message) from None
    return moment.astimezone(NEW_YORK).date() if moment is not None else default


def get_calendar(book: Brokerage, call: Call) -> Reply:
    """GET /v2/calendar: start/end (default all XNYS knows), by trading or settlement date."""
    calendar = book.calendar
    start = _calendar_day(call, "start", calendar.first_day)
    end = _calendar_day(call, "end", calendar.last_day)
    date_type = _one(call, "date_type") or "TRADING"
    if date_type not in ("TRADING", "SETTLEMENT"):
        raise malformed(f"invalid date_type: {date_type}")
    if date_type == "TRADING":
        sessions = calendar.sessions(start, end)
    else:  # settlement is T+1: the trades settling in [start, end] began up to a week before
        sessions = [
            session
            for session in calendar.sessions(start - timedelta(days=7), end)
            if start <= calendar.settlement_day(session) <= end
        ]
    return Reply(200, [calendar_day_json(calendar, session) for session in sessions])


# -- routing -------------------------------------------------------------------------

_SEGMENT = r"([^/]+)"
ROUTES: tuple[tuple[str, re.Pattern[str], Endpoint], ...] = tuple(
    (method, re.compile(pattern), endpoint)
    for method, pattern, endpoint in (
        ("GET", "/v2/account", get_account),
        ("GET", "/v2/account/activities", get_activities),
        ("GET", f"/v2/account/activities/{_SEGMENT}", get_activities_of_type),
        ("GET", "/v2/orders", list_orders),
        ("POST", "/v2/orders", post_order),
        ("DELETE", "/v2/orders", cancel_all_orders),
        ("GET", "/v2/orders:by_client_order_id", get_order_by_client_order_id),
        ("GET", f"/v2/orders/{_SEGMENT}", get_order),
        ("DELETE", f"/v2/orders/{_SEGMENT}", cancel_order),
        ("PATCH", f"/v2/orders/{_SEGMENT}", replace_order),
        ("GET", "/v2/positions", list_positions),
        ("GET", f"/v2/positions/{_SEGMENT}", get_position),
        ("DELETE", "/v2/positions", close_positions),
        ("DELETE", f"/v2/positions/{_SEGMENT}", close_positions),
        ("GET", "/v2/clock", get_clock),
        ("GET", "/v2/calendar", get_calendar),
    )
)


def dispatch(
    book: Brokerage, method: str, path: str, query: Mapping[str, list[str]], body: Any
) -> Reply:
    """Run the endpoint for ``method`` and ``path``; 405 for a known path, 404 for the rest."""
    path_known = False
    for route_method, pattern, endpoint in ROUTES:
        match = pattern.fullmatch(path)
        if match is None:
            continue
        path_known = True
        if route_method == method:
            return endpoint(book, Call(match.groups(), query, body))
    if path_known:
        raise Refusal(405, 40510000, "method not allowed")
    raise not_found("endpoint not found")
