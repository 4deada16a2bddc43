"""A thin client of Alpaca's Trading API v2: one HTTP request per call, never two.

Why our own and not alpaca-py: alpaca-py (0.44) retries a POST by itself on 429
and 504, and a 504 can come after Alpaca has accepted the order, so its retry is
how a ghost or duplicate order is placed; and it sets no HTTP timeout, so a call
can hang an activity until Temporal's own timeout. Temporal owns retries here:
this client sends each request once, with a timeout from the settings
(``QUANTDESK_ALPACA__TIMEOUT_SECONDS``), and turns every failure into a typed
``BrokerError`` (``alpaca_errors``) that says whether another attempt can help.
A submission whose answer was lost is safe to send again because the caller
chooses its ``client_order_id`` and Alpaca refuses that id for ever after
(``DuplicateClientOrderId``: look the order up by it).

Sync on purpose: the activities run sync in threads. Answers are read into the
pydantic models of ``alpaca_wire``, numbers as ``Decimal`` and times in UTC.
"""

from __future__ import annotations

import json
from collections.abc import Mapping, Sequence
from datetime import UTC, date, datetime
from decimal import Decimal
from types import TracebackType
from typing import Any, Self, TypeVar
from urllib.parse import quote

import httpx
from pydantic import TypeAdapter, ValidationError

from shared.broker.alpaca_errors import AlpacaErrors, Call
from shared.broker.alpaca_wire import (
    AlpacaAccount,
    AlpacaFill,
    AlpacaOrder,
    AlpacaPosition,
    MarketClock,
    OrderRequest,
    TradingDay,
)
from shared.config import AlpacaSettings
from shared.errors import InvalidInput

T = TypeVar("T")

KEY_HEADER = "APCA-API-KEY-ID"
SECRET_HEADER = "APCA-API-SECRET-KEY"
FILLS_PAGE_SIZE = 100  # the most Alpaca gives per page
ORDERS_LIMIT_MAX = 500
ORDER_STATUSES = ("open", "closed", "all")
# A 404 on these is an answer: nothing by that name.
_NONE_IF_ABSENT = frozenset({404})
# A 422 on cancelling is an answer too: the order is past cancelling; its state says why.
_CANCEL_TOO_LATE = frozenset({422})

_ORDER = TypeAdapter(AlpacaOrder)
_ORDERS = TypeAdapter(list[AlpacaOrder])
_POSITION = TypeAdapter(AlpacaPosition)
_POSITIONS = TypeAdapter(list[AlpacaPosition])
_ACCOUNT = TypeAdapter(AlpacaAccount)
_FILLS = TypeAdapter(list[AlpacaFill])
_CLOCK = TypeAdapter(MarketClock)
_CALENDAR = TypeAdapter(list[TradingDay])


def _rfc3339(when: datetime, field: str) -> str:
    """A time parameter as Alpaca documents it (``2025-06-24T14:30:00Z``)."""
    if when.tzinfo is None:
        raise InvalidInput(field, f"{when} has no timezone", fix="Pass an aware UTC time.")
    return when.astimezone(UTC).isoformat().replace("+00:00", "Z")


def _segment(value: str) -> str:
    """A path segment (an id, a symbol such as BTC/USD) escaped whole."""
    return quote(value, safe="")


