"""A disk cache in front of a slow or metered vendor, so reruns and backtests do not re-fetch.

One JSON file per answer, at ``<directory>/<vendor>/<kind>/<sha256>.json``, the
hash taken over the vendor, the kind and every argument of the read (``as_of``
in UTC, windows in seconds). The file repeats that key, and a file whose key or
value does not read back is ignored and rewritten, so a format change is never
an error. Writes go to a temporary file in the same directory, then
``os.replace``: a reader sees a whole file or none, even with several workers.

What is cached: answers for an ``as_of`` at least ``settle`` (default a day)
before now. The key holds ``as_of``, so a past read's answer stays right; a read
at or near now is not cached because the vendor's answer can still grow
(a bar still forming, news still arriving). ``NoData`` is cached as a marker
under the same rule: "nothing as of a past time" is as stable as an answer, and
a backtest asking a symbol the vendor lacks on every step would otherwise
re-fetch each time. Never cached: ``RateLimited`` and ``VendorFailure`` (a later
attempt may succeed), ``NotConfigured`` (a key or package may be added) and
``InvalidInput`` (the caller's to fix).
"""

from __future__ import annotations

import hashlib
import json
import logging
import os
import tempfile
from collections.abc import Callable
from datetime import UTC, datetime, timedelta
from enum import Enum
from pathlib import Path
from typing import Any, TypeVar

from pydantic import TypeAdapter, ValidationError

from shared.data.contracts import (
    DataKind,
    DataVendor,
    Fundamentals,
    IndexLevel,
    IndustryCompany,
    InsiderTransaction,
    Listing,
    MacroSeries,
    MarketMovers,
    NewsItem,
    Sector,
    SectorPerformance,
    SocialPost,
    Statement,
    StatementKind,
)
from shared.errors import NoData
from shared.market.bars import Bar, Timeframe

log = logging.getLogger(__name__)

T = TypeVar("T")

FORMAT = 1
"""Part of every key: bump it when the stored form changes, and old files are simply missed."""

_RESULTS: dict[DataKind, TypeAdapter[Any]] = {
    DataKind.UNIVERSE: TypeAdapter(list[Listing]),
    DataKind.OHLCV: TypeAdapter(list[Bar]),
    DataKind.NEWS: TypeAdapter(list[NewsItem]),
    DataKind.SOCIAL: TypeAdapter(list[SocialPost]),
    DataKind.FUNDAMENTALS: TypeAdapter(Fundamentals),
    DataKind.STATEMENTS: TypeAdapter(list[Statement]),
    DataKind.INSIDER: TypeAdapter(list[InsiderTransaction]),
    DataKind.SECTORS: TypeAdapter(list[SectorPerformance]),
    DataKind.INDUSTRY: TypeAdapter(list[IndustryCompany]),
    DataKind.MOVERS: TypeAdapter(MarketMovers),
    DataKind.INDICES: TypeAdapter(list[IndexLevel]),
    DataKind.MACRO: TypeAdapter(MacroSeries),
}
"""How each kind's answer is written to and read back from JSON."""


def _plain(value: object) -> object:
    """An argument as a stable JSON value: UTC ISO times, seconds, enum values."""
    if isinstance(value, datetime):
        return value.astimezone(UTC).isoformat()
    if isinstance(value, timedelta):
        return value.total_seconds()
    if isinstance(value, Enum):
        return value.value
    raise TypeError(f"cannot key a cache on {type(value).__name__}")


