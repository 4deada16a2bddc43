"""A strict StockTwits stand-in, written from StockTwits' API documentation (its pages on
responses, parameters and rate limiting) and the shape of the symbol stream as its users'
clients read it, with invented messages of our own.

It serves ``GET /api/2/streams/symbol/{SYMBOL}.json`` as StockTwits does:

- the symbol's latest messages as of ``now`` (a settable clock: a message is in the stream
  once ``now`` has reached its ``created_at``), newest first, 30 a page (``limit`` may ask
  for fewer), only the newest 800 reachable (an older page is empty, as StockTwits answers
  past its cursors' depth);
- cursors: ``max`` keeps messages with an id at most that, ``since`` those with a greater one;
  the answer's ``cursor`` holds ``more`` (older messages remain), ``since`` (the page's newest
  id) and ``max`` (its oldest);
- each message with StockTwits' fields: ``id``, ``body`` (with its HTML entities escaped, as
  StockTwits sends them), ``created_at`` (``2024-03-28T14:01:02Z``), ``user``, ``source``,
  ``symbols``, ``mentioned_users``, ``entities.sentiment`` (``{"basic": "Bullish"}`` or null),
  and ``likes`` (``{"total", "user_ids"}``) only on a message someone liked;
- an unknown symbol is 404 ``{"response": {"status": 404}, "errors": [{"message": "Symbol not
  found"}]}``; past ``per_hour`` requests in a rolling hour, 429 with StockTwits' "Rate limit
  exceeded" body; every answer carries ``X-RateLimit-Limit``, ``-Remaining`` and ``-Reset``
  (Unix seconds);
- a parameter the endpoint does not take is 400 (StockTwits ignores it; refusing it here
  shows the vendor never sends one); ``fail_next`` queues a fault for the next request (a
  status with StockTwits' error body, a slow answer, a dropped connection).

Every request is recorded (symbol and parameters), so a test can count the vendor's calls.
"""

from __future__ import annotations

import html
import time
from collections import deque
from dataclasses import dataclass
from datetime import UTC, datetime
from http.server import BaseHTTPRequestHandler
from typing import Any
from urllib.parse import unquote

from tests.fakes.served import Fault, JsonStandIn  # the tests take Fault from here

PREFIX = "/api/2/streams/symbol/"
PAGE = 30
DEEPEST = 800
HOUR = 3600.0
PARAMS = frozenset({"since", "max", "limit", "filter"})
NOT_FOUND = "Symbol not found"


def limit_message(per_hour: int) -> str:
    """StockTwits' words on a 429."""
    return f"Rate limit exceeded. Client may not make more than {per_hour} requests an hour."


@dataclass(frozen=True)
class Message:
    """One message on a symbol's stream."""

    id: int
    symbol: str
    created_at: datetime
    body: str
    username: str = "trader"
    sentiment: str | None = None
    likes: int = 0

    def row(self, titles: dict[str, str]) -> dict[str, Any]:
        row: dict[str, Any] = {
            "id": self.id,
            "body": html.escape(self.body),
            "created_at": self.created_at.astimezone(UTC).strftime("%Y-%m-%dT%H:%M:%SZ"),
            "user": {
                "id": 1000 + len(self.username),
                "username": self.username,
                "name": self.username.title(),
                "official": False,
                "identity": "User",
                "followers": 12,
                "following": 3,
            },
            "source": {"id": 1149, "title": "StockTwits Web", "url": "https://stocktwits.com"},
            "symbols": [{"id": 1, "symbol": self.symbol, "title": titles[self.symbol]}],
            "mentioned_users": [],
            "entities": {"sentiment": {"basic": self.sentiment} if self.sentiment else None},
        }
        if self.likes:
            row["likes"] = {"total": self.likes, "user_ids": list(range(1, self.likes + 1))}
        return row


@dataclass(frozen=True)
class Request:
    """One request as it arrived: the symbol of its path and its query."""

    symbol: str
    params: dict[str, str]


class FakeStocktwits(JsonStandIn[Fault]):
    """StockTwits on a loopback port; ``base_url`` is what ``QUANTDESK_STOCKTWITS__BASE_URL``
    takes. ``titles`` names the symbols it knows; ``now`` is its clock (None: the real time)."""

    root = "/api/2"
    content_type = "application/json; charset=utf-8"

    def __init__(
        self,
        titles: dict[str, str],
        messages: list[Message],
        *,
        now: datetime | None = None,
        per_hour: int = 200,
    ) -> None:
        super().__init__()
        self.titles = titles
        self.messages = list(messages)
        self.now = now
        self.per_hour = per_hour
        self.requests: list[Request] = []
        self._times: deque[float] = deque()

    def answer(
        self, path: str, params: dict[str, str], handler: BaseHTTPRequestHandler
    ) -> tuple[int, object, dict[str, str]]:
        """Status, JSON body and rate-limit headers of one request (0: dropped)."""
        symbol = unquote(path.removeprefix(PREFIX).removesuffix(".json")).upper()
        with self._lock:
            self.requests.append(Request(symbol, dict(params)))
            fault = self._next_fault()
            limited, headers = self._count()
        if faulted := self._faulted(fault, handler, _error):
            return *faulted, headers
        if limited:
            return 429, _error(429, limit_message(self.per_hour)), headers
        if not path.startswith(PREFIX) or not path.endswith(".json"):
            return 404, _error(404, "Not found"), headers
        unknown = sorted(set(params) - PARAMS)
        if unknown:
            return 400, _error(400, f"this stand-in takes no {', '.join(unknown)}"), headers
        if symbol not in self.titles:
            return 404, _error(404, NOT_FOUND), headers
        return 200, self._stream(symbol, params), headers

    def _count(self) -> tuple[bool, dict[str, str]]:
        """Count this request in the rolling hour: whether it is over the limit, and the
        rate-limit headers StockTwits sends with every answer."""
        now = time.monotonic()
        while self._times and now - self._times[0] > HOUR:
            self._times.popleft()
        self._times.append(now)
        reset = time.time() + (HOUR - (now - self._times[0]))
        return len(self._times) > self.per_hour, {
            "X-RateLimit-Limit": str(self.per_hour),
            "X-RateLimit-Remaining": str(max(self.per_hour - len(self._times), 0)),
            "X-RateLimit-Reset": str(int(reset)),
        }

    def _stream(self, symbol: str, params: dict[str, str]) -> dict[str, Any]:
        now = self.now or datetime.now(UTC)
        posted = sorted(
            (m for m in self.messages if m.symbol == symbol and m.created_at <= now),
            key=lambda m: m.id,
            reverse=True,
        )[:DEEPEST]
        since, most = int(params.get("since", "0")), params.get("max")
        wanted = [m for m in posted if m.id > since and (most is None or m.id <= int(most))]
        page = wanted[: min(int(params.get("limit", PAGE)), PAGE)]
        return {
            "response": {"status": 200},
            "symbol": {"id": 1, "symbol": symbol, "title": self.titles[symbol]},
            "cursor": {
                "more": len(wanted) > len(page),
                "since": page[0].id if page else None,
                "max": page[-1].id if page else None,
            },
            "messages": [m.row(self.titles) for m in page],
        }


def _error(status: int, message: str) -> dict[str, object]:
    return {"response": {"status": status}, "errors": [{"message": message}]}
