"""Vendor SDK clients kept open across calls, one per destination and event loop.

Building an SDK client builds an HTTP client with its own TLS context, which costs
about 50 ms of CPU here, and every fresh client opens a fresh connection. A chat
worker makes that call for every LLM turn: on a Pipeline's critical path of ten
turns it was half a second, and at a vendor's rate limit a core's worth of CPU
per twenty calls a second. The pool builds each client once and keeps its
connections alive.

A client belongs to the event loop that first used it (its connections do), so the
pool keeps one set per loop and forgets a loop's set when the loop goes away: a
test's loop never hands its clients to the next test's.
"""

from __future__ import annotations

import asyncio
import hashlib
import weakref
from collections.abc import Callable, Hashable
from typing import Any, NamedTuple


class Destination(NamedTuple):
    """What a client is built for; the key is kept only as a digest."""

    sdk: Callable[..., Any]
    key_digest: str
    base_url: str | None
    timeout: float


class ClientPool:
    """Open SDK clients (retries off: Temporal owns retrying), reused by destination."""

    def __init__(self) -> None:
        self._by_loop: weakref.WeakKeyDictionary[asyncio.AbstractEventLoop, dict[Hashable, Any]] = (
            weakref.WeakKeyDictionary()
        )

    def client(
        self, sdk: Callable[..., Any], *, api_key: str, base_url: str | None, timeout: float
    ) -> Any:
        """The open client of ``sdk`` for this destination on the running loop, built on
        first use."""
        where = Destination(sdk, key_digest(api_key), base_url, timeout)
        return self.kept(
            where,
            lambda: sdk(api_key=api_key, base_url=base_url, max_retries=0, timeout=timeout),
        )

    def kept(self, where: Hashable, build: Callable[[], Any]) -> Any:
        """The client kept under ``where`` on the running loop, built by ``build`` on first
        use; ``where`` must hold no secret in the clear (``key_digest``)."""
        clients = self._by_loop.setdefault(asyncio.get_running_loop(), {})
        if where not in clients:
            clients[where] = build()
        return clients[where]


def key_digest(api_key: str | None) -> str:
    """What a pool key holds of an API key: its digest, never the key."""
    return hashlib.sha256((api_key or "").encode()).hexdigest()
