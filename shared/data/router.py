"""Routing: each data kind has an ordered chain of vendors; the first that answers wins.

A vendor that does not serve the kind, is not configured, has no data in the
window, or fails is skipped and the next one is asked. If none answers, a
retryable failure (throttled, broken) wins over "no data" because the data may
exist, so Temporal retries; if no vendor of the chain could even be asked, the
caller gets ``NotConfigured``; otherwise ``NoData`` listing what each vendor
said, which the agent reads as an answer.

The router knows time. A vendor that answers a kind only about now (``Reach``: Yahoo's
latest news, a live screener) is never asked for an ``as_of`` older than its freshness
window: it would answer first with today's figure. Nor is it asked after a point-in-time
vendor found nothing: that vendor's "no data" for the window is the answer, and a now-only
vendor cannot know better. Every vendor passed over on the way to the answer, and why,
travels with it (``Routed.passed``), so the agent and the report can say so.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass
from datetime import UTC, datetime
from typing import Generic, TypeVar

from shared.data.contracts import DataKind, DataVendor, Reach
from shared.errors import (
    InvalidInput,
    NoData,
    NotConfigured,
    NotCovered,
    RateLimited,
    VendorFailure,
)

T = TypeVar("T")

# Vendors a route may name though they are not built here (an optional extra).
_OPTIONAL_VENDORS = frozenset({"yfinance", "ccxt"})

DEFAULT_CHAINS: dict[DataKind, tuple[str, ...]] = {
    DataKind.OHLCV: ("local", "bundled", "massive", "ccxt", "yfinance", "sim"),
    DataKind.NEWS: ("local", "finnhub", "massive", "yfinance", "sim"),
    DataKind.SOCIAL: ("local", "sim"),
    DataKind.FUNDAMENTALS: ("local", "sec", "finnhub", "yfinance", "sim"),
    DataKind.STATEMENTS: ("local", "sec", "finnhub", "yfinance", "sim"),
    DataKind.INSIDER: ("local", "sec", "finnhub", "yfinance", "sim"),
    DataKind.SECTORS: ("local", "bars", "yfinance", "sim"),
    DataKind.INDUSTRY: ("local", "bars", "yfinance", "sim"),
    DataKind.MOVERS: ("local", "massive", "bars", "yfinance", "sim"),
    DataKind.INDICES: ("local", "bars", "yfinance", "sim"),
    DataKind.MACRO: ("local", "fred", "sim"),
    DataKind.UNIVERSE: ("local", "massive", "sim"),
}
"""Every kind's chain on a desk with every vendor set up: your files first; then the vendors
that answer for any past ``as_of`` from what was public then (point-in-time vendors, the most
exact first: the SEC's filings before Finnhub's copy of them, Massive's raw bars before
Yahoo's, which a later split rewrites); then Yahoo, which answers most kinds only about now
(the router asks it only then); the simulated market last, whose records say they are
simulated. A vendor that is not set up (no key, no contact, its extra not installed) is left
out (``shared.data.factory.routes_of``), so a desk with no key runs on what it has."""

OFFLINE_VENDORS = frozenset({"local", "bundled", "sim"})
"""The vendors that need no network: a desk with nothing set up runs on them alone."""

DEFAULT_ROUTES: dict[DataKind, tuple[str, ...]] = {
    kind: tuple(name for name in chain if name in OFFLINE_VENDORS)
    for kind, chain in DEFAULT_CHAINS.items()
}
"""The default chains of a desk with no network vendor set up."""


def _utc_now() -> datetime:
    return datetime.now(UTC)


@dataclass(frozen=True)
class Routed(Generic[T]):
    """A vendor's answer, which vendor gave it, and why each vendor before it did not:
    ``passed`` all of them (a vendor not configured, one with no data), ``timed`` those not
    asked because of the time asked about, which whoever reads the answer must know (it says
    what the answer could not include)."""

    value: T
    vendor: str
    passed: tuple[str, ...] = ()
    timed: tuple[str, ...] = ()


class DataRouter:
    """Asks the vendors of a kind's chain in order."""

    def __init__(
        self,
        vendors: Mapping[str, DataVendor],
        routes: Mapping[DataKind, Sequence[str]] = DEFAULT_ROUTES,
        clock: Callable[[], datetime] = _utc_now,
    ) -> None:
        unknown = sorted(
            {n for chain in routes.values() for n in chain} - set(vendors) - _OPTIONAL_VENDORS
        )
        if unknown:
            raise InvalidInput(
                "data_routes",
                f"unknown vendor(s) {', '.join(unknown)}",
                fix=f"Use vendors among: {', '.join(sorted(set(vendors) | _OPTIONAL_VENDORS))}.",
            )
        self.vendors = dict(vendors)
        self.routes = {kind: tuple(chain) for kind, chain in routes.items()}
        self.clock = clock

    def call(
        self, kind: DataKind, read: Callable[[DataVendor], T], *, as_of: datetime
    ) -> Routed[T]:
        """``read(vendor)`` on the first vendor of ``kind``'s chain that answers for ``as_of``."""
        said: list[str] = []
        timed: list[str] = []
        retryable: RateLimited | VendorFailure | None = None
        asked_any = False
        found_nothing: str | None = None  # a point-in-time vendor that had no data
        for name in self.routes.get(kind, ()):
            vendor = self.vendors.get(name)
            if vendor is None or kind not in vendor.kinds:
                said.append(f"{name}: does not serve {kind.value}")
                continue
            reach = vendor.reach(kind)
            if not reach.point_in_time:
                if not reach.answers_for(as_of, self.clock()):
                    # Nothing to be had for that time from it: "no data", not a missing vendor.
                    timed.append(_too_old(name, kind, reach, as_of))
                    said.append(timed[-1])
                    asked_any = True
                    continue
                if found_nothing is not None:
                    said.append(
                        f"{name}: not asked: {found_nothing} had no {kind.value} data as of "
                        f"{as_of.isoformat()}, and {name} answers only about now"
                    )
                    continue
            try:
                return Routed(read(vendor), name, tuple(said), tuple(timed))
            except NotCovered:
                continue
            except NotConfigured as error:
                said.append(f"{name}: {error}")
            except NoData as error:
                said.append(f"{name}: {error}")
                asked_any = True
                if reach.point_in_time:
                    found_nothing = found_nothing or name
            except (RateLimited, VendorFailure) as error:
                said.append(f"{name}: {error}")
                retryable = error
        summary = "; ".join(said) or "no vendor is routed"
        if isinstance(retryable, RateLimited):
            raise RateLimited(f"{kind.value}: {summary}", retry_after=retryable.retry_after)
        if retryable is not None:
            raise VendorFailure(f"{kind.value}: {summary}")
        if not asked_any:
            raise NotConfigured(
                f"no vendor is configured for {kind.value} data ({summary})",
                fix="Configure a vendor of this kind, or route the kind to one in "
                "QUANTDESK_DATA_ROUTES.",
            )
        raise NoData(f"no {kind.value} data ({summary})")


def _too_old(name: str, kind: DataKind, reach: Reach, as_of: datetime) -> str:
    """Why a now-only vendor was not asked about ``as_of``."""
    assert reach.fresh_for is not None
    days = reach.fresh_for.total_seconds() / 86400
    return (
        f"{name}: skipped: it answers {kind.value} only about now ({reach.why}; an as_of at "
        f"most {days:g} day(s) old), and {as_of.isoformat()} is older"
    )
