"""Massive's REST wire (formerly Polygon): the key, one metered GET, ``next_url`` paging, the
error bodies as the router's kinds, and the JSON rows quantdesk reads, as pydantic models.

Facts from Massive's OpenAPI document (``.massive/rest.json`` in its client repository) and
its client:

- the document's only security scheme is an ``apiKey`` query parameter, and Massive's own
  client sends ``Authorization: Bearer <key>`` instead; the header is used here, so the key
  never appears in a URL (a proxy's log, an error naming the request);
- a list endpoint answers ``{"results": [...], "next_url": ...}``: ``next_url`` is a whole URL
  on Massive's host carrying an opaque ``cursor`` that stands for the rest of the query, and
  no key, so the next page is asked as the client does: its path and query against our own
  base URL, the key in the header again (a host named in a page is never sent the key);
- errors answer ``{"status": "ERROR", "request_id": ..., "error": ...}``: 401 for a missing
  or unknown key, 429 past the plan's rate ("You've exceeded the maximum requests per
  minute"); a plan that does not include the data answers 403 ``{"status": "NOT_AUTHORIZED",
  "message": ...}``, "You are not entitled to this data" for an endpoint and "Your plan
  doesn't include this data timeframe" for a date before its history (the free tier keeps
  about two years of daily bars, and allows 5 requests a minute).

The free tier's 5 requests a minute make a many-page read (the ticker list of a date, about a
dozen pages of 1,000) outlast the desk's quota wait: the quota then raises ``RateLimited`` and
Temporal retries the tool call. So the pages already read are kept, per query, until the read
completes: the next attempt in this worker goes on from the page it stopped at instead of
spending the quota on the same pages again.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field
from datetime import date, timedelta
from typing import Any, TypeVar
from urllib.parse import parse_qsl, urlsplit

import httpx
from pydantic import AwareDatetime, BaseModel, Field, ValidationError

from shared.config import MASSIVE_KEY_ENV, MassiveSettings
from shared.data.http_vendor import get, json_of, retry_after
from shared.data.quota import Gate
from shared.errors import NoData, NotConfigured, RateLimited, VendorFailure

M = TypeVar("M", bound=BaseModel)

VENDOR = "Massive"
KEY_FIX = (
    f"Set {MASSIVE_KEY_ENV} (a free key from massive.com's dashboard) on the tools workers, "
    "or route the kind to another vendor in QUANTDESK_DATA_ROUTES."
)
PLAN_FIX = "Use a Massive plan that includes it, or route the kind to another vendor."
DEFAULT_RETRY_AFTER = timedelta(seconds=12)
"""Massive's 429 names no wait; at 5 requests a minute a turn frees every 12 s on average."""
PAGE = "1000"
"""Rows a page of a list endpoint holds at most (the document's maximum)."""


# --- the rows quantdesk reads -----------------------------------------------------------


class Agg(BaseModel):
    """One aggregate bar: ``t`` in ms (a daily bar's start: midnight New York)."""

    t: int
    o: float
    h: float
    l: float  # noqa: E741  (Massive's name)
    c: float
    v: float


class GroupedAgg(Agg):
    """One ticker's bar in the grouped daily file."""

    ticker: str = Field(alias="T")


class Split(BaseModel):
    """A split: ``split_to`` new shares for ``split_from`` old, from ``execution_date`` on."""

    execution_date: date
    split_from: float = Field(gt=0)
    split_to: float = Field(gt=0)
    ticker: str


class Dividend(BaseModel):
    """A cash dividend: the price drops by ``cash_amount`` on ``ex_dividend_date``."""

    cash_amount: float = Field(ge=0)
    ex_dividend_date: date
    declaration_date: date | None = None


class Ticker(BaseModel):
    """A row of the ticker list as of a date."""

    ticker: str
    name: str
    type: str | None = None


class Publisher(BaseModel):
    name: str


class Insight(BaseModel):
    ticker: str
    sentiment: str


class Article(BaseModel):
    """One news article."""

    id: str
    published_utc: AwareDatetime
    title: str
    article_url: str
    publisher: Publisher
    tickers: list[str]
    description: str | None = None
    keywords: list[str] = Field(default_factory=list)
    insights: list[Insight] = Field(default_factory=list)


class _Page(BaseModel):
    """What every endpoint read here answers: rows (none: the key is left out) and, for a
    list with more, the next page."""

    results: list[dict[str, Any]] = Field(default_factory=list)
    next_url: str | None = None


