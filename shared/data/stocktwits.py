"""StockTwits: what people post about a symbol, as a source that serves only the present.

StockTwits' public symbol stream (``GET /streams/symbol/{SYMBOL}.json``, no key) answers with
a symbol's latest messages, 30 a page, newest first; its cursors page back from there
(``max``: messages with an id at most that; ``since``: newer than that), about 800 messages
deep at most. Nothing selects by date, so asked about a past day it could only answer with
today's chatter: ``reach`` says social is now-only, and the router never asks it about an
``as_of`` more than a day old. The desk keeps the past by recording: ``quantdesk data record
social`` (``shared.data.social_record``) stores what this vendor reads now in the local
vendor's ``social.jsonl``, each post at its own time, for runs as of later times to read.

Each message becomes a ``SocialPost``: its id, ``created_at`` (UTC), the author's username,
the body (StockTwits escapes HTML entities in it; they are unescaped), the likes' total, and
the sentiment its author tagged (``entities.sentiment.basic``): Bullish is +1 and Bearish -1,
the author's stance rather than a measured strength; an untagged message has none. Only
messages posted in ``(as_of - window, as_of]`` are kept.

Errors map to the router's kinds: an unknown symbol (404 "Symbol not found") is ``NoData``, a
refused read (401, 403) ``NotConfigured``, a 429 ``RateLimited`` (StockTwits counts requests
per hour, about 200 for a client without a login), a 5xx, a timeout or a dropped connection
``VendorFailure``. Each request first passes the desk's quota (``gate``; ``DEFAULT_QUOTAS['stocktwits']`` sits under the about 200 an hour it allows a client without a login).
"""

from __future__ import annotations

import html
import math
import time
from datetime import datetime, timedelta
from typing import Any
from urllib.parse import quote

import httpx
from pydantic import AwareDatetime, BaseModel, Field, ValidationError

from shared.config import DEFAULT_QUOTAS
from shared.data.bundled import check_as_of
from shared.data.contracts import DataKind, DataVendor, Reach, SocialPost
from shared.data.http_vendor import get, json_of, retry_after
from shared.data.quota import Gate, LocalQuota
from shared.errors import (
    InvalidInput,
    NoData,
    NotConfigured,
    RateLimited,
    VendorFailure,
)

NAME = "stocktwits"
VENDOR = "StockTwits"
STOCKTWITS_URL = "https://api.stocktwits.com/api/2"
REACH = Reach(fresh_for=timedelta(days=1), why="StockTwits serves a symbol's latest messages only")
PAGE = 30
"""Messages per page of a stream (StockTwits' most and default)."""
DEEPEST = 800
"""Messages its cursors reach back at most; past that a page comes back empty."""
DEFAULT_RETRY_AFTER = timedelta(minutes=5)
"""The wait after a 429 that names none: a twelfth of StockTwits' hourly window."""
SENTIMENT = {"Bullish": 1.0, "Bearish": -1.0}
"""The author's own tag as a sentiment: a stance, not a strength."""


class _User(BaseModel):
    username: str


class _Sentiment(BaseModel):
    basic: str


class _Entities(BaseModel):
    sentiment: _Sentiment | None = None


class _Likes(BaseModel):
    total: int = Field(0, ge=0)


class _Message(BaseModel):
    id: int
    body: str
    created_at: AwareDatetime
    user: _User
    entities: _Entities = Field(default_factory=_Entities)
    likes: _Likes | None = None  # absent on a message nobody liked

    def post(self, symbol: str) -> SocialPost:
        tag = self.entities.sentiment
        return SocialPost(
            id=str(self.id),
            posted_at=self.created_at,
            author=self.user.username,
            text=html.unescape(self.body),
            symbol=symbol,
            likes=self.likes.total if self.likes else 0,
            sentiment=SENTIMENT.get(tag.basic) if tag else None,
        )


class _Cursor(BaseModel):
    more: bool = False


class _Stream(BaseModel):
    cursor: _Cursor = Field(default_factory=_Cursor)
    messages: list[_Message]


