"""Routing: each data kind has an ordered chain of vendors; the first that answers wins.

A vendor that does not serve the kind, is not configured, has no data in the
window, or fails is skipped and the next one is asked. If none answers, a
retryable failure (throttled, broken) wins over "no data" because the data may
exist, so Temporal retries; if no vendor of the chain could even be asked, the
caller gets ``NotConfigured``; otherwise ``NoData`` listing what each vendor
said, which the agent reads as an answer.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass
from typing import Generic, TypeVar

from shared.data.contracts import DataKind, DataVendor
from shared.errors import InvalidInput, NoData, NotConfigured, RateLimited, VendorFailure

T = TypeVar("T")

# Vendors a route may name though they are not built here (an optional extra).
_OPTIONAL_VENDORS = frozenset({"yfinance"})

DEFAULT_ROUTES: dict[DataKind, tuple[str, ...]] = {
    **{kind: ("local", "sim") for kind in DataKind},
    DataKind.OHLCV: ("local", "bundled", "sim"),
}


@dataclass(frozen=True)
class Routed(Generic[T]):
    """A vendor's answer and which vendor gave it (recorded in tool results)."""

    value: T
    vendor: str


class DataRouter:
    """Asks the vendors of a kind's chain in order."""

    def __init__(
        self,
        vendors: Mapping[str, DataVendor],
        routes: Mapping[DataKind, Sequence[str]] = DEFAULT_ROUTES,
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

    def call(self, kind: DataKind, read: Callable[[DataVendor], T]) -> Routed[T]:
        """``read(vendor)`` on the first vendor of ``kind``'s chain that answers."""
        said: list[str] = []
        retryable: RateLimited | VendorFailure | None = None
        asked_any = False
        for name in self.routes.get(kind, ()):
            vendor = self.vendors.get(name)
            if vendor is None or kind not in vendor.kinds:
                said.append(f"{name}: does not serve {kind.value}")
                continue
            try:
                return Routed(read(vendor), name)
            except NotConfigured as error:
                said.append(f"{name}: {error}")
            except NoData as error:
                said.append(f"{name}: {error}")
                asked_any = True
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
