"""Crypto candles from one exchange's public market data, through ccxt's synchronous client.

Exchanges serve the candle still forming now as if it were a bar (freqtrade #1715: strategies
backtested on it), so a candle is kept only once it is complete: its period's end at or before
``as_of`` and before now. Candles are labelled at their open in UTC, as every quantdesk bar
(a daily candle opens at 00:00 UTC of its day, a weekly one on Monday, a monthly one on the
1st); an exchange whose candles open elsewhere for a timeframe is refused for it.

- Symbols: our ``BTC-USD`` (Yahoo's form), ``BTC/USDT`` or ``eth-usdt`` name the exchange's
  spot market base/quote; Binance lists no US-dollar pairs, so there ``USD`` reads as ``USDT``.
  A symbol that is not such a pair (AAPL, a simulated ticker) is ``NotCovered`` (a
  ``NotConfigured``) before any request; a pair the exchange does not list is ``NoData``
  naming the exchange.
- Requests: public endpoints only, no key. Candles are asked for in windows of at most the
  exchange's rows per call (ccxt's ``features``: Binance 1000, Kraken 720, Coinbase 300),
  from the lookback's first period to ``as_of``. Kraken's OHLC keeps only its latest 720
  candles per timeframe: an older window comes back without them.
- Limits: ccxt's own throttle and retries are off; the exchange's ``rateLimit`` (ms between
  requests) becomes the desk's quota (``quota_of``), and every HTTP request ccxt sends
  (``load_markets``' included) first passes the gate: the client's ``fetch`` is wrapped.
- ``base_url`` replaces the origin of every API root in ccxt's ``urls['api']`` (the paths stay:
  Binance's ``public`` root ``/api/v3``, Kraken's ``public`` root, whose paths are ``/0/public/``,
  Coinbase's ``rest`` root with ``/v2`` and ``/api/v3``), so a stand-in or a proxy gets them all.
- Errors: a 429 or 418 (ccxt's ``RateLimitExceeded``, ``DDoSProtection``) is ``RateLimited``
  with the exchange's ``Retry-After``; a timeout, a dropped connection, a 5xx is
  ``VendorFailure``; a symbol the exchange refuses is ``NoData``; a request it refuses as
  malformed is ``NotConfigured`` (asking again cannot help; the router asks the next vendor).
"""

from __future__ import annotations

import importlib
import math
import re
import threading
from collections.abc import Callable, Iterator
from dataclasses import dataclass
from datetime import UTC, datetime, timedelta
from functools import cached_property
from typing import Any
from urllib.parse import urlsplit

import pandas as pd
from pydantic import ValidationError

from shared.config import CcxtSettings, VendorQuota
from shared.data.bundled import read_bars
from shared.data.contracts import DataKind, DataVendor
from shared.data.quota import Gate, LocalQuota
from shared.errors import (
    InvalidInput,
    NoData,
    NotConfigured,
    NotCovered,
    QuantdeskError,
    RateLimited,
    VendorFailure,
)
from shared.extras import install_command
from shared.market.bar_source import BarQuery, BarSource
from shared.market.bars import Bar, Timeframe
from shared.market.resample import bucket_ends, bucket_starts

NAME = "ccxt"
QUOTA_WINDOW = 1.0
"""Seconds per quota window: the exchange's spacing as a count per second, so the desk's
fixed margin on each window (``quota.MARGIN``) costs a fifth of a second, not a multiple."""
DEFAULT_RETRY_AFTER = timedelta(seconds=60)
"""An exchange's 429 without ``Retry-After``: Binance counts request weight per minute."""
QUOTES = frozenset(
    {"USD", "USDT", "USDC", "FDUSD", "DAI", "EUR", "GBP", "JPY", "TRY", "BTC", "ETH", "BNB"}
)
"""The quote currencies a crypto pair of ours may name; anything else is not a pair
(``BRK-B`` is a share class)."""
PAIR = re.compile(r"^([A-Z0-9]{2,12})[-/]([A-Z0-9]{2,6})$")
QUOTE_ALIASES: dict[str, dict[str, str]] = {"binance": {"USD": "USDT"}}
"""Quotes an exchange lists under another name: Binance has tether, not dollars."""
EXCHANGE_OPTIONS: dict[str, dict[str, Any]] = {
    "binance": {"fetchMarkets": {"types": ["spot"]}},
}
"""ccxt options per exchange: Binance's markets spot only (its futures' lists are two more
requests, on other hosts, for markets never read)."""
WINDOWED = frozenset({"binance", "coinbase"})
"""Exchanges whose ccxt ``fetch_ohlcv`` takes ``until`` (Binance's ``endTime``, Coinbase's
``end``); Kraken's OHLC takes only ``since`` and answers up to its latest candle."""
CCXT_TIMEFRAMES: dict[Timeframe, str] = {
    Timeframe.M1: "1m",
    Timeframe.M5: "5m",
    Timeframe.M15: "15m",
    Timeframe.M30: "30m",
    Timeframe.H1: "1h",
    Timeframe.H4: "4h",
    Timeframe.D1: "1d",
    Timeframe.W1: "1w",
    Timeframe.MO1: "1M",
}
DETAIL_CHARS = 300
"""How much of ccxt's error message (method, URL, the exchange's body) an error quotes."""