class StocktwitsVendor(DataVendor):
    """Social posts from StockTwits' symbol streams, about now only (``REACH``)."""

    name = NAME
    kinds = frozenset({DataKind.SOCIAL})

    def __init__(
        self,
        base_url: str = STOCKTWITS_URL,
        timeout_seconds: float = 10,
        gate: Gate | None = None,
        transport: httpx.BaseTransport | None = None,
    ) -> None:
        self._http = httpx.Client(
            base_url=base_url.rstrip("/") + "/", timeout=timeout_seconds, transport=transport
        )
        self._gate = gate or LocalQuota(NAME, DEFAULT_QUOTAS[NAME])

    def reach(self, kind: DataKind) -> Reach:
        """Now only: the streams hold a symbol's latest messages and select by no date."""
        return REACH

    def social(
        self, symbol: str, as_of: datetime, window: timedelta, limit: int = 50
    ) -> list[SocialPost]:
        """The posts about ``symbol`` of ``(as_of - window, as_of]``, newest first, at most
        ``limit``: the stream's pages from the newest back, until the window or ``limit`` is
        covered (or the stream's depth, ``DEEPEST``)."""
        end = check_as_of(as_of)
        if window <= timedelta(0):
            raise InvalidInput(
                "window", f"{window} is not a positive duration", fix="Use e.g. 1 day."
            )
        if limit < 1:
            raise InvalidInput("limit", f"{limit} is not a positive count", fix="Use e.g. 30.")
        key = symbol.strip().upper()
        start = end - window
        found: dict[str, SocialPost] = {}
        oldest: _Message | None = None
        for _ in range(min(math.ceil(limit / PAGE), DEEPEST // PAGE)):
            stream = self._stream(key, None if oldest is None else oldest.id - 1)
            for message in stream.messages:
                if start < message.created_at <= end:
                    found.setdefault(str(message.id), message.post(key))
            if not stream.messages:
                break
            oldest = min(stream.messages, key=lambda message: message.id)
            if len(found) >= limit or not stream.cursor.more or oldest.created_at <= start:
                break
        if not found:
            reached = (
                f"; the messages read go back to {oldest.created_at.isoformat()}" if oldest else ""
            )
            raise NoData(
                f"{VENDOR} has no posts about {key} from {start.isoformat()} to {end.isoformat()} "
                f"(it serves a symbol's latest messages only{reached})"
            )
        return sorted(found.values(), key=lambda post: post.posted_at, reverse=True)[:limit]

    def _stream(self, symbol: str, max_id: int | None) -> _Stream:
        """One page of the symbol's stream, newest first, at or before ``max_id`` if given."""
        params = {} if max_id is None else {"max": str(max_id)}
        self._gate()
        response = get(
            self._http,
            VENDOR,
            f"streams/symbol/{quote(symbol, safe='')}.json",
            params,
            refused=lambda answer: _error(answer, symbol),
        )
        return _parsed(json_of(response, VENDOR), symbol)


def _error(response: httpx.Response, symbol: str) -> Exception:
    """StockTwits' error body (``{"response": {"status"}, "errors": [{"message"}]}``) as the
    router's error."""
    status = response.status_code
    said = f"{VENDOR} answered {status}"
    message = _message(response)
    if message:
        said += f": {message}"
    if status == 429:
        return RateLimited(
            f"{said} (about 200 requests an hour without a login)", retry_after=_wait(response)
        )
    if status >= 500:
        return VendorFailure(said)
    if status == 404:
        return NoData(f"{VENDOR} has no symbol {symbol} ({said})")
    if status in (401, 403):
        return NotConfigured(
            f"{VENDOR} refused to serve {symbol} without a login: {said}",
            fix="Route social to another vendor in QUANTDESK_DATA_ROUTES.",
        )
    return InvalidInput("symbol", f"{symbol}: {said}")


def _message(response: httpx.Response) -> str:
    """The first of StockTwits' error messages, or "" when the body has none (a proxy's page)."""
    try:
        errors = response.json().get("errors") or []
        return str(errors[0].get("message", "")).strip()
    except (ValueError, AttributeError, IndexError):
        return ""


def _wait(response: httpx.Response) -> timedelta:
    """Until the hourly window resets (``X-RateLimit-Reset``, Unix seconds), else the
    ``Retry-After`` a proxy may give, else ``DEFAULT_RETRY_AFTER``."""
    reset = response.headers.get("X-RateLimit-Reset", "")
    if reset.isdigit():
        return timedelta(seconds=max(int(reset) - time.time(), 1.0))
    return retry_after(response, DEFAULT_RETRY_AFTER)


def _parsed(answer: Any, symbol: str) -> _Stream:
    """``answer`` read as a stream page, or a ``VendorFailure`` saying StockTwits' shape
    changed."""
    try:
        return _Stream.model_validate(answer)
    except ValidationError as error:
        raise VendorFailure(
            f"{VENDOR} answered {symbol} in a shape quantdesk does not know: {error.errors()[0]}"
        ) from None
