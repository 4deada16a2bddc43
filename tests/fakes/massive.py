"""A strict Massive (formerly Polygon) stand-in, written from Massive's OpenAPI document
(``.massive/rest.json`` in its client repository) and the error bodies its API answers, with a
small market of our own (``MassiveMarket``).

It serves the six endpoints quantdesk reads: daily aggregates of a ticker
(``/v2/aggs/ticker/{stocksTicker}/range/1/day/{from}/{to}``), the grouped daily file
(``/v2/aggs/grouped/locale/us/market/stocks/{date}``), and the lists ``/v3/reference/tickers``,
``/v3/reference/splits``, ``/v3/reference/dividends`` and ``/v2/reference/news``. As Massive:

- the key comes as the document's ``apiKey`` query parameter or as ``Authorization: Bearer``
  (Massive's client); without one 401 "API Key was not provided", a wrong one 401 "Unknown
  API Key", in Massive's body ``{"status": "ERROR", "request_id": ..., "error": ...}``;
- every parameter is checked against the document (``ENDPOINTS`` in
  ``tests.fakes.massive_document``, transcribed from it): one it does not name, or a value not
  of its format (a date, a boolean, an integer within bounds, an enum's value), is 400 in that
  body. One the document names that this stand-in does not implement is 400 saying so, never
  silently ignored;
- ``adjusted`` defaults to true: prices divided by every split the market holds, as Massive
  answers today; ``adjusted=false`` gives the bars as traded. A daily bar's ``t`` is its
  start (midnight New York), a grouped row's its end (16:00 New York), as the document says;
  a holiday's grouped file has no results;
- a list answers at most ``limit`` rows (and at most ``max_page``, so a small market still
  pages) and then ``next_url``: a URL on Massive's host whose opaque ``cursor`` stands for the
  rest of the query; a request with a cursor carries nothing else (but the key);
- the plan: bars of a date before ``today - history_days`` are 403 ``NOT_AUTHORIZED`` "Your
  plan doesn't include this data timeframe"; an endpoint in ``not_entitled`` is 403 "You are
  not entitled to this data";
- past ``per_minute`` answered requests in a rolling ``window`` seconds, 429 "You've exceeded
  the maximum requests per minute"; a fault queued with ``fail_next`` answers the next request
  instead (a status with Massive's body, a slow answer, a dropped connection).

Every request is recorded (``Seen``: its path, parameters, where its key came and the raw
request target), so a test can count calls and check the key never travels in a URL.
"""

from __future__ import annotations

import secrets
import time
from collections import deque
from dataclasses import dataclass, field
from datetime import date, datetime, timedelta
from http.server import BaseHTTPRequestHandler
from typing import Any
from urllib.parse import parse_qs, urlsplit

from tests.fakes.massive_document import (
    NEW_YORK,
    Endpoint,
    endpoint_of,
    path_day,
    problem_of,
    rows_listed,
)
from tests.fakes.served import Fault, JsonStandIn  # the tests take Fault from here

KEY = "qd0Massive0Stand0In0Key000000001"
HOST = "https://api.massive.com"
PRICING = "Please upgrade your plan at https://massive.com/pricing"
RATE_EXCEEDED = (
    "You've exceeded the maximum requests per minute, please wait or upgrade your "
    "subscription to continue. https://massive.com/pricing"
)


# --- the market ---------------------------------------------------------------------------


@dataclass(frozen=True)
class DayBar:
    """One session of a ticker, as traded (unadjusted)."""

    day: date
    open: float
    high: float
    low: float
    close: float
    volume: float


@dataclass(frozen=True)
class Listed:
    """A ticker of the list: traded from ``listed`` to ``delisted`` (its last day), if any."""

    ticker: str
    name: str
    type: str
    listed: date
    delisted: date | None = None
    exchange: str = "XNAS"

    def active_on(self, day: date) -> bool:
        return self.listed <= day and (self.delisted is None or day <= self.delisted)


HOLIDAYS = frozenset({date(2024, 5, 27), date(2024, 7, 4), date(2024, 12, 25), date(2025, 1, 1)})
"""The fixtures' market holidays: no session, and an empty grouped daily file."""


def sessions(first: date, last: date) -> list[date]:
    """The weekdays from ``first`` to ``last`` that are not ``HOLIDAYS``."""
    days = (first + timedelta(n) for n in range((last - first).days + 1))
    return [day for day in days if day.weekday() < 5 and day not in HOLIDAYS]


def day_bars(
    first: date,
    last: date,
    price: float,
    volume: float,
    moves: dict[date, float],
    split: date | None = None,
) -> list[DayBar]:
    """A made-up history: small alternating moves, ``moves`` on their days, and prices and
    volumes as traded around a 4-for-1 ``split``."""
    bars, prior = [], price
    for index, day in enumerate(sessions(first, last)):
        close = prior * (1 + moves.get(day, 0.002 * (index % 5 - 2)))
        shares = 4 if split is not None and day >= split else 1
        low, high = sorted((prior / shares, close / shares))
        bars.append(
            DayBar(day, prior / shares, high * 1.005, low * 0.995, close / shares, volume * shares)
        )
        prior = close
    return bars


