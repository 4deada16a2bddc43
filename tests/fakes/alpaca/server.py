"""AlpacaStandIn: the HTTP server, the controlled clock, fault injection and introspection."""

from __future__ import annotations

import copy
import json
import threading
import time
from collections import Counter
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from datetime import UTC, datetime, timedelta
from decimal import Decimal
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any
from urllib.parse import parse_qs, unquote, urlsplit

from tests.fakes.alpaca.api import dispatch
from tests.fakes.alpaca.book import Brokerage, checked_fill_plan
from tests.fakes.alpaca.faults import Fault, FaultBoard, FaultKind, RateLimiter
from tests.fakes.alpaca.model import Fill, StoredOrder
from tests.fakes.alpaca.refusals import Refusal, not_authorized
from tests.fakes.alpaca.sessions import NyseCalendar
from tests.fakes.served import ServedInThread

# A Tuesday, 10:30 in New York: the market is open unless a test moves the clock.
DEFAULT_NOW = datetime(2025, 6, 24, 14, 30, tzinfo=UTC)
KEY_HEADER = "apca-api-key-id"
SECRET_HEADER = "apca-api-secret-key"
_JSON = {"Content-Type": "application/json; charset=UTF-8"}
_HTML = {"Content-Type": "text/html"}
_GATEWAY_REASONS = {
    502: "Bad Gateway",
    503: "Service Temporarily Unavailable",
    504: "Gateway Time-out",
}


@dataclass(frozen=True)
class RecordedRequest:
    """One request as it arrived, less the secret key: what the client really put on the wire."""

    method: str
    path: str
    query: dict[str, list[str]]
    headers: dict[str, str] = field(repr=False)  # names lower-cased, no APCA-API-SECRET-KEY
    raw: bytes
    body: Any  # the JSON with numbers as int or Decimal (exactly as sent), None if not JSON
    received_at: float  # time.monotonic() on arrival: lets tests measure retry delays


@dataclass(frozen=True)
class FiredFault:
    """An armed fault that went off, and the request it spoiled."""

    fault: Fault  # as armed: kind, pattern and options
    request: RecordedRequest


@dataclass(frozen=True)
class _Answer:
    status: int
    headers: dict[str, str]
    body: bytes = b""
    delay: float = 0.0  # seconds to wait before answering
    drop: bool = False  # close the connection without answering


def _json_answer(status: int, value: Any) -> _Answer:
    if value is None:
        return _Answer(status, {})
    return _Answer(status, dict(_JSON), json.dumps(value).encode())


def _refused(refusal: Refusal) -> _Answer:
    return _json_answer(refusal.status, refusal.body())


def _gateway_page(status: int) -> _Answer:
    """What the load balancer in front of Alpaca sends when the service behind it fails."""
    title = f"{status} {_GATEWAY_REASONS[status]}"
    page = (
        f"<html>\r\n<head><title>{title}</title></head>\r\n<body>\r\n"
        f"<center><h1>{title}</h1></center>\r\n<hr><center>nginx</center>\r\n</body>\r\n</html>\r\n"
    )
    return _Answer(status, dict(_HTML), page.encode())


def _parse_json(raw: bytes) -> Any:
    try:
        return json.loads(raw, parse_float=Decimal) if raw else None
    except ValueError:
        return None


class ControlledClock:
    """The stand-in's now, moved only by the test; moving it opens and closes sessions."""

    def __init__(self, stand_in: AlpacaStandIn) -> None:
        self._stand_in = stand_in

    def now(self) -> datetime:
        """The stand-in's current time (UTC-aware)."""
        with self._stand_in.lock:
            return self._stand_in.book.now

    def set(self, when: datetime) -> None:
        """Move to ``when`` (forward only), crossing every open and close between."""
        with self._stand_in.lock:
            self._stand_in.book.move_to(when)

    def advance(self, delta: timedelta) -> None:
        """Move forward by ``delta``, as ``set`` does."""
        with self._stand_in.lock:
            self._stand_in.book.move_to(self._stand_in.book.now + delta)


