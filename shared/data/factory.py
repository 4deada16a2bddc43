"""The data router built from settings: one table from vendor name to how the vendor is built.

Vendors are imported when built, not when this module is: ``shared.config``
imports the table for the names a route may use, and must stay free of pandas;
and a router builds only the vendors its routes name, so an unused optional
vendor is never imported. A vendor that cannot be built here (its module or
package missing) becomes an ``UnavailableVendor`` whose every read is
``NotConfigured`` with the reason: the router falls through to the next vendor
and its "no data" answer says why this one was skipped.

Directories, under ``settings.data_dir``: ``data/`` holds the user's files for
the ``local`` vendor, ``data-cache/`` the answers of network vendors.
"""

from __future__ import annotations

import logging
from collections.abc import Callable
from dataclasses import dataclass
from importlib.util import find_spec
from typing import TYPE_CHECKING, NoReturn

from shared.data.cache import CachedVendor
from shared.data.contracts import POINT_IN_TIME, DataKind, DataVendor, Reach
from shared.data.router import DEFAULT_CHAINS, DataRouter
from shared.errors import ConfigError, NotConfigured, lookup

if TYPE_CHECKING:
    from shared.config import Settings, VendorQuota
    from shared.data.from_bars import OtherVendors

log = logging.getLogger(__name__)

LOCAL_DATA_DIR = "data"
CACHE_DIR = "data-cache"


def _always(settings: Settings) -> str | None:
    return None


@dataclass(frozen=True)
class VendorSpec:
    """How to build a vendor, whether its answers are worth keeping on disk, and whether it is
    set up (``ready``: None, else why not; a default chain leaves out a vendor not set up)."""

    build: Callable[[Settings], DataVendor]
    cacheable: bool = False
    ready: Callable[[Settings], str | None] = _always


def _local(settings: Settings) -> DataVendor:
    from shared.data.local import LocalVendor

    # mypy reads the protocol's ``kinds`` as settable; LocalVendor's is a read-only property.
    return LocalVendor(settings.data_dir / LOCAL_DATA_DIR)


def _bundled(settings: Settings) -> DataVendor:
    from shared.data.bundled import BundledVendor

    return BundledVendor()


def _sim(settings: Settings) -> DataVendor:
    from shared.data.sim import SimVendor

    return SimVendor(seed=settings.data_seed)


def _yfinance(settings: Settings) -> DataVendor:
    from shared.data.yfinance_vendor import YFinanceVendor

    return YFinanceVendor()


def _fred(settings: Settings) -> DataVendor:
    from shared.data.fred import FredVendor

    return FredVendor(settings.fred, gate=desk_gate("fred", settings))


def _sec(settings: Settings) -> DataVendor:
    from shared.data.sec import SecVendor
    from shared.data.sec_mirror import MIRROR_DIR, SecMirror

    return SecVendor(
        settings.sec,
        price_at=others_than("sec", settings).close,
        gate=desk_gate("sec", settings),
        mirror=SecMirror(settings.data_dir / MIRROR_DIR),
    )


def _finnhub(settings: Settings) -> DataVendor:
    from shared.data.finnhub import FinnhubVendor

    return FinnhubVendor(
        settings.finnhub,
        gate=desk_gate("finnhub", settings),
        price_at=others_than("finnhub", settings).close,
    )


def _massive(settings: Settings) -> DataVendor:
    from shared.data.massive import MassiveVendor

    return MassiveVendor(settings.massive, gate=desk_gate("massive", settings))


def _ccxt(settings: Settings) -> DataVendor:
    from shared.data.crypto import CcxtVendor

    return CcxtVendor(settings.ccxt, gate_of=lambda quota: desk_gate("ccxt", settings, quota))


def _stocktwits(settings: Settings) -> DataVendor:
    from shared.data.stocktwits import StocktwitsVendor

    own = settings.stocktwits
    return StocktwitsVendor(
        own.base_url, own.timeout_seconds, gate=desk_gate("stocktwits", settings)
    )


def desk_gate(
    vendor: str, settings: Settings, default: VendorQuota | None = None
) -> Callable[[], None]:
    """The desk's quotas of ``vendor``, counted in the desk's database (``shared.data.quota``):
    ``vendor``'s own (``settings.data_quotas[vendor]``, else ``default``) and every further
    window named ``vendor/...`` (Finnhub allows 60 a minute *and* 30 a second), passed in
    that order before each request."""
    from shared.data.quota import QuotaStore

    store = QuotaStore.from_settings(settings)
    quotas = {k: q for k, q in settings.data_quotas.items() if k.startswith(f"{vendor}/")}
    own = settings.data_quotas.get(vendor, default)
    if own is not None:
        quotas = {vendor: own, **quotas}
    if not quotas:
        raise ConfigError(
            "data_quotas",
            f"no quota for the data vendor {vendor}",
            fix=f'Set QUANTDESK_DATA_QUOTAS=\'{{"{vendor}": {{"requests": 1, "seconds": 1}}}}\'.',
        )
    gates = [store.gate(key, quota) for key, quota in quotas.items()]

    def gate() -> None:
        for each in gates:
            each()

    return gate


