"""Finnhub through its strict stand-in over HTTP: company news by publication time within the
free tier's year, insider trades from the end of their filing day, statements from their
acceptance (an amendment from its own), and every fault as the router's kind naming Finnhub,
the setting and the fix, never the key."""

from __future__ import annotations

import json
from collections.abc import Iterator
from datetime import UTC, date, datetime, timedelta
from pathlib import Path
from zoneinfo import ZoneInfo

import httpx
import pytest

import shared.tools.catalog  # noqa: F401  (registers every tool, get_company_news among them)
from shared.config import FINNHUB_KEY_ENV, Settings, load_settings
from shared.data.contracts import DataKind, StatementKind
from shared.data.factory import build_router, build_vendor
from shared.data.finnhub import FinnhubVendor
from shared.errors import NoData, NotConfigured, RateLimited, VendorFailure
from shared.llm.contracts import ToolCall, ToolRequest
from shared.tools.registry import ToolServices, run_tool
from tests.fakes.finnhub import (
    BAD_KEY,
    KEY,
    LIMIT_REACHED,
    NO_KEY,
    PREMIUM,
    FakeFinnhub,
    Fault,
    FinnhubCompany,
    Story,
    sample_company,
)

NEW_YORK = ZoneInfo("America/New_York")
TODAY = date(2023, 6, 1)
NOW = datetime(2023, 6, 1, 12, tzinfo=UTC)
MONTH = timedelta(days=30)


def utc(year: int, month: int, day: int, hour: int = 0, minute: int = 0) -> datetime:
    return datetime(year, month, day, hour, minute, tzinfo=UTC)


def new_york(
    year: int, month: int, day: int, hour: int = 0, minute: int = 0, second: int = 0
) -> datetime:
    return datetime(year, month, day, hour, minute, second, tzinfo=NEW_YORK)


@pytest.fixture
def finnhub() -> Iterator[FakeFinnhub]:
    with FakeFinnhub([sample_company()], today=TODAY) as fake:
        yield fake


def _settings(fake: FakeFinnhub, tmp_path: Path, **finnhub: object) -> Settings:
    return load_settings(
        data_dir=tmp_path,
        finnhub={"base_url": fake.base_url, "api_key": KEY, "timeout_seconds": 0.5, **finnhub},
        data_routes={"news": ["finnhub", "sim"]},
    )


@pytest.fixture
def vendor(finnhub: FakeFinnhub, tmp_path: Path) -> FinnhubVendor:
    return FinnhubVendor(_settings(finnhub, tmp_path).finnhub, clock=lambda: NOW)


# --- news -----------------------------------------------------------------------------


def test_news_published_after_as_of_never_arrives_even_later_that_day(
    vendor: FinnhubVendor, finnhub: FakeFinnhub
) -> None:
    as_of = utc(2023, 2, 3, 18)

    items = vendor.news(as_of, timedelta(days=2), symbol="aapl")

    assert [item.id for item in items] == ["9002", "9001"]
    # The request spanned the as_of day, so the 20:45 article came back and was dropped here;
    # the key went in the header, never in the URL.
    request = finnhub.requests[-1]
    assert request.params == {"symbol": "AAPL", "from": "2023-01-31", "to": "2023-02-03"}
    assert request.key_in_header
    later = vendor.news(utc(2023, 2, 3, 21), timedelta(days=2), symbol="AAPL", limit=1)
    assert [(item.id, item.symbols) for item in later] == [("9003", ["AAPL", "TSM"])]
    assert later[0].published_at == utc(2023, 2, 3, 20, 45) and later[0].source == "Bloomberg"


def test_news_older_than_the_free_tiers_year_is_no_data_saying_why(
    finnhub: FakeFinnhub, tmp_path: Path
) -> None:
    settings = _settings(finnhub, tmp_path).finnhub
    a_year_on = FinnhubVendor(settings, clock=lambda: utc(2024, 3, 1))

    with pytest.raises(NoData, match="from 2023-03-02 on .*free tier keeps about a year"):
        a_year_on.news(utc(2023, 2, 3, 18), timedelta(days=2), symbol="AAPL")
    assert finnhub.requests == []

    # A plan that serves more: the same read goes to Finnhub.
    paid = settings.model_copy(update={"news_history_days": None})
    assert FinnhubVendor(paid, clock=lambda: utc(2024, 3, 1)).news(
        utc(2023, 2, 3, 18), timedelta(days=2), symbol="AAPL"
    )
    assert len(finnhub.requests) == 1
    finnhub.requests.clear()

    # A window reaching past the year: Finnhub answers an empty list, read as the tier's limit.
    finnhub.today = date(2024, 2, 4)
    edge = FinnhubVendor(settings, clock=lambda: utc(2024, 2, 3, 12))
    with pytest.raises(NoData, match="no news of AAPL .*free tier keeps about a year"):
        edge.news(utc(2023, 2, 3, 18), timedelta(days=2), symbol="AAPL")
    assert len(finnhub.requests) == 1


