"""Routing: the router's choice of vendor, the route settings, and what the router knows of
time (the factory, the cache and the bundled vendor are in test_data_vendors.py)."""

from __future__ import annotations

import subprocess
import sys
from datetime import UTC, datetime, timedelta
from pathlib import Path

import pytest

from shared.config import load_settings
from shared.data import factory
from shared.data.cache import CachedVendor
from shared.data.contracts import DataKind, DataVendor, NewsItem, Reach
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
from tests.fakes.canned_vendor import NEWS, PAST, WEEK, FakeVendor


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
