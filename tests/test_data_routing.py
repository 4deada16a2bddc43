"""Routing, the route settings, the vendor factory, the disk cache and the bundled vendor."""

from __future__ import annotations

import json
import subprocess
import sys
from datetime import UTC, datetime, timedelta
from pathlib import Path

import pytest

from shared.config import load_settings
from shared.data import factory
from shared.data.bundled import BundledVendor
from shared.data.cache import CachedVendor
from shared.data.contracts import POINT_IN_TIME, DataKind, DataVendor, NewsItem, Reach
from shared.data.factory import UnavailableVendor, VendorSpec, build_router, build_vendor
from shared.data.local import LocalVendor
from shared.data.router import DEFAULT_ROUTES, DataRouter
from shared.errors import (
    ConfigError,
    InvalidInput,
    NoData,
    NotConfigured,
    NotCovered,
    RateLimited,
    VendorFailure,
)
from shared.market.bars import Bar, Timeframe

PAST = datetime(2024, 1, 10, tzinfo=UTC)
GOOG_DAY = datetime(2010, 6, 1, 15, tzinfo=UTC)
WEEK = timedelta(days=7)
NEWS = [
    NewsItem(id="1", published_at=PAST, title="t", summary="s", source="fake", symbols=["ACME"])
]


class FakeVendor:
    """Answers every read with ``outcome`` (raised if it is an exception) and counts calls."""

    def __init__(
        self,
        name: str,
        outcome: object = NEWS,
        kinds: frozenset[DataKind] = frozenset(DataKind),
        reach: Reach = POINT_IN_TIME,
    ) -> None:
        self.name = name
        self.kinds = kinds
        self.outcome = outcome
        self.calls = 0
        self._reach = reach

    def reach(self, kind: DataKind) -> Reach:
        return self._reach

    def _answer(self) -> object:
        self.calls += 1
        if isinstance(self.outcome, Exception):
            raise self.outcome
        return self.outcome

    def news(
        self,
        as_of: datetime,
        window: timedelta,
        *,
        symbol: str | None = None,
        topic: str | None = None,
        limit: int = 20,
    ) -> object:
        return self._answer()

    def ohlcv(self, symbol: str, timeframe: Timeframe, as_of: datetime, lookback: int) -> object:
        return self._answer()


def read_news(vendor: DataVendor) -> list[NewsItem]:
    return vendor.news(PAST, WEEK)


def router(*vendors: FakeVendor) -> DataRouter:
    return DataRouter(
        {v.name: v for v in vendors},
        {DataKind.NEWS: [v.name for v in vendors]},
    )


# -- the router ------------------------------------------------------------------------------


def test_first_vendor_that_answers_wins_and_is_recorded() -> None:
    skipped = [FakeVendor("a", NotConfigured("no key")), FakeVendor("b", NoData("none"))]
    winner, never = FakeVendor("c"), FakeVendor("d")

    routed = router(*skipped, winner, never).call(DataKind.NEWS, read_news, as_of=PAST)

    assert (routed.value, routed.vendor) == (NEWS, "c")
    assert [v.calls for v in (*skipped, winner, never)] == [1, 1, 1, 0]


def test_a_vendor_not_serving_the_kind_is_not_asked() -> None:
    deaf = FakeVendor("a", kinds=frozenset({DataKind.OHLCV}))

    routed = router(deaf, FakeVendor("b")).call(DataKind.NEWS, read_news, as_of=PAST)

    assert (routed.vendor, deaf.calls) == ("b", 0)


def test_rate_limited_beats_no_data_and_keeps_retry_after() -> None:
    throttled = FakeVendor("a", RateLimited("slow down", retry_after=timedelta(seconds=30)))

    with pytest.raises(RateLimited) as caught:
        router(throttled, FakeVendor("b", NoData("none"))).call(
            DataKind.NEWS, read_news, as_of=PAST
        )

    assert caught.value.retry_after == timedelta(seconds=30)
    assert "a: slow down" in str(caught.value)


def test_a_failure_beats_no_data_and_stays_retryable() -> None:
    with pytest.raises(VendorFailure) as caught:
        router(FakeVendor("a", NoData("none")), FakeVendor("b", VendorFailure("502"))).call(
            DataKind.NEWS, read_news, as_of=PAST
        )

    assert caught.value.retryable


def test_all_no_data_is_no_data_listing_each_vendor() -> None:
    vendors = [FakeVendor("a", NoData("empty window")), FakeVendor("b", NotConfigured("no key"))]

    with pytest.raises(NoData) as caught:
        router(*vendors).call(DataKind.NEWS, read_news, as_of=PAST)

    assert "a: empty window" in str(caught.value)
    assert "b: no key" in str(caught.value)