@dataclass
class MassiveMarket:
    """What the stand-in knows. Splits, dividends and news are rows in Massive's own shape."""

    listed: list[Listed]
    bars: dict[str, list[DayBar]]
    splits: list[dict[str, Any]] = field(default_factory=list)
    dividends: list[dict[str, Any]] = field(default_factory=list)
    news: list[dict[str, Any]] = field(default_factory=list)


@dataclass(frozen=True)
class Seen:
    """One request as it arrived."""

    path: str
    params: dict[str, str]
    key_in: str | None
    """"header", "query" or None: where a key came."""
    target: str
    """The raw request target: path and query as sent."""


Answer = tuple[int, dict[str, Any]]


class FakeMassive(JsonStandIn[Fault]):
    """Massive on a loopback port; ``base_url`` is what ``QUANTDESK_MASSIVE__BASE_URL`` takes."""

    keep_blank_values = True  # an empty value is checked against the document, not dropped

    def __init__(
        self,
        market: MassiveMarket,
        *,
        today: date,
        per_minute: int = 5,
        window: float = 60.0,
        history_days: int | None = 730,
        max_page: int | None = None,
        not_entitled: frozenset[str] = frozenset(),
    ) -> None:
        super().__init__()
        self.market, self.today = market, today
        self.per_minute, self.window = per_minute, window
        self.history_days, self.max_page, self.not_entitled = history_days, max_page, not_entitled
        self.requests: list[Seen] = []
        self._answered: deque[float] = deque()
        self._cursors: dict[str, tuple[str, list[dict[str, Any]], int, int]] = {}

    def paths(self, name: str) -> list[Seen]:
        """The requests that reached endpoint ``name`` (cursor pages included)."""
        return [seen for seen in self.requests if endpoint_of(seen.path)[0].name == name]

    def _target(self, target: str) -> tuple[str, dict[str, str]]:
        """Split by ``urlsplit``, not ``urlparse``: a ``;...`` ending the path stays in it (and
        so matches no endpoint) rather than being cut off as a path parameter."""
        url = urlsplit(target)
        query = parse_qs(url.query, keep_blank_values=self.keep_blank_values)
        return url.path, {name: values[-1] for name, values in query.items()}

    def answer(
        self, path: str, params: dict[str, str], handler: BaseHTTPRequestHandler
    ) -> tuple[int, object]:
        """The status and JSON body for one request (0: the connection was dropped)."""
        key = params.pop("apiKey", None)
        bearer = handler.headers.get("Authorization", "")
        key_in = "header" if bearer else ("query" if key is not None else None)
        with self._lock:
            self.requests.append(Seen(path, params, key_in, handler.path))
            fault = self._next_fault()
        if faulted := self._faulted(fault, handler, lambda _, message: _error(message)):
            return faulted
        if key is None and not bearer.startswith("Bearer "):
            return 401, _error("API Key was not provided")
        if KEY not in (key, bearer.removeprefix("Bearer ")):
            return 401, _error("Unknown API Key")
        if self._over_limit():
            return 429, _error(RATE_EXCEEDED)
        endpoint, values = endpoint_of(path)
        if "cursor" in params:
            return self._next_page(params)
        problem = problem_of(endpoint, values, params)
        if problem:
            return 400, _error(problem)
        if endpoint.name in self.not_entitled:
            return 403, _refusal(f"You are not entitled to this data. {PRICING}")
        return self._serve(endpoint, path, values, params)

    def _over_limit(self) -> bool:
        """Whether this request is one too many in the window (it then does not count)."""
        with self._lock:
            now = time.monotonic()
            while self._answered and now - self._answered[0] > self.window:
                self._answered.popleft()
            if len(self._answered) >= self.per_minute:
                return True
            self._answered.append(now)
            return False

    def _serve(
        self, endpoint: Endpoint, path: str, values: dict[str, str], params: dict[str, str]
    ) -> Answer:
        adjusted = params.get("adjusted", "true") == "true"
        if endpoint.name == "aggs":
            if (values["multiplier"], values["timespan"]) != ("1", "day"):
                return 400, _error("This stand-in serves daily aggregates (1/day) only.")
            first, last = path_day(values["from"]), path_day(values["to"])
            return self._bars_of(first) or self._aggs(
                values["stocksTicker"], first, last, adjusted, params
            )
        if endpoint.name == "grouped":
            day = date.fromisoformat(values["date"])
            return self._bars_of(day) or self._grouped(day, adjusted)
        if endpoint.name == "tickers":
            rows = self._tickers(params)
        elif endpoint.name == "news":
            wanted = params.get("ticker")
            rows = [n for n in self.market.news if wanted is None or wanted in n["tickers"]]
        else:
            rows = self.market.splits if endpoint.name == "splits" else self.market.dividends
        size = int(params.get("limit", endpoint.limit[0]))
        return self._page(
            path, rows_listed(endpoint, rows, params), min(size, self.max_page or size), 0
        )

    def _bars_of(self, day: date) -> Answer | None:
        """The plan's refusal of bars from ``day``, if it is before the plan's history."""
        if self.history_days is not None and day < self.today - timedelta(self.history_days):
            return 403, _refusal(f"Your plan doesn't include this data timeframe. {PRICING}")
        return None

    def _factor(self, ticker: str, day: date, adjusted: bool) -> float:
        """What a price of ``day`` is multiplied by: 1 as traded; else every later split."""
        factor = 1.0
        for split in self.market.splits:
            if (
                adjusted
                and split["ticker"] == ticker
                and date.fromisoformat(split["execution_date"]) > day
            ):
                factor *= split["split_from"] / split["split_to"]
        return factor

    def _agg(self, ticker: str, bar: DayBar, adjusted: bool, t: datetime) -> dict[str, Any]:
        factor = self._factor(ticker, bar.day, adjusted)
        return {
            "v": bar.volume / factor,
            "vw": round(bar.close * factor, 4),
            "o": bar.open * factor,
            "c": bar.close * factor,
            "h": bar.high * factor,
            "l": bar.low * factor,
            "t": int(t.timestamp() * 1000),
            "n": 1000,
        }

    def _aggs(
        self, ticker: str, first: date, last: date, adjusted: bool, params: dict[str, str]
    ) -> Answer:
        bars = [b for b in self.market.bars.get(ticker, []) if first <= b.day <= last]
        bars.sort(key=lambda b: b.day, reverse=params.get("sort") == "desc")
        rows = [self._agg(ticker, b, adjusted, _at(b.day, 0)) for b in bars]
        return 200, _aggregates(rows, adjusted) | {"ticker": ticker}

    def _grouped(self, day: date, adjusted: bool) -> Answer:
        rows = [
            {"T": ticker} | self._agg(ticker, bar, adjusted, _at(day, 16))
            for ticker, bars in sorted(self.market.bars.items())
            for bar in bars
            if bar.day == day
        ]
        return 200, _aggregates(rows, adjusted)

    def _tickers(self, params: dict[str, str]) -> list[dict[str, Any]]:
        """The list as of ``date`` (default today): those traded that day (``active``, the
        default) or delisted by then (``active=false``)."""
        day = date.fromisoformat(params.get("date", self.today.isoformat()))
        active = params.get("active", "true") == "true"
        rows = []
        for x in self.market.listed:
            if x.listed > day or x.active_on(day) is not active:
                continue
            row = {
                "ticker": x.ticker,
                "name": x.name,
                "market": "stocks",
                "locale": "us",
                "primary_exchange": x.exchange,
                "type": x.type,
                "active": active,
                "currency_name": "usd",
                "last_updated_utc": f"{day}T00:00:00Z",
            }
            if x.delisted is not None and not active:
                row["delisted_utc"] = f"{x.delisted}T00:00:00Z"
            rows.append(row)
        return rows

    def _page(self, path: str, rows: list[dict[str, Any]], size: int, offset: int) -> Answer:
        page = rows[offset : offset + size]
        body: dict[str, Any] = {
            "results": page,
            "status": "OK",
            "request_id": _request_id(),
            "count": len(page),
        }
        if offset + size < len(rows):
            cursor = secrets.token_urlsafe(18)
            with self._lock:
                self._cursors[cursor] = (path, rows, size, offset + size)
            body["next_url"] = f"{HOST}{path}?cursor={cursor}"
        return 200, body

    def _next_page(self, params: dict[str, str]) -> Answer:
        if set(params) != {"cursor"}:
            return 400, _error("A request with a cursor carries no other parameter.")
        with self._lock:
            found = self._cursors.get(params["cursor"])
        if found is None:
            return 400, _error("The cursor is not valid.")
        return self._page(*found)


# --- the answers' bodies ------------------------------------------------------------------


def _at(day: date, hour: int) -> datetime:
    """``hour`` o'clock in New York on ``day``."""
    return datetime(day.year, day.month, day.day, hour, tzinfo=NEW_YORK)


def _aggregates(rows: list[dict[str, Any]], adjusted: bool) -> dict[str, Any]:
    body: dict[str, Any] = {
        "queryCount": len(rows),
        "resultsCount": len(rows),
        "adjusted": adjusted,
        "status": "OK",
        "request_id": _request_id(),
    }
    if rows:  # Massive leaves the key out when nothing matched
        body["results"] = rows
        body["count"] = len(rows)
    return body


def _request_id() -> str:
    return secrets.token_hex(16)


def _error(message: str) -> dict[str, Any]:
    return {"status": "ERROR", "request_id": _request_id(), "error": message}


def _refusal(message: str) -> dict[str, Any]:
    return {"status": "NOT_AUTHORIZED", "request_id": _request_id(), "message": message}
