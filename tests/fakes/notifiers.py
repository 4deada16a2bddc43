"""Real receivers for the desk's notices: an HTTP server taking Apprise's JSON webhook posts
(``json://``), and an SMTP server (aiosmtpd) taking its e-mails (``mailto://``).

The webhook answers each post with its path's status in ``statuses`` (200 unless a test sets
500) after ``delay`` seconds (a notifier that hangs), and keeps every post it took, answered
or not.
"""

from __future__ import annotations

import json
import socket
import threading
from dataclasses import dataclass
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from types import TracebackType
from typing import Any, Self

from aiosmtpd.controller import Controller
from aiosmtpd.smtp import SMTP, Envelope, Session

from tests.fakes.served import ServedInThread


@dataclass(frozen=True)
class Post:
    """One webhook post: its path and JSON body."""

    path: str
    body: dict[str, Any]


class Webhook(ServedInThread):
    """A JSON webhook on a loopback port; ``url(path)`` is its Apprise URL."""

    def __init__(self) -> None:
        super().__init__()
        self.posts: list[Post] = []
        self.statuses: dict[str, int] = {}
        self.delay = 0.0
        self._lock = threading.Lock()

    def url(self, path: str = "hook") -> str:
        return f"json://127.0.0.1:{self.port}/{path}"

    def _server(self) -> ThreadingHTTPServer:
        hook = self

        class Handler(BaseHTTPRequestHandler):
            def log_message(self, format: str, *args: object) -> None:
                """Quiet."""

            def do_POST(self) -> None:
                length = int(self.headers.get("Content-Length", "0"))
                body = json.loads(self.rfile.read(length) or b"{}")
                with hook._lock:
                    hook.posts.append(Post(self.path, body))
                if hook.delay and hook.stopping.wait(hook.delay):
                    return
                self.send_response(hook.statuses.get(self.path, 200))
                self.send_header("Content-Length", "0")
                self.end_headers()

        return ThreadingHTTPServer(("127.0.0.1", 0), Handler)


class Mailbox:
    """An SMTP server on a loopback port keeping every message's content;
    ``url(to)`` is Apprise's ``mailto://`` for it (plain SMTP, no login)."""

    def __init__(self) -> None:
        self.messages: list[str] = []
        probe = socket.socket()
        probe.bind(("127.0.0.1", 0))
        self.port = probe.getsockname()[1]
        probe.close()
        self._controller = Controller(self, hostname="127.0.0.1", port=self.port)

    async def handle_DATA(self, server: SMTP, session: Session, envelope: Envelope) -> str:
        content = envelope.content
        self.messages.append(content.decode() if isinstance(content, bytes) else str(content))
        return "250 OK"

    def url(self, to: str = "ops@example.org") -> str:
        return f"mailto://127.0.0.1:{self.port}?mode=insecure&from=desk@example.org&to={to}"

    def __enter__(self) -> Self:
        self._controller.start()
        return self

    def __exit__(
        self,
        exc_type: type[BaseException] | None,
        exc: BaseException | None,
        traceback: TracebackType | None,
    ) -> None:
        self._controller.stop()
