"""Massive's OpenAPI document as the Massive stand-in (``tests.fakes.massive``) reads it: each
path's parameters and their formats, transcribed from the document, how a request is checked
against them (the reason of a 400), and how a list's field parameters filter and sort its rows."""

from __future__ import annotations

import operator
import re
from collections.abc import Callable
from dataclasses import dataclass
from datetime import UTC, date, datetime
from typing import Any
from zoneinfo import ZoneInfo

NEW_YORK = ZoneInfo("America/New_York")


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


# --- the document's rules, applied ------------------------------------------------------------


def endpoint_of(path: str) -> tuple[Endpoint, dict[str, str]]:
    for endpoint in ENDPOINTS:
        if matched := endpoint.route.fullmatch(path):
            return endpoint, matched.groupdict()
    return _NOT_FOUND, {}


_NOT_FOUND = Endpoint("not found", re.compile(""), {}, {}, frozenset())


def problem_of(endpoint: Endpoint, values: dict[str, str], params: dict[str, str]) -> str:
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
        DAY_OR_MS: path_day,
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


def path_day(text: str) -> date:
    """A path's ``from``/``to``: a date, or a millisecond timestamp (its New York date)."""
    if text.isdigit():
        return datetime.fromtimestamp(int(text) / 1000, NEW_YORK).date()
    return _date(text)


def rows_listed(
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