def quota_of(rate_limit_ms: float) -> VendorQuota:
    """The desk's quota for an exchange whose ccxt ``rateLimit`` is ``rate_limit_ms``: that
    many milliseconds per request, counted over ``QUOTA_WINDOW`` (or one request per
    ``rateLimit`` when it is longer)."""
    seconds = max(QUOTA_WINDOW, rate_limit_ms / 1000)
    return VendorQuota(requests=max(1, math.floor(seconds * 1000 / rate_limit_ms)), seconds=seconds)


def pair_of(symbol: str, exchange: str) -> str:
    """``symbol`` as the exchange's unified market (``BASE/QUOTE``), or ``NotCovered`` (a
    ``NotConfigured`` the router passes over silently) when it is not a crypto pair."""
    found = PAIR.match(symbol.strip().upper())
    if found is None or found[2] not in QUOTES:
        raise NotCovered(
            f"ccxt serves crypto pairs only, and {symbol!r} is not one (a pair is BASE-QUOTE or "
            f"BASE/QUOTE with a quote among {', '.join(sorted(QUOTES))})",
            fix="Route this symbol's bars to a stock vendor; for crypto write e.g. BTC-USD.",
        )
    base, quote = found[1], found[2]
    return f"{base}/{QUOTE_ALIASES.get(exchange, {}).get(quote, quote)}"