@pytest.mark.parametrize(
    "about", [{}, {"topic": "earnings"}, {"symbol": "AAPL", "topic": "earnings"}]
)
def test_market_and_topic_news_are_refused_never_answered_with_todays(
    vendor: FinnhubVendor, finnhub: FakeFinnhub, about: dict[str, str]
) -> None:
    with pytest.raises(NotConfigured, match="market news is the latest only"):
        vendor.news(
            utc(2023, 2, 3), timedelta(days=2), symbol=about.get("symbol"), topic=about.get("topic")
        )
    assert finnhub.requests == []


# --- insider trades -------------------------------------------------------------------


def test_an_insider_trade_is_invisible_until_the_end_of_its_filing_day(
    vendor: FinnhubVendor,
) -> None:
    # The sale was filed on April 5 (New York): not by noon that day.
    with pytest.raises(NoData, match="no open-market trade of AAPL"):
        vendor.insider("AAPL", new_york(2023, 4, 5, 12), MONTH)

    # The buy was filed on April 6: the sale is seen that evening, the buy only after midnight.
    evening = vendor.insider("AAPL", new_york(2023, 4, 6, 20), MONTH)
    assert [(t.insider, t.side, t.shares, t.price) for t in evening] == [
        ("Jordan Avery", "sell", 50_000, 171.25)
    ]
    buy, sell = vendor.insider("AAPL", new_york(2023, 4, 7, 0, 1), MONTH)
    assert (buy.insider, buy.side, buy.shares, buy.traded_on) == (
        "Morgan Lee",
        "buy",
        10_000,
        date(2023, 4, 4),
    )
    assert buy.filed_at == new_york(2023, 4, 6, 23, 59, 59) and sell.side == "sell"


def test_a_grant_or_an_exercise_is_not_an_insiders_view(vendor: FinnhubVendor) -> None:
    trades = vendor.insider("AAPL", new_york(2023, 5, 1), MONTH)

    assert {(t.insider, t.side) for t in trades} == {
        ("Jordan Avery", "sell"),
        ("Morgan Lee", "buy"),
    }


# --- statements -----------------------------------------------------------------------


def _income(vendor: FinnhubVendor, as_of: datetime) -> list[tuple[str, float, datetime]]:
    found = vendor.statements("AAPL", StatementKind.INCOME, as_of, periods=2)
    return [(s.fiscal_period, s.items["revenue"], s.reported_at) for s in found]


def test_a_statement_is_invisible_until_its_filing_is_accepted(vendor: FinnhubVendor) -> None:
    accepted = new_york(2023, 8, 3, 18, 4)

    assert _income(vendor, accepted - timedelta(minutes=1))[0][0] == "2023Q2"
    assert _income(vendor, accepted)[0] == ("2023Q3", 81.8e9, accepted)
    with pytest.raises(NoData, match="no income statement of AAPL filed by"):
        vendor.statements("AAPL", StatementKind.INCOME, new_york(2023, 2, 2, 18))


def test_an_amendment_counts_only_from_its_own_acceptance(vendor: FinnhubVendor) -> None:
    amended_at = new_york(2023, 6, 15, 16, 10)

    first = _income(vendor, amended_at - timedelta(seconds=1))
    amended = _income(vendor, amended_at)

    assert first[0] == ("2023Q2", 94.8e9, new_york(2023, 5, 4, 18, 3))
    assert amended[0] == ("2023Q2", 94.5e9, amended_at)
    assert first[1] == amended[1] == ("2023Q1", 117.2e9, new_york(2023, 2, 2, 18, 1))


