"""A strict Binance spot stand-in, written from Binance's spot REST documentation, speaking
the two public endpoints ccxt's ``load_markets`` and ``fetch_ohlcv`` call for a spot market.

- ``GET /api/v3/exchangeInfo`` (weight 20): the listed pairs in Binance's shape
  (``symbol``, ``status``, ``baseAsset``, ``quoteAsset``, precisions, ``filters``,
  ``permissionSets``), and the ``rateLimits`` it states. ccxt sends no parameter; any
  parameter here is refused (the stand-in implements none of the optional filters).
- ``GET /api/v3/klines`` (weight 2): ``symbol`` and ``interval`` are mandatory
  (``-1102``), the symbol must be listed (``-1121 Invalid symbol.``), the interval one of
  Binance's (``-1120 Invalid interval.``), ``startTime``/``endTime``/``limit`` unsigned
  integers (``-1100``), ``limit`` 1 to 1000, default 500 (``-1130``), a parameter the
  endpoint does not read is ``-1104``. Rows are Binance's twelve-field arrays, oldest
  first: with ``startTime``, the first ``limit`` candles opening at or after it (and at or
  before ``endTime``); otherwise the last ``limit`` opening at or before ``endTime`` (or now).
  Candles open on whole periods of UTC time: days at 00:00, weeks on Monday, months on the
  1st. Binance does not document a ``startTime`` after ``endTime``: the stand-in refuses it
  with ``-1130``; and it serves ``timeZone`` 0 (UTC) only.
- The candle of the period holding ``now`` is *forming*: it is served (as Binance does) with
  its close, high, low and volume so far, and recorded in ``forming_served``.
- Request weight is counted per rolling minute against ``weight_per_minute`` (Binance's
  ``REQUEST_WEIGHT`` limit, 6000); past it, 429 with ``-1003`` and ``Retry-After`` in seconds.
  A fault queued with ``fail_next`` answers the next request instead: a status with Binance's
  body, a slow answer, a dropped connection.

Every response carries ``X-MBX-USED-WEIGHT-1M``. Every request is recorded (path and
parameters). Candles are computed from a deterministic price path per pair (``price_at``),
so a test can say exactly what a candle holds.
"""

from __future__ import annotations

import math
import time
from collections import deque
from collections.abc import Iterator, Sequence
from dataclasses import dataclass
from datetime import UTC, datetime, timedelta
from http.server import BaseHTTPRequestHandler

from tests.fakes import served
from tests.fakes.served import JsonStandIn

EXCHANGE_INFO = "/api/v3/exchangeInfo"
KLINES = "/api/v3/klines"
WEIGHTS = {EXCHANGE_INFO: 20, KLINES: 2}
"""Each endpoint's request weight, as Binance's documentation gives it."""
WEIGHT_PER_MINUTE = 6000
NOT_FOUND_PAGE = b"<html><body><h1>404 Not Found</h1></body></html>"
"""Binance's 404 for a path it does not serve: an HTML page, not its JSON error."""
DEFAULT_LIMIT, MAX_LIMIT = 500, 1000
KLINE_PARAMETERS = frozenset({"symbol", "interval", "startTime", "endTime", "limit", "timeZone"})
EPOCH = datetime(1970, 1, 1, tzinfo=UTC)
FIRST_MONDAY = datetime(1970, 1, 5, tzinfo=UTC)
"""Binance's weekly candles open on Mondays; the epoch was a Thursday."""

INTERVALS: dict[str, timedelta | None] = {
    "1s": timedelta(seconds=1),
    "1m": timedelta(minutes=1),
    "3m": timedelta(minutes=3),
    "5m": timedelta(minutes=5),
    "15m": timedelta(minutes=15),
    "30m": timedelta(minutes=30),
    "1h": timedelta(hours=1),
    "2h": timedelta(hours=2),
    "4h": timedelta(hours=4),
    "6h": timedelta(hours=6),
    "8h": timedelta(hours=8),
    "12h": timedelta(hours=12),
    "1d": timedelta(days=1),
    "3d": timedelta(days=3),
    "1w": timedelta(weeks=1),
    "1M": None,
}
"""Binance's kline intervals (case-sensitive); ``1M`` is the calendar month."""