class CcxtVendor(DataVendor):
    """Bars of crypto pairs from ``settings.exchange`` (Binance, Kraken or Coinbase).

    ``gate_of(quota)`` gives the desk's gate for the quota derived from the exchange's
    ``rateLimit`` (None: a ``LocalQuota``); ``clock`` is now, for the candle still forming.
    ccxt and the exchange's client are loaded at the first request, not when the router is
    built.
    """

    name = NAME
    kinds = frozenset({DataKind.OHLCV})

    def __init__(
        self,
        settings: CcxtSettings,
        gate_of: Callable[[VendorQuota], Gate] | None = None,
        *,
        clock: Callable[[], datetime] = lambda: datetime.now(UTC),
    ) -> None:
        self._settings = settings
        self._gate_of = gate_of
        self._id = settings.exchange
        self._waits = threading.local()
        self._clock = clock
        self._markets = threading.Lock()

    @cached_property
    def _ccxt(self) -> Any:
        """The ccxt module, imported at the first request: 0.4 s and 45 MB that a worker
        whose desk asks for no crypto bars never spends (the router builds every vendor)."""
        return _import_ccxt()

    @cached_property
    def _exchange(self) -> Any:
        """The exchange's ccxt client, built at the first request, every HTTP request of it
        passing the gate of the quota its ``rateLimit`` gives."""
        options = {"maxRetriesOnFailure": 0, **EXCHANGE_OPTIONS.get(self._id, {})}
        exchange = getattr(self._ccxt, self._id)(
            {
                "timeout": round(self._settings.timeout_seconds * 1000),
                "enableRateLimit": False,
                "options": options,
            }
        )
        if self._settings.base_url:
            _redirect(exchange.urls["api"], self._settings.base_url)
        quota = quota_of(exchange.rateLimit)
        gate = self._gate_of(quota) if self._gate_of else LocalQuota(NAME, quota)
        _hook(exchange, gate, self._waits)
        return exchange

    @property
    def _rows_per_call(self) -> int:
        return int(self._exchange.features["spot"]["fetchOHLCV"]["limit"])

    def now(self) -> pd.Timestamp:
        """The vendor's clock, in UTC: a candle ending after it is still forming."""
        return pd.Timestamp(self._clock()).tz_convert(UTC)

    @property
    def exchange(self) -> str:
        """The exchange's ccxt id, as errors name it."""
        return self._id

    def ohlcv(self, symbol: str, timeframe: Timeframe, as_of: datetime, lookback: int) -> list[Bar]:
        """The last ``lookback`` complete candles of ``symbol``'s pair up to ``as_of``."""
        pair = pair_of(symbol, self._id)
        wanted = Timeframe.parse(timeframe)
        code = CCXT_TIMEFRAMES[wanted]
        if code not in (self._exchange.timeframes or {}):
            served = [t for t, c in CCXT_TIMEFRAMES.items() if c in self._exchange.timeframes]
            raise NotConfigured(
                f"ccxt: {self._id} has no {wanted} candles",
                fix=f"Use one of {', '.join(served)}, or route {wanted} bars elsewhere.",
            )
        source = _Candles(self, pair, wanted)
        return read_bars(source, f"ccxt ({self._id})", pair, wanted, as_of, lookback)

    def candles(
        self, pair: str, timeframe: Timeframe, first: pd.Timestamp, last: pd.Timestamp
    ) -> Iterator[list[Any]]:
        """The exchange's candle rows of ``pair`` opened from ``first`` to ``last``, asked
        for in windows of at most the rows one call returns."""
        self._listed(pair)
        cursor = first
        while cursor <= last:
            after = _shifted(cursor, timeframe, self._rows_per_call)
            until = min(_ms(after) - 1, _ms(last))
            window = {"until": until} if self._id in WINDOWED else {}
            rows = self._call(
                f"candles of {pair}",
                self._exchange.fetch_ohlcv,
                pair,
                CCXT_TIMEFRAMES[timeframe],
                since=_ms(cursor),
                limit=self._rows_per_call,
                params=window,
            )
            yield from (row for row in rows if _ms(cursor) <= row[0] <= until)
            cursor = after

    def _listed(self, pair: str) -> None:
        """Load the exchange's markets once; ``NoData`` when it does not list ``pair``."""
        with self._markets:
            if not self._exchange.markets:
                self._call("markets", self._exchange.load_markets)
        if pair not in self._exchange.markets:
            raise NoData(f"ccxt: {self._id} lists no spot market {pair}")

    def _call(self, what: str, request: Callable[..., Any], *args: Any, **kwargs: Any) -> Any:
        """``request(*args, **kwargs)``, ccxt's failures as the router's kinds, naming the
        exchange."""
        ccxt = self._ccxt
        try:
            return request(*args, **kwargs)
        except QuantdeskError:
            raise  # the desk's gate: its own RateLimited
        except (ccxt.RateLimitExceeded, ccxt.DDoSProtection) as error:
            wait = getattr(self._waits, "retry_after", None) or ""
            retry_after = timedelta(seconds=int(wait)) if wait.isdigit() else DEFAULT_RETRY_AFTER
            raise RateLimited(
                f"ccxt: {self._id} throttled the {what}: {_detail(error)}", retry_after=retry_after
            ) from None
        except ccxt.BadSymbol as error:
            raise NoData(f"ccxt: {self._id} does not know the {what}: {_detail(error)}") from None
        except ccxt.OperationFailed as error:  # network, timeout, exchange down, 5xx
            raise VendorFailure(
                f"ccxt: {self._id} failed the {what}: {type(error).__name__}: {_detail(error)}"
            ) from None
        except ccxt.BadRequest as error:
            raise NotConfigured(
                f"ccxt: {self._id} refused the request for the {what}: {_detail(error)}",
                fix="Route these bars to another vendor.",
            ) from None
        except ccxt.BaseError as error:
            raise VendorFailure(
                f"ccxt: {self._id} answered the {what} with an error: "
                f"{type(error).__name__}: {_detail(error)}"
            ) from None


