"""The lifecycle every fake vendor server shares: bind a loopback port, serve from a daemon
thread, stop cleanly, and cut short the answers a fault keeps waiting."""

from __future__ import annotations

import threading
from http.server import ThreadingHTTPServer
from types import TracebackType
from typing import Self

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