@dataclass(frozen=True)
class Pair:
    """A listed spot pair: Binance's symbol, its assets, its first trade and its price level."""

    symbol: str
    base: str
    quote: str
    listed: datetime
    level: float

    def price_at(self, when: datetime) -> float:
        """The pair's price at ``when``: two slow waves around ``level``, never below half."""
        hours = (when - EPOCH).total_seconds() / 3600
        return self.level * (1 + 0.2 * math.sin(hours / 97) + 0.05 * math.sin(hours / 7.3))


@dataclass(frozen=True)
class Fault(served.Fault):
    """What the next request gets instead of its answer. A ``status`` of 429 is Binance's
    ``-1003`` with ``Retry-After: retry_after``; any other its ``-1001``, in Binance's words
    (``message`` is not sent)."""

    retry_after: int = 60


@dataclass(frozen=True)
class Served:
    """One request as it arrived."""

    path: str
    params: dict[str, str]


class BinanceError(Exception):
    """An answer in Binance's error shape: HTTP status, ``code`` and ``msg``."""

    def __init__(self, status: int, code: int, msg: str) -> None:
        super().__init__(msg)
        self.status, self.code, self.msg = status, code, msg


class FakeBinance(JsonStandIn[Fault]):
    """Binance's public spot REST on a loopback port; ``base_url`` replaces its origin."""

    content_type = "application/json;charset=UTF-8"
    keep_blank_values = True  # an empty value is Binance's -1102 or -1100, not absent

    def __init__(
        self, pairs: Sequence[Pair], *, now: datetime, weight_per_minute: int = WEIGHT_PER_MINUTE
    ) -> None:
        super().__init__()
        self.pairs = {pair.symbol: pair for pair in pairs}
        self.now = now
        """The exchange's clock: the candle of the period holding it is still forming."""
        self.weight_per_minute = weight_per_minute
        self.requests: list[Served] = []
        self.forming_served: list[tuple[str, str, datetime]] = []
        """(symbol, interval, open) of every forming candle sent."""
        self._spent: deque[tuple[float, int]] = deque()

    def answer(
        self, path: str, params: dict[str, str], handler: BaseHTTPRequestHandler
    ) -> tuple[int, object, dict[str, str]]:
        """Record the request; its answer, its fault or Binance's error, with the weight used."""
        with self._lock:
            self.requests.append(Served(path, params))
            fault = self._next_fault()
            used, wait = self._spend(WEIGHTS.get(path, 1))
        headers = {"X-MBX-USED-WEIGHT-1M": str(used)}
        if self._dropped(fault, handler):
            return 0, None, headers
        if fault is not None and fault.status == 429:
            wait = fault.retry_after
        elif fault is not None and fault.status:
            error = BinanceError(
                fault.status,
                -1001,
                "Internal error; unable to process your request. Please try again.",
            )
            return error.status, _body(error), headers
        if wait is not None:
            headers["Retry-After"] = str(wait)
            limited = BinanceError(
                429,
                -1003,
                "Too much request weight used; current limit is "
                f"{self.weight_per_minute} request weight per 1 MINUTE. Please "
                "use WebSocket Streams for live updates to avoid polling the "
                "API.",
            )
            return 429, _body(limited), headers
        try:
            if path == EXCHANGE_INFO:
                return 200, self._exchange_info(params), headers
            if path == KLINES:
                return 200, self._klines(params), headers
        except BinanceError as error:
            return error.status, _body(error), headers
        return 404, NOT_FOUND_PAGE, {"Content-Type": "text/html", **headers}

    def _spend(self, weight: int) -> tuple[int, int | None]:
        """Count ``weight`` in the rolling minute: the weight used, and the seconds to wait
        (None when within the limit; a refused request's weight counts too, a simple model)."""
        now = time.monotonic()
        while self._spent and now - self._spent[0][0] >= 60:
            self._spent.popleft()
        self._spent.append((now, weight))
        used = sum(w for _, w in self._spent)
        if used <= self.weight_per_minute:
            return used, None
        return used, max(1, math.ceil(60 - (now - self._spent[0][0])))

    def _exchange_info(self, params: dict[str, str]) -> dict[str, object]:
        if params:
            raise BinanceError(
                400,
                -1104,
                f"Not all sent parameters were read; read '0' parameter(s) but was sent "
                f"'{len(params)}'.",
            )
        return {
            "timezone": "UTC",
            "serverTime": _ms(self.now),
            "rateLimits": [
                {
                    "rateLimitType": "REQUEST_WEIGHT",
                    "interval": "MINUTE",
                    "intervalNum": 1,
                    "limit": self.weight_per_minute,
                },
                {
                    "rateLimitType": "RAW_REQUESTS",
                    "interval": "MINUTE",
                    "intervalNum": 5,
                    "limit": 61000,
                },
            ],
            "exchangeFilters": [],
            "symbols": [_symbol_info(pair) for pair in self.pairs.values()],
        }

    def _klines(self, params: dict[str, str]) -> list[list[object]]:
        unread = set(params) - KLINE_PARAMETERS
        if unread:
            raise BinanceError(
                400,
                -1104,
                f"Not all sent parameters were read; read '{len(params) - len(unread)}' "
                f"parameter(s) but was sent '{len(params)}'.",
            )
        for name in ("symbol", "interval"):
            if not params.get(name):
                raise BinanceError(
                    400,
                    -1102,
                    f"Mandatory parameter '{name}' was not sent, was empty/null, or malformed.",
                )
        pair = self.pairs.get(params["symbol"])
        if pair is None:
            raise BinanceError(400, -1121, "Invalid symbol.")
        interval = params["interval"]
        if interval not in INTERVALS:
            raise BinanceError(400, -1120, "Invalid interval.")
        start, end, limit = (_unsigned(params, name) for name in ("startTime", "endTime", "limit"))
        if limit is not None and not 1 <= limit <= MAX_LIMIT:
            raise _invalid("limit")
        if start is not None and end is not None and start > end:
            raise _invalid("startTime")
        if params.get("timeZone", "0") != "0":
            raise _invalid("timeZone")
        return self._rows(pair, interval, start, end, limit or DEFAULT_LIMIT)

    def _rows(
        self, pair: Pair, interval: str, start: int | None, end: int | None, limit: int
    ) -> list[list[object]]:
        """The candles asked for, opened from the listing to now, within the bounds."""
        listed = _next_open(interval, pair.listed)
        last = _floor(interval, self.now if end is None else min(_at(end), self.now))
        if start is not None:
            opens = _take(
                _opens(interval, max(listed, _next_open(interval, _at(start))), last), limit
            )
        else:
            opens = list(_opens(interval, max(listed, _back(interval, last, limit - 1)), last))
        rows = [self.row(pair, interval, opened) for opened in opens]
        self.forming_served += [
            (pair.symbol, interval, opened) for opened in opens if self._forming(interval, opened)
        ]
        return rows

    def _forming(self, interval: str, opened: datetime) -> bool:
        return _following(interval, opened) > self.now

    def row(self, pair: Pair, interval: str, opened: datetime) -> list[object]:
        """The kline of ``pair`` opened at ``opened``: final once its period has passed, else
        as it stands at ``now``."""
        ends = _following(interval, opened)
        until = min(ends, self.now)
        first, latest = pair.price_at(opened), pair.price_at(until)
        done = (until - opened) / (ends - opened)
        volume = done * (10 + (opened.toordinal() % 7))
        return [
            _ms(opened),
            f"{first:.8f}",
            f"{max(first, latest) * 1.004:.8f}",
            f"{min(first, latest) * 0.996:.8f}",
            f"{latest:.8f}",
            f"{volume:.8f}",
            _ms(ends) - 1,
            f"{volume * (first + latest) / 2:.8f}",
            int(done * 1000),
            f"{volume / 2:.8f}",
            f"{volume * (first + latest) / 4:.8f}",
            "0",
        ]