class _Handler(BaseHTTPRequestHandler):
    """Reads one request, hands it to the owning stand-in, writes (or withholds) its answer."""

    server: _HttpServer
    protocol_version = "HTTP/1.1"
    # Headers and body go out in two writes; with Nagle on, a keep-alive client waits for the
    # delayed ACK (40 ms) before it sees the body.
    disable_nagle_algorithm = True

    def _serve(self) -> None:
        raw = self.rfile.read(int(self.headers.get("content-length") or 0))
        url = urlsplit(self.path)
        request = RecordedRequest(
            method=self.command,
            path=unquote(url.path),
            query=parse_qs(url.query, keep_blank_values=True),
            headers={
                name.lower(): value
                for name, value in self.headers.items()
                if name.lower() != SECRET_HEADER
            },
            raw=raw,
            body=_parse_json(raw),
            received_at=time.monotonic(),
        )
        stand_in = self.server.stand_in
        answer = stand_in.answer(request, self.headers.get(SECRET_HEADER))
        if answer.delay:
            stand_in.stopping.wait(answer.delay)
        if answer.drop:
            self.close_connection = True
            return
        try:
            self.send_response(answer.status)
            for name, value in answer.headers.items():
                self.send_header(name, value)
            if answer.status != 204:
                self.send_header("Content-Length", str(len(answer.body)))
            self.end_headers()
            self.wfile.write(answer.body)
        except (BrokenPipeError, ConnectionResetError):
            self.close_connection = True  # the client gave up waiting: what a slow answer tests

    do_GET = do_POST = do_DELETE = do_PATCH = do_PUT = _serve

    def log_message(self, format: str, *args: Any) -> None:
        """Silent: pytest output should show the test, not an access log."""


class _HttpServer(ThreadingHTTPServer):
    daemon_threads = True

    def __init__(self, stand_in: AlpacaStandIn, host: str, port: int) -> None:
        self.stand_in = stand_in
        super().__init__((host, port), _Handler)