def test_a_chain_with_no_vendor_that_could_be_asked_is_not_configured() -> None:
    vendors = [
        FakeVendor("a", NotConfigured("no key")),
        FakeVendor("b", kinds=frozenset({DataKind.OHLCV})),
    ]

    with pytest.raises(NotConfigured) as caught:
        router(*vendors).call(DataKind.NEWS, read_news, as_of=PAST)

    assert "a: no key" in str(caught.value) and "QUANTDESK_DATA_ROUTES" in str(caught.value)


def test_an_unknown_vendor_in_routes_is_invalid_input() -> None:
    with pytest.raises(InvalidInput, match="zeta"):
        DataRouter({"a": FakeVendor("a")}, {DataKind.NEWS: ["a", "zeta"]})


# -- settings ----------------------------------------------------------------------------------


def test_a_desk_with_nothing_set_up_routes_to_the_offline_vendors(tmp_path: Path) -> None:
    routes = factory.routes_of(load_settings(data_dir=tmp_path))

    for kind, chain in routes.chains.items():
        assert [n for n in chain if n != "ccxt"] == list(DEFAULT_ROUTES[kind])
    assert routes.left_out["finnhub"] == "no key: FINNHUB_API_KEY"
    assert routes.left_out["sec"] == "no contact: EDGAR_IDENTITY"
    assert "neither massive nor yfinance" in routes.left_out["bars"]


def test_a_key_puts_its_vendor_in_the_default_chains_in_their_order(tmp_path: Path) -> None:
    settings = load_settings(
        data_dir=tmp_path,
        finnhub={"api_key": "k1"},
        massive={"api_key": "k2"},
        sec={"identity": "Jane Doe jane@example.com"},
    )

    chains = factory.routes_of(settings).chains

    assert chains[DataKind.NEWS] == ["local", "finnhub", "massive", "sim"]
    assert chains[DataKind.INSIDER] == ["local", "sec", "finnhub", "sim"]
    assert chains[DataKind.MOVERS] == ["local", "massive", "bars", "sim"]
    assert chains[DataKind.UNIVERSE] == ["local", "massive", "sim"]
    assert chains[DataKind.MACRO] == ["local", "sim"]


def test_routes_from_env_json_replace_the_default_chain_of_their_kind(
    monkeypatch: pytest.MonkeyPatch, tmp_path: Path
) -> None:
    monkeypatch.setenv("QUANTDESK_DATA_ROUTES", '{"news": ["local", "yfinance", "sim"]}')
    settings = load_settings(data_dir=tmp_path)

    chains = factory.routes_of(settings).chains

    assert settings.data_routes == {DataKind.NEWS: ["local", "yfinance", "sim"]}
    assert chains[DataKind.NEWS] == ["local", "yfinance", "sim"]
    assert chains[DataKind.MACRO] == list(DEFAULT_ROUTES[DataKind.MACRO])


def test_a_vendor_that_does_not_cover_a_symbol_is_passed_silently() -> None:
    exchange = FakeVendor("exchange", NotCovered("exchange serves crypto pairs only"))
    sim = FakeVendor("sim", NEWS)
    router = DataRouter({"exchange": exchange, "sim": sim}, {DataKind.NEWS: ["exchange", "sim"]})

    routed = router.call(DataKind.NEWS, lambda v: v.news(PAST, WEEK), as_of=PAST)

    assert (routed.vendor, routed.passed, exchange.calls) == ("sim", (), 1)


@pytest.mark.parametrize(
    ("value", "expected"),
    [
        ('{"newz": ["sim"]}', "unknown data kind(s) newz; accepted: ohlcv, news,"),
        ('{"news": ["sim", "reuters"]}', "unknown data vendor(s) reuters; accepted: local,"),
        ('{"news": "sim"}', "expected an object of kind -> list of vendors"),
        ("news=sim", "not valid JSON"),
    ],
)
def test_bad_routes_fail_naming_the_variable_and_accepted_values(
    monkeypatch: pytest.MonkeyPatch, value: str, expected: str
) -> None:
    monkeypatch.setenv("QUANTDESK_DATA_ROUTES", value)

    with pytest.raises(ConfigError) as caught:
        load_settings()

    assert "QUANTDESK_DATA_ROUTES" in str(caught.value)
    assert expected in str(caught.value)


def test_seed_and_cache_settings(monkeypatch: pytest.MonkeyPatch) -> None:
    defaults = load_settings()
    monkeypatch.setenv("QUANTDESK_DATA_SEED", "11")
    monkeypatch.setenv("QUANTDESK_DATA_CACHE", "false")

    settings = load_settings()

    assert (defaults.data_seed, defaults.data_cache) == (7, True)
    assert (settings.data_seed, settings.data_cache) == (11, False)