def _symbol_info(pair: Pair) -> dict[str, object]:
    """A pair as exchangeInfo lists it (the fields ccxt reads, in Binance's shape)."""
    return {
        "symbol": pair.symbol,
        "status": "TRADING",
        "baseAsset": pair.base,
        "baseAssetPrecision": 8,
        "quoteAsset": pair.quote,
        "quotePrecision": 8,
        "quoteAssetPrecision": 8,
        "orderTypes": ["LIMIT", "LIMIT_MAKER", "MARKET"],
        "icebergAllowed": True,
        "ocoAllowed": True,
        "isSpotTradingAllowed": True,
        "isMarginTradingAllowed": False,
        "filters": [
            {
                "filterType": "PRICE_FILTER",
                "minPrice": "0.01000000",
                "maxPrice": "1000000.00000000",
                "tickSize": "0.01000000",
            },
            {
                "filterType": "LOT_SIZE",
                "minQty": "0.00001000",
                "maxQty": "9000.00000000",
                "stepSize": "0.00001000",
            },
            {
                "filterType": "NOTIONAL",
                "minNotional": "5.00000000",
                "maxNotional": "9000000.00000000",
            },
        ],
        "permissions": [],
        "permissionSets": [["SPOT"]],
        "defaultSelfTradePreventionMode": "EXPIRE_MAKER",
        "allowedSelfTradePreventionModes": ["NONE", "EXPIRE_MAKER"],
    }


