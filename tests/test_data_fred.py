"""FRED / ALFRED through its strict stand-in over HTTP: every macro point as known at
``as_of`` (the vintage then current, visible from its release time), and every fault as the
router's kind, naming the vendor, the setting and the fix."""

from __future__ import annotations

from collections.abc import Iterator
from datetime import UTC, date, datetime, timedelta
from pathlib import Path

import pytest

from shared.config import FRED_KEY_ENV, Settings, load_settings
from shared.data.contracts import DataKind
from shared.data.factory import build_router, build_vendor
from shared.data.fred import FredVendor
from shared.errors import NoData, NotConfigured, RateLimited, VendorFailure
from shared.tools.data_tools import DataReader
from tests.fakes.fred import KEY, FakeFred, Fault, FredSeries, Version

CORE_CPI = FredSeries(
    "Consumer Price Index for All Urban Consumers: All Items Less Food and Energy",
    "Index 1982-1984=100",
    [
        Version(date(2023, 1, 1), date(2023, 2, 14), "300.900"),
        Version(date(2023, 2, 1), date(2023, 3, 14), "302.000"),
        Version(date(2023, 3, 1), date(2023, 4, 12), "303.300"),
        # The annual revision of seasonal factors, a year later.
        Version(date(2023, 2, 1), date(2024, 2, 13), "301.800"),
        Version(date(2023, 3, 1), date(2024, 2, 13), "303.100"),
    ],
)
LATE = FredSeries("A series first published in 2020", "Percent", [
    Version(date(2019, 12, 1), date(2020, 1, 10), "1.5"),
])  # fmt: skip
RELEASE_DAY_0830_NY = datetime(2023, 4, 12, 12, 30, tzinfo=UTC)


def utc(*parts: int) -> datetime:
    return datetime(*parts, tzinfo=UTC)


@pytest.fixture
def fred() -> Iterator[FakeFred]:
    with FakeFred({"CPILFESL": CORE_CPI, "LATESER": LATE}) as fake:
        yield fake


def _settings(fake: FakeFred, tmp_path: Path, **fred: object) -> Settings:
    return load_settings(
        data_dir=tmp_path,
        fred={"base_url": fake.base_url, "api_key": KEY, "timeout_seconds": 0.5, **fred},
        data_routes={"macro": ["fred", "sim"]},
    )


@pytest.fixture
def vendor(fred: FakeFred, tmp_path: Path) -> FredVendor:
    return FredVendor(_settings(fred, tmp_path).fred)


def _latest(vendor: FredVendor, as_of: datetime) -> tuple[date, float, datetime]:
    point = vendor.macro("CPILFESL", as_of, lookback=3).points[-1]
    return point.observed, point.value, point.released_at


def test_a_cpi_print_is_invisible_the_day_before_its_release(vendor: FredVendor) -> None:
    observed, value, released = _latest(vendor, utc(2023, 4, 11, 20))

    assert (observed, value) == (date(2023, 2, 1), 302.0)
    assert released == utc(2023, 3, 14, 12, 30)


def test_a_cpi_print_is_visible_from_its_release_time_that_day(vendor: FredVendor) -> None:
    before = _latest(vendor, RELEASE_DAY_0830_NY - timedelta(minutes=30))
    after = _latest(vendor, RELEASE_DAY_0830_NY + timedelta(minutes=30))

    assert before[0] == date(2023, 2, 1)
    assert after == (date(2023, 3, 1), 303.3, RELEASE_DAY_0830_NY)


def test_a_revision_is_seen_only_from_its_own_release(vendor: FredVendor) -> None:
    first = vendor.macro("CPILFESL", utc(2023, 6, 1), lookback=3)
    revised = vendor.macro("CPILFESL", utc(2024, 3, 1), lookback=3)

    assert [p.value for p in first.points] == [300.9, 302.0, 303.3]
    assert [p.value for p in revised.points] == [300.9, 301.8, 303.1]
    assert revised.points[-1].released_at == utc(2024, 2, 13, 13, 30)  # 08:30 EST