def test_importing_settings_does_not_import_pandas() -> None:
    code = "import sys, shared.config; sys.exit('pandas' in sys.modules)"

    assert subprocess.run([sys.executable, "-c", code], check=False).returncode == 0


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


# -- the router knows time ----------------------------------------------------------------------

NOW = datetime(2026, 12, 6, 12, tzinfo=UTC)
LATEST_ONLY = Reach(timedelta(days=7), "it keeps only its latest stories")


def timed_router(*vendors: FakeVendor) -> DataRouter:
    return DataRouter(
        {v.name: v for v in vendors}, {DataKind.NEWS: [v.name for v in vendors]}, clock=lambda: NOW
    )


def test_a_now_only_vendor_is_skipped_for_a_past_as_of_and_named_with_its_reason() -> None:
    live, archive = FakeVendor("live", reach=LATEST_ONLY), FakeVendor("archive")

    routed = timed_router(live, archive).call(DataKind.NEWS, read_news, as_of=PAST)

    assert (routed.vendor, live.calls) == ("archive", 0)
    assert routed.passed == routed.timed
    [reason] = routed.timed
    assert reason.startswith("live: skipped: it answers news only about now")
    assert "it keeps only its latest stories" in reason and PAST.isoformat() in reason


def test_a_now_only_vendor_answers_for_an_as_of_within_its_freshness() -> None:
    live = FakeVendor("live", reach=LATEST_ONLY)

    routed = timed_router(live, FakeVendor("archive")).call(
        DataKind.NEWS, read_news, as_of=NOW - timedelta(days=2)
    )

    assert (routed.vendor, routed.passed) == ("live", ())


def test_a_point_in_time_no_data_is_the_answer_a_now_only_vendor_does_not_replace() -> None:
    archive = FakeVendor("archive", NoData("no stories in the window"))
    live = FakeVendor("live", reach=LATEST_ONLY)

    with pytest.raises(NoData) as caught:
        timed_router(archive, live).call(DataKind.NEWS, read_news, as_of=NOW)

    assert live.calls == 0
    assert "archive: no stories in the window" in str(caught.value)
    assert "live: not asked: archive had no news data" in str(caught.value)


def test_a_chain_only_now_only_vendors_serve_has_no_data_for_the_past() -> None:
    """An answer the agent reads ("nothing for that date, and why"), not a missing vendor."""
    with pytest.raises(NoData, match="live: skipped"):
        timed_router(FakeVendor("live", reach=LATEST_ONLY)).call(
            DataKind.NEWS, read_news, as_of=PAST
        )


def test_the_cache_keeps_its_vendors_reach(tmp_path: Path) -> None:
    live = FakeVendor("live", reach=LATEST_ONLY)

    assert CachedVendor(live, tmp_path).reach(DataKind.NEWS) == LATEST_ONLY


def test_yahoos_latest_only_kinds_are_now_only_and_its_bars_point_in_time() -> None:
    from shared.data.yfinance_vendor import YFinanceVendor

    yahoo = YFinanceVendor()
    now_only = {kind for kind in yahoo.kinds if not yahoo.reach(kind).point_in_time}

    assert now_only == {
        DataKind.NEWS,
        DataKind.MOVERS,
        DataKind.STATEMENTS,
        DataKind.FUNDAMENTALS,
        DataKind.INSIDER,
    }
    assert yahoo.reach(DataKind.OHLCV).point_in_time


def test_a_tool_answer_names_the_vendors_passed_over_and_why() -> None:
    from shared.tools.data_tools import DataReader

    reader = DataReader(
        timed_router(FakeVendor("live", reach=LATEST_ONLY), FakeVendor("archive")), PAST
    )
    answer = reader.answer(reader.read(DataKind.NEWS, read_news))

    assert isinstance(answer.value, dict) and answer.vendor == "archive"
    [reason] = answer.value["vendors_passed_over"]
    assert reason.startswith("live: skipped: it answers news only about now")


def test_the_reports_data_section_names_each_vendor_and_those_passed_over() -> None:
    from shared.agents.pipeline.schemas import AnalystKind
    from workflows.pipeline import render_data_sources
    from workflows.pipeline_contracts import DataSource

    skipped = "yfinance: skipped: it answers news only about now (...)"
    section = render_data_sources(
        [
            DataSource(
                analyst=AnalystKind.NEWS, tool="get_news", vendor="sim", passed_over=[skipped]
            ),
            DataSource(
                analyst=AnalystKind.NEWS, tool="get_news", vendor="sim", passed_over=[skipped]
            ),
            DataSource(analyst=AnalystKind.MARKET, tool="get_ohlcv", vendor="bundled"),
        ]
    )

    assert section.splitlines()[0] == "# Data"
    assert f"| news | get_news | sim | {skipped} |" in section
    assert "| market | get_ohlcv | bundled | - |" in section
    assert section.count("get_news") == 1
