"""The vendors a route names, as built: the vendor factory, the disk cache it puts around
network vendors, and the bundled vendor."""

from __future__ import annotations

import json
from datetime import UTC, datetime, timedelta
from pathlib import Path

import pytest

from shared.config import load_settings
from shared.data import factory
from shared.data.bundled import BundledVendor
from shared.data.cache import CachedVendor
from shared.data.contracts import DataKind, DataVendor
from shared.data.factory import UnavailableVendor, VendorSpec, build_router, build_vendor
from shared.data.local import LocalVendor
from shared.errors import (
    InvalidInput,
    NoData,
    NotConfigured,
    RateLimited,
    VendorFailure,
)
from shared.market.bars import Bar, Timeframe
from tests.fakes.canned_vendor import NEWS, PAST, WEEK, FakeVendor

GOOG_DAY = datetime(2010, 6, 1, 15, tzinfo=UTC)


# -- the factory -------------------------------------------------------------------------------


def test_factory_builds_the_routed_vendors_by_name(tmp_path: Path) -> None:
    built = build_router(load_settings(data_dir=tmp_path))

    assert set(built.vendors) - {"ccxt"} == {"local", "bundled", "sim"}
    assert isinstance(built.vendors["local"], LocalVendor)
    assert built.vendors["local"].root == tmp_path / "data"
    assert isinstance(built.vendors["bundled"], BundledVendor)


def test_routed_bars_fall_through_empty_local_data_to_bundled(tmp_path: Path) -> None:
    built = build_router(load_settings(data_dir=tmp_path))

    routed = built.call(
        DataKind.OHLCV, lambda v: v.ohlcv("GOOG", Timeframe.D1, GOOG_DAY, 5), as_of=GOOG_DAY
    )

    assert routed.vendor == "bundled"
    assert routed.value[-1].time == datetime(2010, 6, 1, tzinfo=UTC)


def test_factory_builds_the_sim_vendor_with_the_seed(tmp_path: Path) -> None:
    try:
        from shared.data.sim import SimVendor
    except ImportError:
        pytest.skip("shared.data.sim.SimVendor is not written yet (another engineer's module)")

    vendor = build_vendor("sim", load_settings(data_dir=tmp_path, data_seed=11))

    assert isinstance(vendor, SimVendor)