def test_the_10k_gives_the_fourth_quarters_cash_flows_and_balance_from_its_filing_day(
    vendor: FinnhubVendor, finnhub: FakeFinnhub
) -> None:
    """The 10-K carries no acceptance time: it counts from the end of its filing day."""
    filed = new_york(2023, 11, 3, 23, 59, 59)

    cash = vendor.statements("AAPL", StatementKind.CASH_FLOW, filed)
    balance = vendor.statements("AAPL", StatementKind.BALANCE, filed, periods=1)[0]
    day_before = vendor.statements("AAPL", StatementKind.BALANCE, filed - timedelta(seconds=1))

    # Year to date in each 10-Q, the year in the 10-K: quarters are their differences.
    assert [s.fiscal_period for s in cash] == ["2023Q4", "2023Q3", "2023Q2", "2023Q1"]
    assert [round(s.items["operating_cash_flow"] / 1e9, 1) for s in cash] == [21.6, 26.3, 28.6, 34]
    assert round(cash[0].items["free_cash_flow"] / 1e9, 1) == 19.4 and cash[0].reported_at == filed
    assert (balance.period_end, balance.items["total_assets"]) == (date(2023, 9, 30), 352.6e9)
    assert day_before[0].period_end == date(2023, 7, 1)
    # The fourth quarter's income: the 10-K's year less the three 10-Qs' quarters (the second
    # as amended by then).
    q4, q3 = _income(vendor, filed)
    assert (q4[0], q3[0]) == ("2023Q4", "2023Q3")
    assert q4[1] == pytest.approx(383.3e9 - 117.2e9 - 94.5e9 - 81.8e9) and q4[2] == filed
    # One request per frequency, shared by the three statements.
    assert sorted(r.params["freq"] for r in finnhub.requests) == ["annual", "quarterly"]


# --- keys, limits and faults ----------------------------------------------------------


def test_a_refused_key_names_the_setting_and_its_fix_never_the_key(
    finnhub: FakeFinnhub, tmp_path: Path
) -> None:
    other = "zz9otherkey0finnhub0"
    vendor = FinnhubVendor(_settings(finnhub, tmp_path, api_key=other).finnhub)

    with pytest.raises(NotConfigured) as refused:
        vendor.insider("AAPL", new_york(2023, 5, 1), MONTH)

    said = str(refused.value)
    assert FINNHUB_KEY_ENV in said and BAD_KEY in said and refused.value.fix is not None
    assert other not in said and KEY not in said