class AlpacaStandIn(ServedInThread):
    """Alpaca's Trading API v2 for one paper cash account, on a loopback port, for tests.

    ``key_id`` and ``secret`` are the only pair it accepts; ``prices`` (or
    ``set_price``) make symbols tradable; ``now`` starts the controlled clock;
    ``fill_plan`` splits each order's fills; ``rate_limit_per_minute`` is the
    quota behind the 429s.
    """

    def __init__(
        self,
        *,
        key_id: str = "PKSTANDIN0000000000",
        secret: str = "stand-in-secret",
        cash: Decimal = Decimal("100000"),
        prices: Mapping[str, Decimal] | None = None,
        now: datetime = DEFAULT_NOW,
        fill_plan: Sequence[Decimal | float | str] = (1,),
        rate_limit_per_minute: int = 200,
        host: str = "127.0.0.1",
        port: int = 0,
    ) -> None:
        super().__init__()
        self._credentials = (key_id, secret)
        self._address = (host, port)
        self.lock = threading.RLock()
        self.book = Brokerage(cash=cash, now=now, calendar=NyseCalendar(), fill_plan=fill_plan)
        for symbol, price in (prices or {}).items():
            self.book.set_price(symbol, price)
        self.clock = ControlledClock(self)
        self._faults = FaultBoard()
        self._limiter = RateLimiter(rate_limit_per_minute)
        self._requests: list[RecordedRequest] = []
        self._fired: list[FiredFault] = []

    # -- lifecycle -------------------------------------------------------------

    def _server(self) -> _HttpServer:
        return _HttpServer(self, *self._address)

    @property
    def base_url(self) -> str:
        """What a client uses in place of https://paper-api.alpaca.markets."""
        return f"http://127.0.0.1:{self.port}"

    # -- the market, as the test sets it -------------------------------------------

    def set_price(self, symbol: str, price: Decimal) -> None:
        """The symbol's current price; fills happen at it on the next round."""
        with self.lock:
            self.book.set_price(symbol, price)

    def set_position(self, symbol: str, qty: Decimal, avg_entry_price: Decimal) -> None:
        """Start holding ``qty`` shares (0: flat), as if bought before the test."""
        with self.lock:
            self.book.set_position(symbol, qty, avg_entry_price)

    def set_fill_plan(self, fractions: Sequence[Decimal | float | str]) -> None:
        """How orders placed from now on fill: one FILL per fraction, one fraction per round."""
        with self.lock:
            self.book.fill_plan = checked_fill_plan(fractions)

    def step(self) -> None:
        """One fill round at the current time (nothing while the market is closed)."""
        with self.lock:
            self.book.step()

    def set_rate_limit(self, per_minute: int) -> None:
        """A new quota, with a fresh window."""
        with self.lock:
            self._limiter = RateLimiter(per_minute)

    # -- faults ------------------------------------------------------------------

    def arm_fault(
        self,
        kind: FaultKind,
        *,
        times: int = 1,
        method: str | None = None,
        path: str | None = None,
        status: int = 503,
        delay: float = 5.0,
        retry_after: int = 1,
    ) -> None:
        """Spoil the next ``times`` requests matching ``method`` and ``path`` (see Fault)."""
        fault = Fault(kind, times, method, path, status, delay, retry_after)
        with self.lock:
            self._faults.arm(fault)

    def force_rate_limit(self, times: int, *, retry_after: int = 1) -> None:
        """Answer the next ``times`` requests 429, whatever the quota says."""
        self.arm_fault(FaultKind.RATE_LIMITED, times=times, retry_after=retry_after)

    @property
    def faults_pending(self) -> int:
        """Requests the armed faults have yet to spoil: 0 once every fault has fired."""
        with self.lock:
            return self._faults.pending

    @property
    def fired(self) -> list[FiredFault]:
        """Every fault that went off, oldest first, with the request it spoiled."""
        with self.lock:
            return list(self._fired)

    # -- what happened -----------------------------------------------------------

    @property
    def orders(self) -> dict[str, StoredOrder]:
        """Every order ever saved, by id, as copies."""
        with self.lock:
            return {order_id: copy.copy(order) for order_id, order in self.book.orders.items()}

    @property
    def fills(self) -> list[Fill]:
        """Every execution, oldest first."""
        with self.lock:
            return list(self.book.fills)

    @property
    def requests(self) -> list[RecordedRequest]:
        """Every request received, authorised or not, oldest first."""
        with self.lock:
            return list(self._requests)

    def order_counts(self) -> Counter[str]:
        """Saved orders per client_order_id: "exactly one per intent" is all counts being 1."""
        with self.lock:
            return Counter(order.client_order_id for order in self.book.orders.values())

    # -- answering -----------------------------------------------------------------

    def answer(self, request: RecordedRequest, secret: str | None) -> _Answer:
        """Record ``request``, then answer it as Alpaca would, unless an armed fault fires."""
        with self.lock:
            self._requests.append(request)
            if (request.headers.get(KEY_HEADER), secret) != self._credentials:
                return _refused(not_authorized())
            fault = self._faults.take(request.method, request.path)
            if fault is not None:
                self._fired.append(FiredFault(copy.copy(fault), request))
            mono, wall = request.received_at, time.time()
            if fault is not None and fault.kind is FaultKind.RATE_LIMITED:
                headers = self._limiter.refused_headers(mono, wall, fault.retry_after)
                return _Answer(429, headers | _JSON, _rate_limit_body())
            if not self._limiter.admit(mono):
                headers = self._limiter.refused_headers(mono, wall, None)
                return _Answer(429, headers | _JSON, _rate_limit_body())
            quota = self._limiter.headers(mono, wall)
            if fault is not None and fault.kind is FaultKind.ERROR_WITHOUT_SAVE:
                return _server_error(fault.status, quota)
            answer = self._carry_out(request)
        if fault is None:
            return _Answer(answer.status, answer.headers | quota, answer.body)
        return _spoiled(fault, answer, quota)

    def _carry_out(self, request: RecordedRequest) -> _Answer:
        try:
            reply = dispatch(self.book, request.method, request.path, request.query, request.body)
        except Refusal as refusal:
            return _refused(refusal)
        return _json_answer(reply.status, reply.body)


def _rate_limit_body() -> bytes:
    return json.dumps({"code": 42910000, "message": "rate limit exceeded"}).encode()


def _server_error(status: int, quota: dict[str, str]) -> _Answer:
    """A 500 from Alpaca's service (JSON), or a 502/503 page from the gateway in front (HTML)."""
    if status == 500:
        body = {"code": 50010000, "message": "internal server error occurred"}
        answer = _json_answer(500, body)
    else:
        answer = _gateway_page(status)
    return _Answer(answer.status, answer.headers | quota, answer.body)


def _spoiled(fault: Fault, answer: _Answer, quota: dict[str, str]) -> _Answer:
    """What the client gets instead of ``answer``, which has already taken effect."""
    if fault.kind is FaultKind.GATEWAY_TIMEOUT_AFTER_SAVE:
        return _gateway_page(504)
    if fault.kind is FaultKind.DROP_AFTER_SAVE:
        return _Answer(0, {}, drop=True)
    return _Answer(answer.status, answer.headers | quota, answer.body, delay=fault.delay)
