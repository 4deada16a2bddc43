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
- every parameter is checked against the document (``ENDPOINTS``, transcribed from it): one it
  does not name, or a value not of its format (a date, a boolean, an integer within bounds, an
  enum's value), is 400 in that body. One the document names that this stand-in does not
  implement is 400 saying so, never silently ignored;
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

import operator
import re
import secrets
import time
from collections import deque
from collections.abc import Callable
from dataclasses import dataclass, field
from datetime import UTC, date, datetime, timedelta
from http.server import BaseHTTPRequestHandler
from typing import Any
from urllib.parse import parse_qs, urlsplit
from zoneinfo import ZoneInfo

from tests.fakes.served import Fault, JsonStandIn  # the tests take Fault from here

KEY = "qd0Massive0Stand0In0Key000000001"
HOST = "https://api.massive.com"
NEW_YORK = ZoneInfo("America/New_York")
PRICING = "Please upgrade your plan at https://massive.com/pricing"
RATE_EXCEEDED = (
    "You've exceeded the maximum requests per minute, please wait or upgrade your "
    "subscription to continue. https://massive.com/pricing"
)

# --- the document's parameters ------------------------------------------------------------

Kind = str | tuple[str, ...]
"""A parameter's format: one of the names below, or an enum's values."""
STRING, INTEGER, NUMBER, BOOLEAN, DATE = "string", "integer", "number", "boolean", "date"
MOMENT = "date-time or date"
DAY_OR_MS = "date or millisecond timestamp"
ORDER = ("asc", "desc")
CONTROL = frozenset({"limit", "order", "sort"})


def _enum(values: str) -> tuple[str, ...]:
    """An enum's values, written space-separated."""
    return tuple(values.split())


def _ranged(name: str, kind: Kind) -> dict[str, Kind]:
    """A filter field and its ``.gte .gt .lte .lt`` ranges, as the document lists them."""
    return {name: kind} | {f"{name}.{op}": kind for op in ("gte", "gt", "lte", "lt")}


@dataclass(frozen=True)
class Endpoint:
    """One path of the document: its parameters, and which of them this stand-in serves."""

    name: str
    route: re.Pattern[str]
    path: dict[str, Kind]
    query: dict[str, Kind]
    served: frozenset[str]
    limit: tuple[int, int] = (10, 1000)
    """(default, maximum) rows of a list."""
    sort: str = ""
    """The default sort field of a list ("": not a list)."""
    order: str = "desc"
    own: frozenset[str] = frozenset()
    """Parameters the endpoint applies itself; every other served one filters a row field."""


TICKER_TYPES = _enum(
    "CS ADRC ADRP ADRR UNIT RIGHT PFD FUND SP WARRANT INDEX ETF ETN OS GDR OTHER NYRS AGEN EQLK "
    "BOND ADRW BASKET LT"
)
TICKER_SORTS = _enum(
    "ticker name market locale primary_exchange type currency_symbol currency_name "
    "base_currency_symbol base_currency_name cik composite_figi share_class_figi "
    "last_updated_utc delisted_utc"
)
TICKERS_QUERY: dict[str, Kind] = {
    **_ranged("ticker", STRING),
    "market": ("stocks", "crypto", "fx", "otc", "indices"),
    "type": TICKER_TYPES,
    **dict.fromkeys(("exchange", "cusip", "cik", "search"), STRING),
    "date": DATE,
    "active": BOOLEAN,
    "order": ORDER,
    "limit": INTEGER,
    "sort": TICKER_SORTS,
}
SPLITS_QUERY: dict[str, Kind] = {
    **_ranged("ticker", STRING),
    **_ranged("execution_date", DATE),
    "reverse_split": BOOLEAN,
    "order": ORDER,
    "limit": INTEGER,
    "sort": ("execution_date", "ticker"),
}
DIVIDENDS_QUERY: dict[str, Kind] = {
    **_ranged("ticker", STRING),
    **_ranged("ex_dividend_date", DATE),
    **_ranged("record_date", DATE),
    **_ranged("declaration_date", DATE),
    **_ranged("pay_date", DATE),
    **_ranged("cash_amount", NUMBER),
    "frequency": ("0", "1", "2", "4", "12"),
    "dividend_type": ("CD", "SC", "LT", "ST"),
    "order": ORDER,
    "limit": INTEGER,
    "sort": _enum("ex_dividend_date pay_date declaration_date record_date cash_amount ticker"),
}
NEWS_QUERY: dict[str, Kind] = {
    **_ranged("ticker", STRING),
    **_ranged("published_utc", MOMENT),
    "order": ORDER,
    "limit": INTEGER,
    "sort": ("published_utc",),
}

ENDPOINTS = (
    Endpoint(
        "aggs",
        re.compile(
            r"/v2/aggs/ticker/(?P<stocksTicker>[^/]+)/range/(?P<multiplier>[^/]+)/"
            r"(?P<timespan>[^/]+)/(?P<from>[^/]+)/(?P<to>[^/]+)"
        ),
        {
            "stocksTicker": STRING,
            "multiplier": INTEGER,
            "timespan": _enum("second minute hour day week month quarter year"),
            "from": DAY_OR_MS,
            "to": DAY_OR_MS,
        },
        {"adjusted": BOOLEAN, "sort": ORDER, "limit": INTEGER},
        frozenset({"adjusted", "sort", "limit"}),  # daily ranges here stay under any limit
        limit=(5000, 50000),
    ),
    Endpoint(
        "grouped",
        re.compile(r"/v2/aggs/grouped/locale/us/market/stocks/(?P<date>[^/]+)"),
        {"date": DATE},
        {"adjusted": BOOLEAN, "include_otc": BOOLEAN},
        frozenset({"adjusted", "include_otc"}),  # the market holds no OTC security
    ),
    Endpoint(
        "tickers",
        re.compile(r"/v3/reference/tickers"),
        {},
        TICKERS_QUERY,
        frozenset({*_ranged("ticker", STRING), "market", "type", "date", "active", *CONTROL}),
        limit=(100, 1000),
        sort="ticker",
        order="asc",
        own=frozenset({"date", "active"}),
    ),
    Endpoint(
        "splits",
        re.compile(r"/v3/reference/splits"),
        {},
        SPLITS_QUERY,
        frozenset({*_ranged("ticker", STRING), *_ranged("execution_date", DATE), *CONTROL}),
        sort="execution_date",
    ),
    Endpoint(
        "dividends",
        re.compile(r"/v3/reference/dividends"),
        {},
        DIVIDENDS_QUERY,
        frozenset(DIVIDENDS_QUERY),
        sort="ex_dividend_date",
    ),
    Endpoint(
        "news",
        re.compile(r"/v2/reference/news"),
        {},
        NEWS_QUERY,
        frozenset({"ticker", *_ranged("published_utc", MOMENT), *CONTROL}),
        sort="published_utc",
        own=frozenset({"ticker"}),  # one of the article's tickers
    ),
)
"""The six paths, their parameters as the OpenAPI document states them (names, formats,
enums, list limits), and what this stand-in serves of them."""


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
        return [seen for seen in self.requests if _endpoint(seen.path)[0].name == name]

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
        endpoint, values = _endpoint(path)
        if "cursor" in params:
            return self._next_page(params)
        problem = _problem(endpoint, values, params)
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
            first, last = _day(values["from"]), _day(values["to"])
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
            path, _listed(endpoint, rows, params), min(size, self.max_page or size), 0
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


# --- the document's rules, applied ------------------------------------------------------------


def _endpoint(path: str) -> tuple[Endpoint, dict[str, str]]:
    for endpoint in ENDPOINTS:
        if matched := endpoint.route.fullmatch(path):
            return endpoint, matched.groupdict()
    return _NOT_FOUND, {}


_NOT_FOUND = Endpoint("not found", re.compile(""), {}, {}, frozenset())


def _problem(endpoint: Endpoint, values: dict[str, str], params: dict[str, str]) -> str:
    """Why Massive refuses the request (400), or "" when it is valid."""
    if endpoint is _NOT_FOUND:
        return "The requested path was not found."
    checks = [
        *((n, v, endpoint.path[n]) for n, v in values.items()),
        *((n, v, endpoint.query.get(n)) for n, v in params.items()),
    ]
    for name, value, kind in checks:
        if kind is None:
            return f"Unknown query parameter '{name}'."
        if _parsed(kind, value) is None:
            return f"Could not parse the value {value!r} of '{name}' as {_format(kind)}."
    unserved = sorted(set(params) - endpoint.served)
    if unserved:
        return f"This stand-in does not implement the parameter '{unserved[0]}'."
    if "limit" in params and not 1 <= int(params["limit"]) <= endpoint.limit[1]:
        return f"'limit' must be between 1 and {endpoint.limit[1]}."
    return ""


def _format(kind: Kind) -> str:
    return f"one of {', '.join(kind)}" if isinstance(kind, tuple) else f"a {kind}"


def _parsed(kind: Kind, text: str) -> object | None:
    """``text`` as a value of ``kind``, comparable with others of it; None if it is not one."""
    if isinstance(kind, tuple):
        return text if text in kind else None
    readers: dict[str, Callable[[str], object]] = {
        STRING: str,
        INTEGER: int,
        NUMBER: float,
        BOOLEAN: lambda t: {"true": True, "false": False}[t],
        DATE: _date,
        MOMENT: _moment,
        DAY_OR_MS: _day,
    }
    try:
        return readers[kind](text)
    except (ValueError, KeyError):
        return None


def _date(text: str) -> date:
    if len(text) != 10:  # fromisoformat takes 20240328 too; Massive's format is YYYY-MM-DD
        raise ValueError("not YYYY-MM-DD")
    return date.fromisoformat(text)


def _moment(text: str) -> datetime:
    if len(text) == 10:
        return datetime.combine(date.fromisoformat(text), datetime.min.time(), UTC)
    moment = datetime.fromisoformat(text.replace("Z", "+00:00"))
    if moment.tzinfo is None:
        raise ValueError("no timezone")
    return moment


def _day(text: str) -> date:
    """A path's ``from``/``to``: a date, or a millisecond timestamp (its New York date)."""
    if text.isdigit():
        return datetime.fromtimestamp(int(text) / 1000, NEW_YORK).date()
    return _date(text)


def _at(day: date, hour: int) -> datetime:
    """``hour`` o'clock in New York on ``day``."""
    return datetime(day.year, day.month, day.day, hour, tzinfo=NEW_YORK)


def _listed(
    endpoint: Endpoint, rows: list[dict[str, Any]], params: dict[str, str]
) -> list[dict[str, Any]]:
    """``rows`` filtered by every field parameter, then sorted as asked."""
    kept = rows
    for name, text in params.items():
        if name in CONTROL or name in endpoint.own:
            continue
        field_name, _, op = name.partition(".")
        kind = endpoint.query[name]
        wanted = _parsed(kind, text)
        kept = [r for r in kept if _holds(_field(r, field_name, kind), op, wanted)]
    by = params.get("sort", endpoint.sort)
    descending = params.get("order", endpoint.order) == "desc"
    return sorted(kept, key=lambda row: str(row.get(by, "")), reverse=descending)


def _field(row: dict[str, Any], name: str, kind: Kind) -> object | None:
    value = row.get(name)
    return None if value is None else _parsed(kind, str(value))


COMPARE: dict[str, Callable[[Any, Any], bool]] = {
    "": operator.eq,
    "gte": operator.ge,
    "gt": operator.gt,
    "lte": operator.le,
    "lt": operator.lt,
}


def _holds(value: Any, op: str, wanted: Any) -> bool:
    return value is not None and COMPARE[op](value, wanted)


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