def test_without_a_key_the_vendor_says_so_and_the_router_asks_the_next(
    finnhub: FakeFinnhub, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.delenv(FINNHUB_KEY_ENV, raising=False)
    settings = load_settings(
        data_dir=tmp_path,
        finnhub={"base_url": finnhub.base_url},
        data_routes={"news": ["finnhub", "sim"]},
    )
    as_of = utc(2015, 6, 1)  # the simulated market's time, and CRSX one of its companies

    with pytest.raises(NotConfigured, match=f"{FINNHUB_KEY_ENV} is not set"):
        build_vendor("finnhub", settings).news(as_of, MONTH, symbol="AAPL")
    routed = build_router(settings).call(
        DataKind.NEWS, lambda v: v.news(as_of, MONTH, symbol="CRSX"), as_of=as_of
    )
    assert routed.vendor == "sim" and finnhub.requests == []


@pytest.mark.parametrize(
    ("fault", "error", "said"),
    [
        (Fault(status=429, message=LIMIT_REACHED), RateLimited, "API limit reached"),
        (Fault(status=502, message="Bad Gateway"), VendorFailure, "502"),
        (Fault(delay=2.0), VendorFailure, "no answer in 0.5 s"),
        (Fault(drop=True), VendorFailure, "could not be reached"),
    ],
)
def test_faults_are_the_routers_kinds_naming_finnhub(
    vendor: FinnhubVendor,
    finnhub: FakeFinnhub,
    fault: Fault,
    error: type[Exception],
    said: str,
) -> None:
    finnhub.fail_next(fault)

    with pytest.raises(error) as caught:
        vendor.news(utc(2023, 2, 3, 18), timedelta(days=2), symbol="AAPL")

    assert str(caught.value).startswith("Finnhub") and said in str(caught.value)
    if isinstance(caught.value, RateLimited):
        assert caught.value.retry_after == timedelta(seconds=20)


def test_a_paid_endpoint_is_not_configured_with_finnhubs_reason(
    vendor: FinnhubVendor, finnhub: FakeFinnhub
) -> None:
    """As if Finnhub moved the filings to a paid plan: a 403 is a reason, not a crash."""
    finnhub.fail_next(Fault(status=403, message=PREMIUM))

    with pytest.raises(NotConfigured, match="access to this resource.*paid plan"):
        vendor.statements("AAPL", StatementKind.INCOME, NOW)


def test_past_its_rate_the_stand_in_answers_429_as_finnhub_does(tmp_path: Path) -> None:
    with FakeFinnhub([sample_company()], today=TODAY, per_second=2) as fake:
        vendor = FinnhubVendor(_settings(fake, tmp_path).finnhub, clock=lambda: NOW)
        vendor.statements("AAPL", StatementKind.INCOME, NOW)  # quarterly, then annual
        with pytest.raises(RateLimited, match="API limit reached"):
            vendor.insider("AAPL", new_york(2023, 5, 1), MONTH)


def test_every_request_passes_the_desks_gate_first(finnhub: FakeFinnhub, tmp_path: Path) -> None:
    arrived_before_gate: list[int] = []
    vendor = FinnhubVendor(
        _settings(finnhub, tmp_path).finnhub,
        gate=lambda: arrived_before_gate.append(len(finnhub.requests)),
        clock=lambda: NOW,
    )

    vendor.news(utc(2023, 2, 3, 18), timedelta(days=2), symbol="AAPL")
    vendor.insider("AAPL", new_york(2023, 5, 1), MONTH)
    vendor.statements("AAPL", StatementKind.BALANCE, NOW)

    assert arrived_before_gate == [0, 1, 2, 3] and len(finnhub.requests) == 4


def test_a_full_desk_quota_sends_nothing(finnhub: FakeFinnhub, tmp_path: Path) -> None:
    def taken() -> None:
        raise RateLimited("finnhub: the desk's quota is taken", retry_after=timedelta(seconds=3))

    vendor = FinnhubVendor(_settings(finnhub, tmp_path).finnhub, gate=taken, clock=lambda: NOW)

    with pytest.raises(RateLimited, match="quota is taken"):
        vendor.news(utc(2023, 2, 3, 18), timedelta(days=2), symbol="AAPL")
    assert finnhub.requests == []


def test_the_stand_in_holds_finnhubs_rules(finnhub: FakeFinnhub) -> None:
    news = {"symbol": "AAPL", "from": "2023-02-01", "to": "2023-02-03"}
    header = {"X-Finnhub-Token": KEY}
    with httpx.Client(base_url=finnhub.base_url + "/") as http:
        unkeyed = http.get("company-news", params=news)
        by_query = http.get("company-news", params={**news, "token": KEY})
        candle = {"symbol": "AAPL", "resolution": "D", "from": "1675209600", "to": "1675382400"}
        paid = http.get("stock/candle", params=candle, headers=header)
        compact_day = http.get("company-news", params={**news, "from": "20230201"}, headers=header)
        no_to = http.get("company-news", params={"symbol": "AAPL", "from": "2023-02-01"}, headers=header)  # fmt: skip
        misspelt = http.get("stock/insider-transactions", params={"symbol": "AAPL", "form": "2023-01-01"}, headers=header)  # fmt: skip

    assert (unkeyed.status_code, unkeyed.json()) == (401, {"error": NO_KEY})
    assert by_query.status_code == 200 and [row["id"] for row in by_query.json()] == [9003, 9002, 9001]  # fmt: skip
    assert (paid.status_code, paid.json()) == (403, {"error": PREMIUM})
    assert [r.status_code for r in (compact_day, no_to, misspelt)] == [422, 422, 422]


# --- through the router, as a tool reads ----------------------------------------------


def test_through_the_router_the_tool_answer_names_finnhub(tmp_path: Path) -> None:
    as_of = datetime.now(UTC).replace(microsecond=0) - timedelta(days=3)
    company = FinnhubCompany(
        "AAPL",
        "320193",
        news=[
            Story(1, as_of - timedelta(hours=5), "Before the analysis time"),
            Story(2, as_of + timedelta(minutes=30), "Half an hour after it"),
        ],
    )
    with FakeFinnhub([company]) as fake:
        settings = load_settings(
            data_dir=tmp_path,
            finnhub={"base_url": fake.base_url, "api_key": KEY},
            data_routes={"news": ["finnhub", "sim"]},
        )
        call = ToolCall(id="c1", name="get_company_news", arguments={"symbol": "AAPL", "days": 7})
        request = ToolRequest(call=call, context={"as_of": as_of.isoformat()})
        result = run_tool(request, services=lambda: ToolServices(router=build_router(settings)))

    answer = json.loads(result.content)
    assert result.ok and result.vendor == "finnhub" and answer["vendor"] == "finnhub"
    assert [item["id"] for item in answer["data"]] == ["1"] and not answer["simulated"]
