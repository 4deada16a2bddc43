"""A disk cache in front of a slow or metered vendor, so reruns and backtests do not re-fetch.

One JSON file per answer, at ``<directory>/<vendor>/<kind>/<sha256>.json``, the
hash taken over the vendor, the kind and every argument of the read (``as_of``
in UTC, windows in seconds). The file repeats that key, with when the answer was fetched
(``fetched_at``), and a file whose key or
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
import inspect
import json
import logging
import os
import tempfile
from collections.abc import Callable
from datetime import UTC, datetime, timedelta
from enum import Enum
from pathlib import Path
from typing import Any, Concatenate, ParamSpec, TypeVar, get_type_hints

from pydantic import TypeAdapter, ValidationError

from shared.data.contracts import DataKind, DataVendor, Reach
from shared.errors import NoData

log = logging.getLogger(__name__)

T = TypeVar("T")
R = TypeVar("R")
P = ParamSpec("P")

FORMAT = 1
"""Part of every key: bump it when the stored form changes, and old files are simply missed."""


def _plain(value: object) -> object:
    """An argument as a stable JSON value: UTC ISO times, seconds, enum values."""
    if isinstance(value, datetime):
        return value.astimezone(UTC).isoformat()
    if isinstance(value, timedelta):
        return value.total_seconds()
    if isinstance(value, Enum):
        return value.value
    raise TypeError(f"cannot key a cache on {type(value).__name__}")


def _cached(
    read: Callable[Concatenate[DataVendor, P], R],
) -> Callable[Concatenate[CachedVendor, P], R]:
    """``CachedVendor``'s form of the ``DataVendor`` method ``read``: keyed by every argument
    by name, defaults included, then asked of the inner vendor's own method of that name."""
    kind = DataKind(read.__name__)  # each read is named for the kind it reads
    signature = inspect.signature(read)
    # How the answer is written to and read back from JSON: the protocol's own return type.
    result: TypeAdapter[R] = TypeAdapter(get_type_hints(read)["return"])

    def cached(self: CachedVendor, /, *args: P.args, **kwargs: P.kwargs) -> R:
        bound = signature.bind(self.inner, *args, **kwargs)
        bound.apply_defaults()
        arguments = dict(list(bound.arguments.items())[1:])  # all but the vendor itself
        method: Callable[P, R] = getattr(self.inner, read.__name__)
        return self._read(kind, result, arguments, lambda: method(*args, **kwargs))

    cached.__name__ = cached.__qualname__ = read.__name__
    cached.__doc__ = f"The inner vendor's ``{read.__name__}``, from disk once settled."
    return cached


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

    def reach(self, kind: DataKind) -> Reach:
        """The inner vendor's: the cache keeps its answers, it does not widen them."""
        return self.inner.reach(kind)

    universe = _cached(DataVendor.universe)
    ohlcv = _cached(DataVendor.ohlcv)
    news = _cached(DataVendor.news)
    social = _cached(DataVendor.social)
    fundamentals = _cached(DataVendor.fundamentals)
    statements = _cached(DataVendor.statements)
    insider = _cached(DataVendor.insider)
    sectors = _cached(DataVendor.sectors)
    industry = _cached(DataVendor.industry)
    movers = _cached(DataVendor.movers)
    indices = _cached(DataVendor.indices)
    macro = _cached(DataVendor.macro)

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

    def _read(
        self,
        kind: DataKind,
        result: TypeAdapter[T],
        args: dict[str, object],
        fetch: Callable[[], T],
    ) -> T:
        if not self._settled(args["as_of"]):
            return fetch()
        path, key = self._path_for(kind, args)
        stored = self._stored(path, key)
        if stored is not None:
            if "no_data" in stored:
                raise NoData(stored["no_data"])
            try:
                return result.validate_python(stored["value"])
            except (KeyError, ValidationError) as error:
                log.warning("ignoring cache file %s: %s", path, error)
        fetched = {"key": key, "fetched_at": self._now().isoformat()}
        try:
            value = fetch()
        except NoData as error:
            _write(path, {**fetched, "no_data": str(error)})
            raise
        _write(path, {**fetched, "value": result.dump_python(value, mode="json")})
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