@dataclass(frozen=True)
class _Candles(BarSource):
    """One pair's candles as a ``BarSource``, so ``read_bars`` applies the rules every bar
    vendor shares (a naive ``as_of`` refused, stale bars ``NoData``)."""

    vendor: CcxtVendor
    pair: str
    timeframe: Timeframe

    def symbols(self) -> tuple[str, ...]:
        return ()  # any pair the exchange lists

    def read_query(self, query: BarQuery) -> list[Bar]:
        """The last ``lookback`` candles complete by the cutoff and by now."""
        if query.cutoff is None or query.lookback is None:
            raise InvalidInput("lookback", "an exchange read needs as_of and lookback")
        cutoff = min(query.cutoff, self.vendor.now())
        current = bucket_starts(pd.DatetimeIndex([cutoff]), self.timeframe)[0]
        first = _shifted(current, self.timeframe, -query.lookback)
        rows = {
            row[0]: row for row in self.vendor.candles(self.pair, self.timeframe, first, cutoff)
        }
        opens = pd.DatetimeIndex(pd.to_datetime(sorted(rows), unit="ms", utc=True))
        complete = opens[bucket_ends(opens, self.timeframe) <= cutoff]
        where = f"{self.timeframe} candles of {self.pair} complete by {cutoff.isoformat()}"
        if complete.empty:
            raise NoData(f"ccxt: {self.vendor.exchange} has no {where} since {first.isoformat()}")
        if not (bucket_starts(complete, self.timeframe) == complete).all():
            raise NotConfigured(
                f"ccxt: {self.vendor.exchange}'s {CCXT_TIMEFRAMES[self.timeframe]} candles do "
                f"not open on quantdesk's {self.timeframe} periods (UTC; weeks on Monday, months "
                "on the 1st)",
                fix="Use another timeframe, or another exchange for it.",
            )
        try:
            return [_bar(rows[_ms(opened)], opened) for opened in complete[-query.lookback :]]
        except ValidationError as error:
            raise NoData(
                f"ccxt: {self.vendor.exchange}'s {where} are unusable: {error.errors()[0]['msg']}"
            ) from None


def _bar(row: list[Any], opened: pd.Timestamp) -> Bar:
    """A ccxt row ``[open ms, open, high, low, close, volume]`` as a bar labelled at its open."""
    return Bar(
        time=opened.to_pydatetime(),
        open=row[1],
        high=row[2],
        low=row[3],
        close=row[4],
        volume=row[5] or 0.0,
    )


def _hook(exchange: Any, gate: Gate, waits: threading.local) -> None:
    """Make every HTTP request of ``exchange`` pass ``gate`` first, and keep each response's
    ``Retry-After`` for the thread that asked (ccxt's own copy is shared by all threads)."""
    send, received = exchange.fetch, exchange.on_rest_response

    def fetch(url: str, method: str = "GET", headers: Any = None, body: Any = None) -> Any:
        gate()
        return send(url, method, headers, body)

    def on_rest_response(
        code: int, reason: str, url: str, method: str, response_headers: Any, *rest: Any
    ) -> Any:
        waits.retry_after = (response_headers or {}).get("Retry-After")
        return received(code, reason, url, method, response_headers, *rest)

    exchange.fetch, exchange.on_rest_response = fetch, on_rest_response


def _redirect(roots: dict[str, Any], base_url: str) -> None:
    """Point every API root in ``roots`` (ccxt's ``urls['api']``, nested by section) at
    ``base_url``, keeping each root's path."""
    base = base_url.rstrip("/")
    for key, root in roots.items():
        if isinstance(root, dict):
            _redirect(root, base_url)
        elif isinstance(root, str):
            roots[key] = base + urlsplit(root).path


def _shifted(start: pd.Timestamp, timeframe: Timeframe, periods: int) -> pd.Timestamp:
    """The period ``periods`` after (before, when negative) the one opening at ``start``."""
    if timeframe is Timeframe.MO1:
        return start + pd.DateOffset(months=periods)
    return start + periods * timeframe.duration


def _ms(when: pd.Timestamp) -> int:
    return int(when.value // 1_000_000)


def _detail(error: Exception) -> str:
    text = " ".join(str(error).split())
    return text if len(text) <= DETAIL_CHARS else text[: DETAIL_CHARS - 1] + "…"


def _import_ccxt() -> Any:
    """The ccxt module, or ``NotConfigured`` with the command that installs it."""
    try:
        return importlib.import_module("ccxt")
    except ImportError:
        raise NotConfigured(
            "ccxt: the optional package ccxt is not installed",
            fix=f"Run `{install_command('crypto')}`, or route crypto bars to another vendor.",
        ) from None