class CachedVendor:
    """``inner`` with its settled answers kept in ``directory`` (see the module docstring)."""

    def __init__(
        self,
        inner: DataVendor,
        directory: Path,
        *,
        settle: timedelta = timedelta(days=1),
        now: Callable[[], datetime] = lambda: datetime.now(UTC),
    ) -> None:
        self.inner = inner
        self.name = inner.name  # routed answers credit the real source
        self.kinds = inner.kinds
        self.directory = Path(directory)
        self.settle = settle
        self._now = now

    def universe(self, as_of: datetime) -> list[Listing]:
        return self._read(DataKind.UNIVERSE, {"as_of": as_of}, lambda: self.inner.universe(as_of))

    def ohlcv(self, symbol: str, timeframe: Timeframe, as_of: datetime, lookback: int) -> list[Bar]:
        return self._read(
            DataKind.OHLCV,
            {"symbol": symbol, "timeframe": timeframe, "as_of": as_of, "lookback": lookback},
            lambda: self.inner.ohlcv(symbol, timeframe, as_of, lookback),
        )

    def news(
        self,
        as_of: datetime,
        window: timedelta,
        *,
        symbol: str | None = None,
        topic: str | None = None,
        limit: int = 20,
    ) -> list[NewsItem]:
        return self._read(
            DataKind.NEWS,
            {"as_of": as_of, "window": window, "symbol": symbol, "topic": topic, "limit": limit},
            lambda: self.inner.news(as_of, window, symbol=symbol, topic=topic, limit=limit),
        )

    def social(
        self, symbol: str, as_of: datetime, window: timedelta, limit: int = 50
    ) -> list[SocialPost]:
        return self._read(
            DataKind.SOCIAL,
            {"symbol": symbol, "as_of": as_of, "window": window, "limit": limit},
            lambda: self.inner.social(symbol, as_of, window, limit),
        )

    def fundamentals(self, symbol: str, as_of: datetime) -> Fundamentals:
        return self._read(
            DataKind.FUNDAMENTALS,
            {"symbol": symbol, "as_of": as_of},
            lambda: self.inner.fundamentals(symbol, as_of),
        )

    def statements(
        self, symbol: str, kind: StatementKind, as_of: datetime, periods: int = 4
    ) -> list[Statement]:
        return self._read(
            DataKind.STATEMENTS,
            {"symbol": symbol, "kind": kind, "as_of": as_of, "periods": periods},
            lambda: self.inner.statements(symbol, kind, as_of, periods),
        )

    def insider(self, symbol: str, as_of: datetime, window: timedelta) -> list[InsiderTransaction]:
        return self._read(
            DataKind.INSIDER,
            {"symbol": symbol, "as_of": as_of, "window": window},
            lambda: self.inner.insider(symbol, as_of, window),
        )

    def sectors(self, as_of: datetime) -> list[SectorPerformance]:
        return self._read(DataKind.SECTORS, {"as_of": as_of}, lambda: self.inner.sectors(as_of))

    def industry(self, sector: Sector, as_of: datetime, limit: int = 10) -> list[IndustryCompany]:
        return self._read(
            DataKind.INDUSTRY,
            {"sector": sector, "as_of": as_of, "limit": limit},
            lambda: self.inner.industry(sector, as_of, limit),
        )

    def movers(self, as_of: datetime, limit: int = 10) -> MarketMovers:
        return self._read(
            DataKind.MOVERS,
            {"as_of": as_of, "limit": limit},
            lambda: self.inner.movers(as_of, limit),
        )

    def indices(self, as_of: datetime) -> list[IndexLevel]:
        return self._read(DataKind.INDICES, {"as_of": as_of}, lambda: self.inner.indices(as_of))

    def macro(self, series: str, as_of: datetime, lookback: int = 24) -> MacroSeries:
        return self._read(
            DataKind.MACRO,
            {"series": series, "as_of": as_of, "lookback": lookback},
            lambda: self.inner.macro(series, as_of, lookback),
        )

    def _path_for(self, kind: DataKind, args: dict[str, object]) -> tuple[Path, dict[str, Any]]:
        """The file of a read and the key stored in it."""
        key = json.loads(
            json.dumps(
                {"format": FORMAT, "vendor": self.name, "kind": kind.value, "args": args},
                default=_plain,
                sort_keys=True,
            )
        )
        digest = hashlib.sha256(json.dumps(key, sort_keys=True).encode()).hexdigest()
        return self.directory / self.name / kind.value / f"{digest}.json", key

    def _read(self, kind: DataKind, args: dict[str, object], fetch: Callable[[], T]) -> T:
        if not self._settled(args["as_of"]):
            return fetch()
        path, key = self._path_for(kind, args)
        stored = self._stored(path, key)
        if stored is not None:
            if "no_data" in stored:
                raise NoData(stored["no_data"])
            try:
                return _RESULTS[kind].validate_python(stored["value"])  # type: ignore[no-any-return]
            except (KeyError, ValidationError) as error:
                log.warning("ignoring cache file %s: %s", path, error)
        try:
            value = fetch()
        except NoData as error:
            _write(path, {"key": key, "no_data": str(error)})
            raise
        _write(path, {"key": key, "value": _RESULTS[kind].dump_python(value, mode="json")})
        return value

    def _settled(self, as_of: object) -> bool:
        """Whether ``as_of`` is far enough in the past for the answer to be final."""
        if not isinstance(as_of, datetime) or as_of.utcoffset() is None:
            return False  # the inner vendor refuses it; nothing to cache
        return as_of <= self._now() - self.settle

    @staticmethod
    def _stored(path: Path, key: dict[str, Any]) -> dict[str, Any] | None:
        """The file's content if it holds this key, else None (missing, foreign or unreadable)."""
        try:
            stored = json.loads(path.read_text(encoding="utf-8"))
        except FileNotFoundError:
            return None
        except (OSError, ValueError) as error:
            log.warning("ignoring cache file %s: %s", path, error)
            return None
        return stored if isinstance(stored, dict) and stored.get("key") == key else None


def _write(path: Path, content: dict[str, Any]) -> None:
    """Write ``content`` as JSON all at once: a temporary file beside it, then a rename."""
    path.parent.mkdir(parents=True, exist_ok=True)
    handle, temporary = tempfile.mkstemp(dir=path.parent, prefix=f".{path.stem}.", suffix=".tmp")
    try:
        with os.fdopen(handle, "w", encoding="utf-8") as file:
            json.dump(content, file)
        os.replace(temporary, path)
    except BaseException:
        Path(temporary).unlink(missing_ok=True)
        raise