def test_network_vendors_are_cached_unless_disabled(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setitem(
        factory.VENDORS, "yfinance", VendorSpec(lambda s: FakeVendor("yfinance"), cacheable=True)
    )

    cached = build_vendor("yfinance", load_settings(data_dir=tmp_path))
    direct = build_vendor("yfinance", load_settings(data_dir=tmp_path, data_cache=False))

    assert isinstance(cached, CachedVendor)
    assert cached.directory == tmp_path / "data-cache"
    assert isinstance(direct, FakeVendor)


def test_a_vendor_that_cannot_be_built_says_why_on_every_read(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    def missing(settings: object) -> DataVendor:
        raise ImportError("No module named 'yfinance'")

    monkeypatch.setitem(factory.VENDORS, "yfinance", VendorSpec(missing, cacheable=True))
    vendor = build_vendor("yfinance", load_settings(data_dir=tmp_path))

    assert isinstance(vendor, UnavailableVendor)
    with pytest.raises(NotConfigured, match="yfinance is unavailable: No module named"):
        vendor.macro("CPI", PAST)


def test_protocol_methods_are_named_after_the_kinds() -> None:
    """``UnavailableVendor`` and ``CachedVendor`` rely on it."""
    described = {"name", "kinds", "reach"}  # what the vendor is, not a read
    methods = {name for name in vars(DataVendor) if not name.startswith("_")} - described

    assert methods == {kind.value for kind in DataKind}


def test_an_unknown_vendor_name_is_invalid_input(tmp_path: Path) -> None:
    with pytest.raises(
        InvalidInput,
        match="bundled, ccxt, finnhub, fred, local, massive, sec, sim, stocktwits, yfinance",
    ):
        build_vendor("bloomberg", load_settings(data_dir=tmp_path))


# -- the disk cache ----------------------------------------------------------------------------


def cached(inner: FakeVendor, directory: Path) -> CachedVendor:
    return CachedVendor(inner, directory)


def test_a_repeated_read_is_served_from_disk(tmp_path: Path) -> None:
    inner = FakeVendor("net")

    first = cached(inner, tmp_path).news(PAST, WEEK, symbol="ACME")
    again = cached(inner, tmp_path).news(PAST, WEEK, symbol="ACME")  # a new run, same directory

    assert first == again == NEWS
    assert inner.calls == 1
    (file,) = (tmp_path / "net" / "news").iterdir()
    stored = json.loads(file.read_text())
    assert stored["key"]["args"]["as_of"] == PAST.isoformat()
    assert datetime.fromisoformat(stored["fetched_at"]) > PAST  # what was asked, and when


def test_bars_round_trip_through_the_cache(tmp_path: Path) -> None:
    bars = BundledVendor().ohlcv("GOOG", Timeframe.D1, GOOG_DAY, 3)
    inner = FakeVendor("net", bars)

    cached(inner, tmp_path).ohlcv("GOOG", Timeframe.D1, PAST, 3)
    again = cached(inner, tmp_path).ohlcv("GOOG", Timeframe.D1, PAST, 3)

    assert again == bars and all(isinstance(bar, Bar) for bar in again)
    assert inner.calls == 1


def test_different_arguments_are_different_keys(tmp_path: Path) -> None:
    inner = FakeVendor("net")
    vendor = cached(inner, tmp_path)

    vendor.news(PAST, WEEK)
    vendor.news(PAST + timedelta(hours=1), WEEK)
    vendor.news(PAST, WEEK, topic="macro")
    vendor.news(PAST.astimezone(UTC), WEEK)  # the same instant: the same key

    assert inner.calls == 3
    assert len(list((tmp_path / "net" / "news").iterdir())) == 3


@pytest.mark.parametrize(
    "error",
    [
        RateLimited("slow down", retry_after=timedelta(seconds=5)),
        VendorFailure("502"),
        NotConfigured("no key"),
        InvalidInput("symbol", "bad"),
    ],
)
def test_errors_that_may_change_are_not_cached(tmp_path: Path, error: Exception) -> None:
    inner = FakeVendor("net", error)

    for _ in range(2):
        with pytest.raises(type(error)):
            cached(inner, tmp_path).news(PAST, WEEK)

    assert inner.calls == 2
    assert not tmp_path.joinpath("net").exists()


def test_no_data_is_cached_as_a_marker(tmp_path: Path) -> None:
    inner = FakeVendor("net", NoData("nothing in the window"))

    for _ in range(2):
        with pytest.raises(NoData, match="nothing in the window"):
            cached(inner, tmp_path).news(PAST, WEEK)

    assert inner.calls == 1


def test_reads_near_now_are_not_cached(tmp_path: Path) -> None:
    inner = FakeVendor("net")
    vendor = CachedVendor(inner, tmp_path, now=lambda: PAST + timedelta(hours=2))

    vendor.news(PAST, WEEK)
    vendor.news(PAST, WEEK)

    assert inner.calls == 2


def test_writes_are_atomic(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    def crash(source: str, target: str) -> None:
        raise OSError("disk full")

    monkeypatch.setattr("shared.data.cache.os.replace", crash)

    with pytest.raises(OSError, match="disk full"):
        cached(FakeVendor("net"), tmp_path).news(PAST, WEEK)

    assert list((tmp_path / "net" / "news").iterdir()) == []  # no partial file, no temp left


def test_an_unreadable_cache_file_is_refetched_and_replaced(tmp_path: Path) -> None:
    inner = FakeVendor("net")
    cached(inner, tmp_path).news(PAST, WEEK)
    (file,) = (tmp_path / "net" / "news").iterdir()
    file.write_text('{"key": "truncated')

    assert cached(inner, tmp_path).news(PAST, WEEK) == NEWS
    assert inner.calls == 2
    assert json.loads(file.read_text())["value"][0]["id"] == "1"


def test_the_cache_keeps_the_inner_vendors_name_and_kinds(tmp_path: Path) -> None:
    inner = FakeVendor("net", kinds=frozenset({DataKind.NEWS}))

    vendor = cached(inner, tmp_path)

    assert (vendor.name, vendor.kinds) == ("net", {DataKind.NEWS})
    assert isinstance(vendor, DataVendor)


# -- the bundled vendor ------------------------------------------------------------------------


def test_bundled_bars_end_at_as_of() -> None:
    bars = BundledVendor().ohlcv("GOOG", Timeframe.D1, GOOG_DAY, 10)

    assert len(bars) == 10
    assert bars[-1].time == datetime(2010, 6, 1, tzinfo=UTC)


@pytest.mark.parametrize(
    ("symbol", "as_of", "problem"),
    [
        ("GOOG", datetime(2004, 8, 18, tzinfo=UTC), "before"),
        ("GOOG", datetime(2020, 1, 2, tzinfo=UTC), "too long before as_of"),
        ("AAPL", datetime(2010, 6, 1, tzinfo=UTC), "unknown symbol"),
        ("BTCUSD", datetime(2020, 1, 2, tzinfo=UTC), "no 1d bars"),
    ],
)
def test_bundled_data_it_lacks_is_no_data(symbol: str, as_of: datetime, problem: str) -> None:
    with pytest.raises(NoData, match=problem):
        BundledVendor().ohlcv(symbol, Timeframe.D1, as_of, 10)


@pytest.mark.parametrize(
    ("as_of", "symbols"),
    [
        (datetime(2005, 1, 3, tzinfo=UTC), ["^GSPC", "^IXIC", "GOOG"]),
        (datetime(2012, 6, 1, tzinfo=UTC), ["^GSPC", "^IXIC", "BTCUSD", "GOOG"]),
        (datetime(2017, 6, 1, tzinfo=UTC), ["^GSPC", "^IXIC", "^VIX", "BTCUSD", "EURUSD"]),
    ],
)
def test_bundled_universe_lists_the_symbols_with_bars_at_as_of(
    as_of: datetime, symbols: list[str]
) -> None:
    assert [x.symbol for x in BundledVendor().universe(as_of)] == symbols


def test_bundled_universe_gives_asset_types() -> None:
    listings = BundledVendor().universe(datetime(2012, 6, 1, tzinfo=UTC))

    assert {x.symbol: x.asset_type for x in listings} == {
        "^GSPC": "index",
        "^IXIC": "index",
        "BTCUSD": "crypto",
        "GOOG": "equity",
    }


def test_bundled_universe_before_any_data_is_no_data() -> None:
    with pytest.raises(NoData):
        BundledVendor().universe(datetime(1998, 1, 1, tzinfo=UTC))


def test_bundled_refuses_other_kinds_naming_them() -> None:
    with pytest.raises(NotConfigured, match="bundled does not serve news"):
        BundledVendor().news(PAST, WEEK)
    assert BundledVendor().kinds == {DataKind.OHLCV, DataKind.UNIVERSE}
    assert isinstance(BundledVendor(), DataVendor)