def _unsigned(params: dict[str, str], name: str) -> int | None:
    value = params.get(name)
    if value is None:
        return None
    if not value.isdigit() or len(value) > 20:
        raise BinanceError(
            400,
            -1100,
            f"Illegal characters found in parameter '{name}'; legal range is '^[0-9]{{1,20}}$'.",
        )
    return int(value)


def _invalid(name: str) -> BinanceError:
    return BinanceError(400, -1130, f"Data sent for parameter '{name}' is not valid.")


def _ms(when: datetime) -> int:
    return int((when - EPOCH).total_seconds() * 1000)


def _at(ms: int) -> datetime:
    return EPOCH + timedelta(milliseconds=ms)


def _floor(interval: str, when: datetime) -> datetime:
    """The open of the candle holding ``when``."""
    step = INTERVALS[interval]
    if step is None:
        return when.replace(day=1, hour=0, minute=0, second=0, microsecond=0)
    origin = FIRST_MONDAY if interval == "1w" else EPOCH
    return origin + step * ((when - origin) // step)


def _following(interval: str, opened: datetime) -> datetime:
    """The open of the candle after the one opened at ``opened``."""
    step = INTERVALS[interval]
    if step is not None:
        return opened + step
    return opened.replace(year=opened.year + opened.month // 12, month=opened.month % 12 + 1)


def _next_open(interval: str, when: datetime) -> datetime:
    """The first candle open at or after ``when``."""
    floor = _floor(interval, when)
    return floor if floor == when else _following(interval, floor)


def _back(interval: str, opened: datetime, count: int) -> datetime:
    """The open ``count`` candles before the one opened at ``opened``."""
    step = INTERVALS[interval]
    if step is not None:
        return opened - step * count
    months = opened.year * 12 + opened.month - 1 - count
    return opened.replace(year=months // 12, month=months % 12 + 1)


def _opens(interval: str, first: datetime, last: datetime) -> Iterator[datetime]:
    """Candle opens from ``first`` to ``last``, both included."""
    opened = first
    while opened <= last:
        yield opened
        opened = _following(interval, opened)


def _take(opens: Iterator[datetime], limit: int) -> list[datetime]:
    return [opened for _, opened in zip(range(limit), opens, strict=False)]


def _body(error: BinanceError) -> dict[str, object]:
    return {"code": error.code, "msg": error.msg}