def others_than(vendor: str, settings: Settings) -> OtherVendors:
    """The bars' and the universe's chains less ``vendor`` and less the simulated market, for
    a vendor that computes from other vendors' real data (a figure computed from the sim's bars
    would lose the mark that says it is simulated; the sim computes its own); built on first
    use."""
    from shared.data.from_bars import OtherVendors

    def build() -> DataRouter:
        kinds = (DataKind.OHLCV, DataKind.UNIVERSE)
        chains = {
            k: [n for n in routes_of(settings).chains[k] if n not in (vendor, "sim")] for k in kinds
        }
        names = sorted({name for chain in chains.values() for name in chain})
        return DataRouter({name: build_vendor(name, settings) for name in names}, chains)

    return OtherVendors(build)


def _bars(settings: Settings) -> DataVendor:
    from shared.data.from_bars import FromBarsVendor

    return FromBarsVendor(others_than("bars", settings))


def _keyed(block: str) -> Callable[[Settings], str | None]:
    """Set up when ``settings.<block>.api_key`` holds a key."""

    def ready(settings: Settings) -> str | None:
        from shared import config

        key = getattr(settings, block).api_key
        variable = getattr(config, f"{block.upper()}_KEY_ENV")
        return None if key is not None and key.get_secret_value() else f"no key: {variable}"

    return ready


def _installed(module: str, extra: str) -> Callable[[Settings], str | None]:
    """Set up when ``module`` (of the extra ``extra``) is installed; found without importing it."""

    def ready(settings: Settings) -> str | None:
        from shared.extras import install_command

        return None if find_spec(module) else f"not installed: {install_command(extra)}"

    return ready


def _sec_ready(settings: Settings) -> str | None:
    from shared.config import EDGAR_IDENTITY_ENV

    return None if settings.sec.identity else f"no contact: {EDGAR_IDENTITY_ENV}"


def _bars_ready(settings: Settings) -> str | None:
    """The figures computed from bars are worth asking for only over real bars of the whole
    market: with neither vendor of them set up they would restate the simulated market's own."""
    if any(VENDORS[name].ready(settings) is None for name in ("massive", "yfinance")):
        return None
    return "computes from real bars: neither massive nor yfinance is set up"


VENDORS: dict[str, VendorSpec] = {
    "local": VendorSpec(_local),
    "bundled": VendorSpec(_bundled),
    "sim": VendorSpec(_sim),
    "yfinance": VendorSpec(_yfinance, cacheable=True, ready=_installed("yfinance", "online")),
    "fred": VendorSpec(_fred, cacheable=True, ready=_keyed("fred")),
    "sec": VendorSpec(_sec, cacheable=True, ready=_sec_ready),
    "bars": VendorSpec(_bars, ready=_bars_ready),
    "finnhub": VendorSpec(_finnhub, cacheable=True, ready=_keyed("finnhub")),
    "massive": VendorSpec(_massive, cacheable=True, ready=_keyed("massive")),
    "ccxt": VendorSpec(_ccxt, cacheable=True, ready=_installed("ccxt", "crypto")),
    # Now only, so nothing of it is worth caching; `quantdesk data record social` reads it.
    "stocktwits": VendorSpec(_stocktwits),
}
"""Every vendor a route may name."""


@dataclass(frozen=True)
class Routes:
    """The chains a desk uses: yours where ``data_routes`` sets a kind, else the default
    chain less the vendors not set up (``left_out``: vendor -> why)."""

    chains: dict[DataKind, list[str]]
    left_out: dict[str, str]


def routes_of(settings: Settings) -> Routes:
    """The chains ``settings`` make: ``DEFAULT_CHAINS`` with what is set up, under your own."""
    left_out = {
        name: why
        for name in sorted({n for chain in DEFAULT_CHAINS.values() for n in chain})
        if (why := VENDORS[name].ready(settings)) is not None
    }
    chains = {
        kind: list(settings.data_routes.get(kind) or [n for n in chain if n not in left_out])
        for kind, chain in DEFAULT_CHAINS.items()
    }
    return Routes(chains, left_out)


_READS = frozenset(kind.value for kind in DataKind)
"""The protocol's read methods: each is named after its kind."""


@dataclass
class UnavailableVendor:
    """Stands in for a vendor that cannot run here; every read says why.

    The protocol's methods are named after the kinds, so each is answered by
    ``__getattr__`` with the same ``NotConfigured``.
    """

    name: str
    reason: str
    kinds: frozenset[DataKind] = frozenset(DataKind)

    def reach(self, kind: DataKind) -> Reach:
        """Any: every read says why the vendor is unavailable, whatever the time."""
        return POINT_IN_TIME

    def __getattr__(self, method: str) -> Callable[..., NoReturn]:
        if method not in _READS:
            raise AttributeError(method)

        def unavailable(*args: object, **kwargs: object) -> NoReturn:
            raise NotConfigured(f"{self.name} is unavailable: {self.reason}")

        return unavailable


def build_vendor(name: str, settings: Settings) -> DataVendor:
    """The vendor called ``name``, behind a disk cache when it is a network vendor."""
    spec = lookup(VENDORS, name, field="data_routes", what="data vendor")
    try:
        vendor = spec.build(settings)
    except (ImportError, NotConfigured, ConfigError) as error:
        log.warning("data vendor %s is unavailable: %s", name, error)
        return UnavailableVendor(name, str(error))
    if spec.cacheable and settings.data_cache:
        return CachedVendor(vendor, settings.data_dir / CACHE_DIR)
    return vendor


def build_router(settings: Settings) -> DataRouter:
    """A router over the chains of ``routes_of(settings)``, in their order per kind."""
    chains = routes_of(settings).chains
    names = sorted({name for chain in chains.values() for name in chain})
    return DataRouter({name: build_vendor(name, settings) for name in names}, chains)