class AlpacaClient:
    """Alpaca's Trading API v2 for one account: orders, positions, fills, clock, calendar.

    Without both keys it raises ``ConfigError`` when built, before any request.
    Use it as a context manager, or ``close()`` it.
    """

    def __init__(self, settings: AlpacaSettings) -> None:
        key_id, secret = settings.keys()
        self._url = settings.url
        self._timeout = settings.timeout_seconds
        self._errors = AlpacaErrors(self._url, secrets=(secret, key_id))
        # The transport is explicit so that nothing retries: httpx's `retries` (failed
        # connects only) stays 0, and redirects are not followed.
        self._http = httpx.Client(
            base_url=self._url,
            headers={KEY_HEADER: key_id, SECRET_HEADER: secret, "Accept": "application/json"},
            timeout=httpx.Timeout(settings.timeout_seconds),
            transport=httpx.HTTPTransport(retries=0),
            follow_redirects=False,
        )

    def __repr__(self) -> str:
        return f"AlpacaClient({self._url!r})"

    def close(self) -> None:
        """Close the connections."""
        self._http.close()

    def __enter__(self) -> Self:
        return self

    def __exit__(
        self,
        exc_type: type[BaseException] | None,
        exc: BaseException | None,
        traceback: TracebackType | None,
    ) -> None:
        self.close()

    # -- the one way a request is sent -------------------------------------------------

    def _send(
        self,
        call: Call,
        *,
        params: Mapping[str, str] | None = None,
        body: dict[str, Any] | None = None,
        answers: frozenset[int] = frozenset(),
    ) -> httpx.Response:
        """Send ``call`` once; a 2xx, or a status in ``answers``, is returned, the rest raised.

        Chains are dropped (``from None``): httpx's exceptions hold the request, whose
        headers carry the keys.
        """
        try:
            response = self._http.request(call.method, call.path, params=params, json=body)
        except httpx.TimeoutException:
            raise self._errors.timeout_error(call, self._timeout) from None
        except (httpx.NetworkError, httpx.RemoteProtocolError, httpx.ProxyError) as error:
            raise self._errors.connection_error(call, error) from None
        if response.is_success or response.status_code in answers:
            return response
        raise self._errors.status_error(call, response) from None

    def _read(self, call: Call, response: httpx.Response, shape: TypeAdapter[T]) -> T:
        """The answer's JSON as ``shape``; numbers never pass through a float."""
        try:
            value = json.loads(response.content, parse_float=Decimal)
        except ValueError:
            problem = f"HTTP {response.status_code} with a body that is not JSON"
            raise self._errors.contract_error(call, f"{problem}: {response.text}") from None
        try:
            return shape.validate_python(value)
        except ValidationError as error:
            problems = "; ".join(
                f"{'.'.join(str(part) for part in item['loc']) or 'the body'}: {item['msg']}"
                for item in error.errors()[:3]
            )
            raise self._errors.contract_error(call, problems) from None

    def _get(self, path: str, shape: TypeAdapter[T], params: Mapping[str, str] | None = None) -> T:
        call = Call("GET", path)
        return self._read(call, self._send(call, params=params), shape)

    def _get_if_any(
        self, path: str, shape: TypeAdapter[T], params: Mapping[str, str] | None = None
    ) -> T | None:
        call = Call("GET", path)
        response = self._send(call, params=params, answers=_NONE_IF_ABSENT)
        return None if response.status_code == 404 else self._read(call, response, shape)

    # -- account and positions -----------------------------------------------------------

    def account(self) -> AlpacaAccount:
        """Cash, buying power, equity and the account's status."""
        return self._get("/v2/account", _ACCOUNT)

    def positions(self) -> list[AlpacaPosition]:
        """Every open position."""
        return self._get("/v2/positions", _POSITIONS)

    def position(self, symbol: str) -> AlpacaPosition | None:
        """The position in ``symbol``; None when flat (Alpaca's 404)."""
        return self._get_if_any(f"/v2/positions/{_segment(symbol)}", _POSITION)

    # -- orders ---------------------------------------------------------------------------

    def submit_order(self, request: OrderRequest) -> AlpacaOrder:
        """Place ``request``, once. Lost answers raise ``BrokerUnavailable`` (the order may
        exist); a used client order id raises ``DuplicateClientOrderId`` (it does)."""
        call = Call("POST", "/v2/orders", client_order_id=request.client_order_id)
        return self._read(call, self._send(call, body=request.wire()), _ORDER)

    def order_by_client_id(self, client_order_id: str) -> AlpacaOrder | None:
        """The order placed under ``client_order_id``; None if Alpaca has none (404)."""
        params = {"client_order_id": client_order_id}
        return self._get_if_any("/v2/orders:by_client_order_id", _ORDER, params)

    def order(self, order_id: str) -> AlpacaOrder:
        """The order with Alpaca's id ``order_id`` (an unknown id is ``BrokerRefused``)."""
        return self._get(f"/v2/orders/{_segment(order_id)}", _ORDER)

    def orders(
        self,
        status: str = "all",
        after: datetime | None = None,
        limit: int = ORDERS_LIMIT_MAX,
        symbols: Sequence[str] | None = None,
    ) -> list[AlpacaOrder]:
        """Orders submitted after ``after`` (exclusive), newest first, at most ``limit``."""
        if status not in ORDER_STATUSES:
            raise InvalidInput("status", f"{status!r} is not one of {', '.join(ORDER_STATUSES)}")
        if not 1 <= limit <= ORDERS_LIMIT_MAX:
            raise InvalidInput("limit", f"{limit} is not from 1 to {ORDERS_LIMIT_MAX}")
        params = {"status": status, "limit": str(limit)}
        if after is not None:
            params["after"] = _rfc3339(after, "after")
        if symbols:
            params["symbols"] = ",".join(symbols)
        return self._get("/v2/orders", _ORDERS, params)

    def cancel_order(self, order_id: str) -> AlpacaOrder:
        """Ask Alpaca to cancel, then read the order back: ``pending_cancel`` or
        ``canceled``, or, when it was past cancelling (422), the state it ended in."""
        self._send(Call("DELETE", f"/v2/orders/{_segment(order_id)}"), answers=_CANCEL_TOO_LATE)
        return self.order(order_id)

    # -- fills ----------------------------------------------------------------------------

    def fills(
        self, after: datetime | None = None, until: datetime | None = None
    ) -> list[AlpacaFill]:
        """Every execution after ``after`` and before ``until`` (both exclusive), oldest
        first: FILL activities, page after page to the end."""
        call = Call("GET", "/v2/account/activities/FILL")
        params = {"direction": "asc", "page_size": str(FILLS_PAGE_SIZE)}
        if after is not None:
            params["after"] = _rfc3339(after, "after")
        if until is not None:
            params["until"] = _rfc3339(until, "until")
        found: list[AlpacaFill] = []
        seen: set[str] = set()
        while True:
            page = self._read(call, self._send(call, params=params), _FILLS)
            if any(fill.id in seen for fill in page):
                raise self._errors.contract_error(
                    call, f"page_token {params['page_token']} repeated fills of the page before"
                )
            found += page
            seen.update(fill.id for fill in page)
            if len(page) < FILLS_PAGE_SIZE:
                return found
            params["page_token"] = page[-1].id

    # -- the market's hours --------------------------------------------------------------

    def clock(self) -> MarketClock:
        """Whether the market is open now, and when it next opens and closes."""
        return self._get("/v2/clock", _CLOCK)

    def calendar(self, start: date, end: date) -> list[TradingDay]:
        """The sessions from ``start`` to ``end`` (both included), early closes kept."""
        params = {"start": start.isoformat(), "end": end.isoformat()}
        return self._get("/v2/calendar", _CALENDAR, params)