# --- the client -------------------------------------------------------------------------

_Request = tuple[str, tuple[tuple[str, str], ...]]


@dataclass
class _Progress:
    """A paged read under way: the rows so far and the page still to ask (None: done)."""

    rows: list[dict[str, Any]] = field(default_factory=list)
    next: _Request | None = None


class MassiveClient:
    """Metered GETs of Massive's REST API, each one first through ``gate``."""

    def __init__(
        self, settings: MassiveSettings, gate: Gate, transport: httpx.BaseTransport | None
    ) -> None:
        if settings.api_key is None or not settings.api_key.get_secret_value():
            raise NotConfigured(
                f"{VENDOR} needs a key and {MASSIVE_KEY_ENV} is not set", fix=KEY_FIX
            )
        self._http = httpx.Client(
            base_url=settings.base_url.rstrip("/") + "/",
            timeout=settings.timeout_seconds,
            transport=transport,
            headers={"Authorization": f"Bearer {settings.api_key.get_secret_value()}"},
        )
        self._gate = gate
        self._unfinished: dict[_Request, _Progress] = {}

    @property
    def base_url(self) -> str:
        """The API root asked (a stand-in's, a proxy's or Massive's own)."""
        return str(self._http.base_url)

    def rows(
        self, model: type[M], path: str, params: Mapping[str, str], *, every_page: bool = True
    ) -> list[M]:
        """The rows ``path`` answers, read as ``model``: of every page, following
        ``next_url`` (kept across failed attempts, see the module), or of the first only."""
        first: _Request = (path, tuple(sorted(params.items())))
        if not every_page:
            return _parsed_rows(model, self._page(first).results)
        # Taken out while read (two threads asking the same never share one), put back if
        # a page fails.
        progress = self._unfinished.pop(first, None) or _Progress(next=first)
        try:
            while progress.next is not None:
                page = self._page(progress.next)
                progress.rows.extend(page.results)
                progress.next = _request_of(page.next_url) if page.next_url else None
        except Exception:
            self._unfinished[first] = progress
            raise
        return _parsed_rows(model, progress.rows)

    def _page(self, request: _Request) -> _Page:
        path, params = request
        self._gate()
        response = get(self._http, VENDOR, path.lstrip("/"), dict(params), refused=_error)
        return _parsed(_Page, json_of(response, VENDOR))


def _request_of(next_url: str) -> _Request:
    """A page's ``next_url`` as a request to our own base URL: its path and query only."""
    parts = urlsplit(next_url)
    return parts.path, tuple(parse_qsl(parts.query))


def _error(response: httpx.Response) -> Exception:
    """Massive's error body (``status``, ``error`` or ``message``) as the router's error."""
    try:
        body = response.json()
    except ValueError:
        body = {}
    body = body if isinstance(body, dict) else {}
    message = str(body.get("error") or body.get("message") or "").strip()
    status = response.status_code
    said = f"{VENDOR} answered {status}" + (f": {message}" if message else "")
    if status == 429:
        wait = retry_after(response, DEFAULT_RETRY_AFTER)
        return RateLimited(f"{said} (the free tier allows 5 requests a minute)", retry_after=wait)
    if status >= 500:
        return VendorFailure(said)
    if status == 401:
        return NotConfigured(f"{VENDOR} refused the key in {MASSIVE_KEY_ENV}: {said}", fix=KEY_FIX)
    if status == 403 and "timeframe" in message.lower():
        return NoData(f"{said} (the free tier keeps about two years of history)")
    if status == 403:
        return NotConfigured(f"{VENDOR}'s plan does not include this data: {said}", fix=PLAN_FIX)
    return NotConfigured(
        f"{VENDOR} refused the request as quantdesk sends it: {said}",
        fix="Its API may have changed: update quantdesk, or route the kind to another vendor.",
    )


def _parsed(model: type[M], answer: object) -> M:
    """``answer`` read as ``model``, or a ``VendorFailure`` saying Massive's shape changed."""
    try:
        return model.model_validate(answer)
    except ValidationError as error:
        raise VendorFailure(
            f"{VENDOR} answered in a shape quantdesk does not know: {error.errors()[0]}"
        ) from None


def _parsed_rows(model: type[M], rows: list[dict[str, Any]]) -> list[M]:
    return [_parsed(model, row) for row in rows]
