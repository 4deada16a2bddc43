"""What the fake vendor servers share.

``ServedInThread``: the lifecycle: bind a loopback port, serve from a daemon thread, stop
cleanly, and cut short the answers a fault keeps waiting. ``GetStandIn``: a quiet server of
GET requests. ``JsonStandIn``: a vendor's JSON API, its requests parsed and its answers
encoded in one place, with the faults a test queues (``Fault``, ``fail_next``); each vendor's
module keeps what is its own (endpoints, error bodies, rate windows)."""

from __future__ import annotations

import json
import threading
from collections import deque
from collections.abc import Callable, Mapping
from dataclasses import dataclass
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from types import TracebackType
from typing import ClassVar, Generic, Self, TypeAlias, TypeVar
from urllib.parse import parse_qs, urlparse

POLL_SECONDS = 0.02
"""How often a serving thread checks for stop(): short, so each test's teardown is quick."""


class ServedInThread:
    """A fake's HTTP server started by ``start`` (or ``with``) and stopped by ``stop``.

    A subclass builds its server in ``_server()``; ``stopping`` is set while it stops, so
    a handler sleeping out a delay (``stopping.wait(delay)``) wakes at once."""

    def __init__(self) -> None:
        self.stopping = threading.Event()
        self._httpd: ThreadingHTTPServer | None = None

    def _server(self) -> ThreadingHTTPServer:
        raise NotImplementedError

    def start(self) -> Self:
        """Bind the port and serve from a daemon thread."""
        self.stopping.clear()
        self._httpd = self._server()
        threading.Thread(
            target=self._httpd.serve_forever, kwargs={"poll_interval": POLL_SECONDS}, daemon=True
        ).start()
        return self

    def stop(self) -> None:
        """Stop serving; answers still being delayed are cut short."""
        self.stopping.set()
        if self._httpd is not None:
            self._httpd.shutdown()
            self._httpd.server_close()
            self._httpd = None

    def __enter__(self) -> Self:
        return self.start()

    def __exit__(
        self,
        exc_type: type[BaseException] | None,
        exc: BaseException | None,
        traceback: TracebackType | None,
    ) -> None:
        self.stop()

    @property
    def port(self) -> int:
        """The bound port."""
        if self._httpd is None:
            raise RuntimeError(f"{type(self).__name__} is not started")
        return self._httpd.server_address[1]


def send(
    handler: BaseHTTPRequestHandler,
    status: int,
    data: bytes,
    content_type: str,
    headers: Mapping[str, str],
) -> None:
    """Write one whole answer: the status, ``Content-Type`` and ``Content-Length`` first, then
    the vendor's own ``headers`` in their order, then the body."""
    handler.send_response(status)
    handler.send_header("Content-Type", content_type)
    handler.send_header("Content-Length", str(len(data)))
    for name, value in headers.items():
        handler.send_header(name, value)
    handler.end_headers()
    handler.wfile.write(data)


class GetStandIn(ServedInThread):
    """A stand-in that answers GET requests, each in ``_get`` on a thread of its own."""

    def _server(self) -> ThreadingHTTPServer:
        stand_in = self

        class Handler(BaseHTTPRequestHandler):
            def log_message(self, format: str, *args: object) -> None:
                """Quiet: a test's output shows its failures, not a line per request."""

            def do_GET(self) -> None:
                stand_in._get(self)

        return ThreadingHTTPServer(("127.0.0.1", 0), Handler)

    def _get(self, handler: BaseHTTPRequestHandler) -> None:
        """Answer the GET request ``handler`` holds."""
        raise NotImplementedError


@dataclass(frozen=True)
class Fault:
    """What the next request gets instead of its answer: after ``delay`` seconds (``stop``
    cuts it short), a dropped connection if ``drop``, else ``status`` with ``message`` in the
    vendor's error body; with neither, the answer it would have had, late."""

    status: int = 0
    message: str = ""
    delay: float = 0.0
    drop: bool = False


FaultT = TypeVar("FaultT", bound=Fault)

Answer: TypeAlias = tuple[int, object] | tuple[int, object, Mapping[str, str]]
"""A JSON stand-in's answer: the status (0: the connection was dropped, nothing is sent), the
body (JSON-encoded, unless already ``bytes``) and, for a vendor that sends some, its own
headers (a ``Content-Type`` among them replaces the stand-in's, as for an HTML error page)."""


class JsonStandIn(GetStandIn, Generic[FaultT]):
    """A vendor's JSON API on a loopback port. A subclass answers each request in ``answer``,
    taking a queued fault, if any, with ``_next_fault`` and playing it with ``_faulted``."""

    content_type: ClassVar[str] = "application/json"
    """The vendor's ``Content-Type`` for JSON, written as it writes it."""
    keep_blank_values: ClassVar[bool] = False
    """Whether an empty query parameter (``?from=``) is kept, for a stand-in that checks it."""
    root: ClassVar[str] = ""
    """The path under which the vendor serves its API, as the base URL its client takes ends."""

    def __init__(self) -> None:
        super().__init__()
        self.faults: deque[FaultT] = deque()
        self._lock = threading.Lock()
        """Held while a request is recorded and counted, as handlers run on threads."""

    @property
    def base_url(self) -> str:
        """What the client's base URL setting takes to reach this stand-in."""
        return f"http://127.0.0.1:{self.port}{self.root}"

    def fail_next(self, fault: FaultT) -> None:
        """Have the next request to arrive get ``fault`` (faults queue: one a request)."""
        self.faults.append(fault)

    def answer(self, path: str, params: dict[str, str], handler: BaseHTTPRequestHandler) -> Answer:
        """The answer to a GET of ``path`` with ``params`` (the handler for its headers)."""
        raise NotImplementedError

    def _target(self, target: str) -> tuple[str, dict[str, str]]:
        """The path and query of a request target; a repeated parameter's last value wins."""
        url = urlparse(target)
        query = parse_qs(url.query, keep_blank_values=self.keep_blank_values)
        return url.path, {name: values[-1] for name, values in query.items()}

    def _get(self, handler: BaseHTTPRequestHandler) -> None:
        status, body, *more = self.answer(*self._target(handler.path), handler)
        if status == 0:
            return
        headers = dict(more[0]) if more else {}
        content_type = headers.pop("Content-Type", self.content_type)
        data = body if isinstance(body, bytes) else json.dumps(body).encode()
        send(handler, status, data, content_type, headers)

    def _next_fault(self) -> FaultT | None:
        """The queued fault this request takes, if any. Called holding ``_lock`` while the
        request is recorded, so concurrent requests take faults in the order recorded."""
        return self.faults.popleft() if self.faults else None

    def _dropped(self, fault: Fault | None, handler: BaseHTTPRequestHandler) -> bool:
        """Wait out ``fault``'s delay, then drop the connection if it says so: whether it did
        (the answer is then status 0: nothing is sent)."""
        if fault is None:
            return False
        if fault.delay:
            self.stopping.wait(fault.delay)
        if fault.drop:
            handler.connection.close()
        return fault.drop

    def _faulted(
        self,
        fault: Fault | None,
        handler: BaseHTTPRequestHandler,
        error: Callable[[int, str], object],
    ) -> tuple[int, object] | None:
        """Play ``fault``: a dropped connection, or its status with ``error(status, message)``,
        the vendor's error body; None when the request is to be answered as usual."""
        if self._dropped(fault, handler):
            return 0, None
        if fault is not None and fault.status:
            return fault.status, error(fault.status, fault.message)
        return None