def test_the_series_is_named_and_the_desks_cpi_is_core_cpi(vendor: FredVendor) -> None:
    series = vendor.macro("CPI", utc(2023, 6, 1), lookback=1)

    assert series.series == "CPILFESL" and series.name == CORE_CPI.title
    assert series.unit == CORE_CPI.units and len(series.points) == 1


def test_a_series_without_a_vintage_then_has_no_data_never_todays(vendor: FredVendor) -> None:
    # 2020-01-01 00:00 UTC is the evening of Dec 31 in New York, before that day's vintage
    # (a series without a release time counts as published at the end of its day).
    with pytest.raises(NoData, match="no vintage of LATESER as of 2019-12-30"):
        vendor.macro("LATESER", utc(2020, 1, 1))


def test_an_unknown_series_is_no_data(vendor: FredVendor) -> None:
    with pytest.raises(NoData, match="FRED has no series NOSUCH"):
        vendor.macro("NOSUCH", utc(2023, 6, 1))


def test_a_refused_key_names_the_setting_and_never_the_key(fred: FakeFred, tmp_path: Path) -> None:
    other = "f" * 32
    vendor = FredVendor(_settings(fred, tmp_path, api_key=other).fred)

    with pytest.raises(NotConfigured) as refused:
        vendor.macro("CPILFESL", utc(2023, 6, 1))

    assert FRED_KEY_ENV in str(refused.value) and "is not registered" in str(refused.value)
    assert other not in str(refused.value)


def test_without_a_key_the_vendor_says_so_and_the_router_asks_the_next(
    fred: FakeFred, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.delenv(FRED_KEY_ENV, raising=False)
    settings = load_settings(
        data_dir=tmp_path, fred={"base_url": fred.base_url}, data_routes={"macro": ["fred", "sim"]}
    )

    with pytest.raises(NotConfigured, match=f"{FRED_KEY_ENV} is not set"):
        build_vendor("fred", settings).macro("CPILFESL", utc(2015, 6, 1))
    routed = build_router(settings).call(
        DataKind.MACRO, lambda v: v.macro("CPI", utc(2015, 6, 1)), as_of=utc(2015, 6, 1)
    )
    assert routed.vendor == "sim" and fred.requests == []


@pytest.mark.parametrize(
    ("fault", "error", "said"),
    [
        (Fault(status=429, message="Too Many Requests.  Exceeded Rate Limit"), RateLimited, "429"),
        (Fault(status=503, message="Service Unavailable"), VendorFailure, "503"),
        (Fault(delay=2.0), VendorFailure, "no answer in 0.5 s"),
        (Fault(drop=True), VendorFailure, "could not be reached"),
    ],
)
def test_faults_are_the_routers_kinds_naming_fred(
    vendor: FredVendor, fred: FakeFred, fault: Fault, error: type[Exception], said: str
) -> None:
    fred.fail_next(fault)

    with pytest.raises(error) as caught:
        vendor.macro("CPILFESL", utc(2023, 6, 1))

    assert str(caught.value).startswith("FRED") and said in str(caught.value)
    if isinstance(caught.value, RateLimited):
        assert caught.value.retry_after == timedelta(seconds=20)


def test_past_its_rate_the_stand_in_answers_429_as_fred_does(tmp_path: Path) -> None:
    with FakeFred({"CPILFESL": CORE_CPI}, per_minute=2) as fake:
        vendor = FredVendor(_settings(fake, tmp_path).fred)
        vendor.macro("CPILFESL", utc(2023, 6, 1))  # observations, then the series' title
        with pytest.raises(RateLimited, match="Exceeded Rate Limit"):
            vendor.macro("CPILFESL", utc(2023, 7, 1))


def test_a_second_run_of_the_same_dates_makes_no_call(fred: FakeFred, tmp_path: Path) -> None:
    """Through the router and its disk cache, as a tools worker reads; the tool answer names
    the vendor."""
    settings = _settings(fred, tmp_path)
    as_of = utc(2023, 6, 1)

    def read() -> object:
        reader = DataReader(build_router(settings), as_of)
        series = reader.read(DataKind.MACRO, lambda v: v.macro("CPI", as_of, 3))
        return reader.answer(series).vendor

    assert read() == "fred"
    calls = len(fred.requests)
    assert read() == "fred"
    assert len(fred.requests) == calls == 2
