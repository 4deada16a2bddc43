"""Massive (formerly Polygon) through its strict stand-in over HTTP: bars adjusted only for the
splits and dividends known at ``as_of``, the bar of a session still forming never served,
movers from the grouped daily files of that date, a universe that holds the companies that
died later, news by publication time; every fault as the router's kind, naming the vendor,
the setting and the fix, never the key."""

from __future__ import annotations

from collections.abc import Iterator
from datetime import UTC, date, datetime, timedelta
from pathlib import Path
from typing import Any

import httpx
import pytest

from shared.config import MASSIVE_KEY_ENV, MassiveSettings, Settings, VendorQuota, load_settings
from shared.data.contracts import DataKind, NewsItem
from shared.data.factory import build_router
from shared.data.massive import MassiveVendor
from shared.data.massive_adjust import NEW_YORK, adjusted_bars
from shared.data.massive_wire import Agg, Dividend, Split
from shared.data.quota import LocalQuota
from shared.errors import NoData, NotConfigured, NotCovered, RateLimited, VendorFailure
from shared.market.bars import Bar, Timeframe
from shared.tools.data_tools import DataReader
from tests.fakes.massive import (
    KEY,
    DayBar,
    FakeMassive,
    Fault,
    Listed,
    MassiveMarket,
    day_bars,
)

TODAY = date(2025, 7, 1)
FIRST, LAST = date(2024, 1, 2), date(2025, 6, 30)
SPLIT_DAY = date(2024, 6, 10)  # GRWT splits 4 for 1
EX_DAY = date(2024, 5, 10)  # SLOW goes ex a $1 dividend, declared on April 20
MOVERS_DAY = date(2024, 7, 5)  # the session after the July 4 holiday


def utc(year: int, month: int, day: int, hour: int = 0, minute: int = 0) -> datetime:
    return datetime(year, month, day, hour, minute, tzinfo=UTC)


def _dividend(declared: str, ex: str, paid: str) -> dict[str, object]:
    """A $1 quarterly dividend of SLOW, in Massive's shape."""
    return {"id": f"D-{ex}", "ticker": "SLOW", "cash_amount": 1.0, "currency": "USD",
            "declaration_date": declared, "ex_dividend_date": ex, "record_date": ex,
            "pay_date": paid, "frequency": 4, "dividend_type": "CD"}  # fmt: skip


def _article(
    n: int, published: str, title: str, tickers: list[str], keywords: list[str], *insights: str
) -> dict[str, object]:
    """An article in Massive's shape; ``insights`` are "TICKER:sentiment"."""
    return {
        "id": f"N{n}", "published_utc": published, "title": title, "tickers": tickers,
        "article_url": f"https://news.example.com/{n}", "author": "Desk",
        "description": f"What happened ({n}).", "keywords": keywords,
        "insights": [{"ticker": i.split(":")[0], "sentiment": i.split(":")[1],
                      "sentiment_reasoning": "the figures"} for i in insights],
        "publisher": {"name": "Example Wire", "homepage_url": "https://news.example.com/",
                      "logo_url": "https://news.example.com/logo.svg"},
    }  # fmt: skip


SPDR = "Select Sector SPDR Fund"
MARKET = MassiveMarket(
    listed=[
        Listed("GRWT", "Growth Corp", "CS", date(2015, 3, 2)),
        Listed("GRWTW", "Growth Corp warrants", "WARRANT", date(2021, 5, 3)),
        Listed("SLOW", "Steady Dividend Co", "CS", date(2010, 1, 4)),
        Listed("GONE", "Gone Inc", "CS", date(2012, 6, 1), delisted=date(2024, 6, 28)),
        Listed("NEWC", "New Co", "CS", date(2024, 9, 3)),
        Listed("PENY", "Penny Co", "CS", date(2018, 1, 2)),
        Listed("THIN", "Thin Co", "CS", date(2018, 1, 2)),
        Listed("XLK", f"Technology {SPDR}", "ETF", date(1998, 12, 16), exchange="ARCX"),
        Listed("XLE", f"Energy {SPDR}", "ETF", date(1998, 12, 16), exchange="ARCX"),
    ],
    bars={
        "GRWT": day_bars(FIRST, LAST, 400, 2e6, {SPLIT_DAY: 0.02, MOVERS_DAY: 0.08}, SPLIT_DAY),
        "SLOW": day_bars(FIRST, LAST, 50, 1e6, {MOVERS_DAY: -0.03}),
        "GONE": day_bars(FIRST, date(2024, 6, 28), 30, 5e5, {}),
        "NEWC": day_bars(date(2024, 9, 3), LAST, 20, 3e5, {}),
        "PENY": day_bars(FIRST, LAST, 0.5, 9e6, {MOVERS_DAY: 0.40}),
        "THIN": day_bars(FIRST, LAST, 20, 5e3, {MOVERS_DAY: 0.30}),
        "XLK": day_bars(FIRST, LAST, 200, 5e6, {MOVERS_DAY: 0.01}),
        "XLE": day_bars(FIRST, LAST, 90, 3e6, {MOVERS_DAY: -0.015}),
    },
    splits=[
        {
            "id": "S1",
            "ticker": "GRWT",
            "execution_date": "2024-06-10",
            "split_from": 1,
            "split_to": 4,
        },
    ],
    dividends=[
        _dividend("2024-04-20", "2024-05-10", "2024-05-24"),
        _dividend("2024-07-20", "2024-08-09", "2024-08-23"),
    ],
    news=[
        _article(0, "2024-03-26T09:00:00Z", "Fed holds rates", [], ["macro", "central banks"]),
        _article(
            1,
            "2024-03-27T14:00:00Z",
            "Growth Corp beats estimates",
            ["GRWT"],
            ["earnings"],
            "GRWT:positive",
        ),
        _article(2, "2024-03-28T13:30:00Z", "Two names on the move", ["GRWT", "SLOW"], ["markets"]),
        _article(3, "2024-03-28T20:00:00Z", "After hours: Growth Corp guides higher", ["GRWT"], []),
        _article(4, "2024-04-02T12:00:00Z", "Steady Dividend raises payout", ["SLOW"], []),
    ],
)
RAW = {ticker: {bar.day: bar for bar in bars} for ticker, bars in MARKET.bars.items()}


@pytest.fixture
def massive() -> Iterator[FakeMassive]:
    with FakeMassive(MARKET, today=TODAY, per_minute=100) as fake:
        yield fake


def _vendor(fake: FakeMassive, key: str = KEY, **kwargs: Any) -> MassiveVendor:
    """A vendor of the stand-in, under a quota that never waits (the stand-in's is tested)."""
    settings = MassiveSettings(base_url=fake.base_url, api_key=key, timeout_seconds=0.5)
    kwargs.setdefault("gate", LocalQuota("massive", VendorQuota(requests=1000, seconds=1)))
    return MassiveVendor(settings, **kwargs)


@pytest.fixture
def vendor(massive: FakeMassive) -> MassiveVendor:
    return _vendor(massive)


def _as_traded(ticker: str, bar: Bar, price: float = 1.0, volume: float = 1.0) -> bool:
    raw = RAW[ticker][bar.time.date()]
    wanted = (raw.open, raw.high, raw.low, raw.close)
    got = (bar.open, bar.high, bar.low, bar.close)
    return got == pytest.approx([p * price for p in wanted]) and bar.volume == pytest.approx(
        raw.volume * volume
    )


# --- bars -------------------------------------------------------------------------------


def test_a_split_after_as_of_leaves_the_bars_as_traded(vendor: MassiveVendor) -> None:
    bars = vendor.ohlcv("GRWT", Timeframe.D1, utc(2024, 6, 8, 12), 5)

    assert [bar.time for bar in bars] == [utc(2024, 6, d) for d in (3, 4, 5, 6, 7)]
    assert all(_as_traded("GRWT", bar) for bar in bars)
    assert bars[-1].close > 380  # the pre-split price, never a quarter of it


def test_once_executed_a_split_divides_the_bars_before_it(vendor: MassiveVendor) -> None:
    bars = vendor.ohlcv("GRWT", Timeframe.D1, utc(2024, 6, 12), 7)

    before = [bar for bar in bars if bar.time.date() < SPLIT_DAY]
    after = [bar for bar in bars if bar.time.date() >= SPLIT_DAY]
    assert [bar.time.date().day for bar in bars] == [4, 5, 6, 7, 10, 11, 12]
    assert all(_as_traded("GRWT", bar, price=1 / 4, volume=4) for bar in before)
    assert all(_as_traded("GRWT", bar) for bar in after)
    assert after[0].close / before[-1].close == pytest.approx(1.02)  # the day's move, no drop


def test_a_close_is_one_request_and_the_last_bar_of_a_longer_read(
    vendor: MassiveVendor, massive: FakeMassive
) -> None:
    as_of = utc(2024, 6, 12)

    [close] = vendor.ohlcv("GRWT", Timeframe.D1, as_of, 1)
    asked = len(massive.requests)
    longer = vendor.ohlcv("GRWT", Timeframe.D1, as_of, 7)

    assert asked == 1  # the bars; no splits or dividends for the last one
    assert close == longer[-1] and _as_traded("GRWT", close)


def test_a_window_is_read_once_for_its_shorter_reads_and_its_splits_once_for_all(
    massive: FakeMassive,
) -> None:
    as_of = utc(2024, 6, 12)
    reader, other = _vendor(massive), _vendor(massive)  # another router's vendor, same process

    months = reader.ohlcv("GRWT", Timeframe.D1, as_of, 100)
    reader.ohlcv("SLOW", Timeframe.D1, as_of, 100)
    asked = {name: len(massive.paths(name)) for name in ("aggs", "dividends", "splits")}
    [close] = other.ohlcv("GRWT", Timeframe.D1, as_of, 1)
    week = other.ohlcv("GRWT", Timeframe.D1, as_of, 5)

    # Two names: their bars and dividends each, and the market's splits of the window once.
    assert asked == {"aggs": 2, "dividends": 2, "splits": 1}
    # The close and the week came from the months read: no request for bars again.
    assert len(massive.paths("aggs")) == 2
    assert close.close == pytest.approx(RAW["GRWT"][close.time.date()].close)
    assert [bar.close for bar in week] == pytest.approx([bar.close for bar in months[-5:]])


def test_a_dividend_adjusts_the_bars_before_its_ex_date_once_it_has_passed(
    vendor: MassiveVendor,
) -> None:
    unadjusted = vendor.ohlcv("SLOW", Timeframe.D1, utc(2024, 5, 9, 12), 3)
    adjusted = vendor.ohlcv("SLOW", Timeframe.D1, utc(2024, 5, 13), 4)

    assert all(_as_traded("SLOW", bar) for bar in unadjusted)
    factor = 1 - 1.0 / RAW["SLOW"][date(2024, 5, 9)].close
    assert [bar.time.date().day for bar in adjusted] == [8, 9, 10, 13]
    assert all(_as_traded("SLOW", bar, price=factor) for bar in adjusted[:2])
    assert all(_as_traded("SLOW", bar) for bar in adjusted[2:])


def test_the_adjustment_counts_only_the_events_known_by_its_date() -> None:
    """Whatever Massive answers: a split executed, or a dividend declared, after the date
    leaves the bars as traded."""
    days = [date(2024, 6, 6), date(2024, 6, 7), date(2024, 6, 10)]
    aggs = [_agg(RAW["GRWT"][day]) for day in days]
    split = Split(ticker="GRWT", execution_date=SPLIT_DAY, split_from=1, split_to=4)
    declared_later = Dividend(
        cash_amount=5, ex_dividend_date=SPLIT_DAY, declaration_date=date(2024, 6, 11)
    )

    before = adjusted_bars(aggs, [split], [declared_later], date(2024, 6, 7))
    after = adjusted_bars(aggs, [split], [declared_later], SPLIT_DAY)

    assert all(_as_traded("GRWT", bar) for bar in before)
    assert all(_as_traded("GRWT", bar, price=1 / 4, volume=4) for bar in after[:2])
    assert _as_traded("GRWT", after[2])


def _agg(bar: DayBar) -> Agg:
    start = datetime(bar.day.year, bar.day.month, bar.day.day, tzinfo=NEW_YORK)
    return Agg(t=int(start.timestamp() * 1000), o=bar.open, h=bar.high, l=bar.low, c=bar.close,
               v=bar.volume)  # fmt: skip


def test_the_bar_of_a_session_still_forming_never_reaches_the_caller(
    massive: FakeMassive,
) -> None:
    now = utc(2025, 6, 30, 18)  # 14:00 in New York, the session open; Massive has its bar
    vendor = _vendor(massive, clock=lambda: now)

    bars = vendor.ohlcv("GRWT", Timeframe.D1, now, 3)

    assert bars[-1].time == utc(2025, 6, 27)
    assert massive.paths("aggs")[-1].path.endswith("/2025-06-29")  # asked up to yesterday


def test_a_finished_session_is_read_from_its_label_as_every_vendor_does(
    massive: FakeMassive,
) -> None:
    vendor = _vendor(massive, clock=lambda: utc(2025, 7, 1, 0, 5))

    bars = vendor.ohlcv("GRWT", Timeframe.D1, utc(2025, 6, 30), 2)

    assert [bar.time for bar in bars] == [utc(2025, 6, 27), utc(2025, 6, 30)]


def test_a_delisted_companys_bars_end_with_it(vendor: MassiveVendor) -> None:
    assert vendor.ohlcv("GONE", Timeframe.D1, utc(2024, 7, 1), 2)[-1].time == utc(2024, 6, 28)
    with pytest.raises(NoData, match="Massive has no daily bars of GONE"):
        vendor.ohlcv("GONE", Timeframe.D1, utc(2025, 6, 27), 5)


def test_bars_older_than_the_plan_are_no_data_saying_why(vendor: MassiveVendor) -> None:
    with pytest.raises(NoData, match="doesn't include this data timeframe.*two years"):
        vendor.ohlcv("GRWT", Timeframe.D1, utc(2023, 6, 1), 5)


def test_only_daily_bars_of_stock_tickers_are_asked(
    vendor: MassiveVendor, massive: FakeMassive
) -> None:
    with pytest.raises(NotConfigured, match="serves daily bars, not 1h"):
        vendor.ohlcv("GRWT", Timeframe.H1, utc(2024, 6, 12), 5)
    with pytest.raises(NotCovered, match="'\\^GSPC' is not a stock ticker"):
        vendor.ohlcv("^GSPC", Timeframe.D1, utc(2024, 6, 12), 5)
    assert massive.requests == []


# --- movers -----------------------------------------------------------------------------


def test_movers_come_from_the_grouped_files_walking_back_over_a_holiday(
    vendor: MassiveVendor, massive: FakeMassive
) -> None:
    movers = vendor.movers(utc(2024, 7, 5, 12), limit=5)

    assert [(m.symbol, round(m.change_pct, 6)) for m in movers.gainers] == [
        ("GRWT", 8.0),
        ("XLK", 1.0),
    ]
    assert [(m.symbol, round(m.change_pct, 6)) for m in movers.losers] == [
        ("SLOW", -3.0),
        ("XLE", -1.5),
    ]
    assert [m.symbol for m in movers.most_active] == ["GRWT", "XLK", "XLE", "SLOW"]
    assert movers.gainers[0].last == RAW["GRWT"][MOVERS_DAY].close  # as traded that day
    grouped = [seen.path.rsplit("/", 1)[-1] for seen in massive.paths("grouped")]
    assert grouped == ["2024-07-05", "2024-07-04", "2024-07-03"]  # July 4 is empty


def test_a_split_on_the_session_is_not_a_loser(vendor: MassiveVendor) -> None:
    movers = vendor.movers(utc(2024, 6, 10, 23), limit=10)

    grwt = next(m for m in movers.gainers if m.symbol == "GRWT")
    assert grwt.change_pct == pytest.approx(2.0)


def test_movers_of_a_weekend_are_the_fridays_asking_nothing_for_saturday(
    vendor: MassiveVendor, massive: FakeMassive
) -> None:
    vendor.movers(utc(2024, 6, 9, 12))  # a Sunday

    grouped = [seen.path.rsplit("/", 1)[-1] for seen in massive.paths("grouped")]
    assert grouped == ["2024-06-07", "2024-06-06"]


# --- universe ---------------------------------------------------------------------------


def test_a_delisted_company_is_in_the_universe_of_a_date_when_it_traded(
    vendor: MassiveVendor,
) -> None:
    def universe(as_of: datetime) -> dict[str, str]:
        return {x.symbol: x.asset_type for x in vendor.universe(as_of)}

    assert universe(utc(2024, 3, 1)) == {
        "GRWT": "equity",
        "SLOW": "equity",
        "GONE": "equity",
        "PENY": "equity",
        "THIN": "equity",
        "XLK": "etf",
        "XLE": "etf",
    }
    assert "GONE" in universe(utc(2024, 6, 28))  # its last day
    later = universe(utc(2024, 10, 1))
    assert "GONE" not in later and "NEWC" in later


def test_the_universes_pages_are_followed_and_a_failed_page_is_asked_again_alone(
    tmp_path: Path,
) -> None:
    with FakeMassive(MARKET, today=TODAY, per_minute=100, max_page=3) as fake:
        vendor = _vendor(fake)
        fake.fail_next(Fault())  # the first page goes through
        fake.fail_next(Fault(status=502, message="Bad Gateway"))
        with pytest.raises(VendorFailure, match="Massive answered 502"):
            vendor.universe(utc(2024, 3, 1))

        listed = vendor.universe(utc(2024, 3, 1))

        assert len(listed) == 7
        pages = fake.paths("tickers")
        assert len(pages) == 4  # the first page, the failed second, the second, the third
        assert pages[0].params["date"] == "2024-03-01"
        assert pages[1].params == pages[2].params and set(pages[2].params) == {"cursor"}
        assert pages[3].params["cursor"] != pages[2].params["cursor"]


# --- news -------------------------------------------------------------------------------


def _news(vendor: MassiveVendor, **query: object) -> list[NewsItem]:
    return vendor.news(utc(2024, 3, 28, 16), timedelta(days=7), **query)  # type: ignore[arg-type]


def test_news_published_after_as_of_is_never_returned(vendor: MassiveVendor) -> None:
    items = _news(vendor, symbol="grwt")

    assert [item.id for item in items] == ["N2", "N1"]  # N3 came out at 20:00, after as_of
    assert items[1].sentiment == 1.0 and items[0].sentiment is None
    assert (items[1].source, items[1].url, items[1].topics) == (
        "Example Wire",
        "https://news.example.com/1",
        ["earnings"],
    )


def test_news_about_the_market_and_about_a_topic(vendor: MassiveVendor) -> None:
    assert [item.id for item in _news(vendor)] == ["N2", "N1", "N0"]
    assert [item.id for item in _news(vendor, topic="macro")] == ["N0"]
    with pytest.raises(NoData, match="no news about SLOW"):
        vendor.news(utc(2024, 3, 27), timedelta(days=3), symbol="SLOW")


def test_an_endpoint_the_plan_lacks_is_not_configured_saying_so() -> None:
    with (
        FakeMassive(MARKET, today=TODAY, not_entitled=frozenset({"news"})) as fake,
        pytest.raises(NotConfigured, match="plan does not include.*not entitled"),
    ):
        _news(_vendor(fake), symbol="GRWT")


# --- the key, the quota and the faults ----------------------------------------------------


def test_the_key_travels_in_the_header_never_in_a_url(
    vendor: MassiveVendor, massive: FakeMassive
) -> None:
    vendor.universe(utc(2024, 3, 1))
    vendor.ohlcv("GRWT", Timeframe.D1, utc(2024, 6, 12), 3)

    assert {seen.key_in for seen in massive.requests} == {"header"}
    assert not any(KEY in seen.target for seen in massive.requests)


def test_a_refused_key_names_the_setting_and_the_fix_never_the_key(
    massive: FakeMassive,
) -> None:
    wrong = "not-the-key-0123456789"
    vendor = _vendor(massive, key=wrong)

    with pytest.raises(NotConfigured) as refused:
        vendor.universe(utc(2024, 3, 1))

    message = str(refused.value)
    assert MASSIVE_KEY_ENV in message and "Unknown API Key" in message
    assert refused.value.fix is not None and MASSIVE_KEY_ENV in refused.value.fix
    assert wrong not in message


def test_without_a_key_the_vendor_says_so(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.delenv(MASSIVE_KEY_ENV, raising=False)

    with pytest.raises(NotConfigured, match=f"{MASSIVE_KEY_ENV} is not set"):
        MassiveVendor(MassiveSettings())


def test_past_its_rate_massive_answers_429_and_the_vendor_is_rate_limited() -> None:
    with FakeMassive(MARKET, today=TODAY, per_minute=2, max_page=1) as fake:
        vendor = _vendor(fake)
        with pytest.raises(RateLimited, match="exceeded the maximum requests per minute") as hit:
            vendor.universe(utc(2024, 3, 1))

    assert hit.value.retry_after == timedelta(seconds=12)
    assert len(fake.paths("tickers")) == 3


@pytest.mark.parametrize(
    ("fault", "said"),
    [
        (Fault(status=503, message="Service Unavailable"), "503: Service Unavailable"),
        (Fault(delay=2.0), "no answer in 0.5 s"),
        (Fault(drop=True), "could not be reached"),
    ],
)
def test_faults_are_vendor_failures_naming_massive(
    vendor: MassiveVendor, massive: FakeMassive, fault: Fault, said: str
) -> None:
    massive.fail_next(fault)

    with pytest.raises(VendorFailure) as caught:
        vendor.movers(utc(2024, 7, 5, 12))

    assert str(caught.value).startswith("Massive") and said in str(caught.value)


def test_every_request_first_passes_the_gate(massive: FakeMassive) -> None:
    turns: list[int] = []
    vendor = _vendor(massive, gate=lambda: turns.append(len(massive.requests)))

    vendor.ohlcv("GRWT", Timeframe.D1, utc(2024, 6, 12), 3)
    vendor.movers(utc(2024, 7, 5, 12))

    assert turns == list(range(len(massive.requests)))  # each turn before its request
    assert len(turns) == 3 + 4


def test_the_stand_in_takes_the_key_both_ways_and_refuses_what_the_document_lacks(
    massive: FakeMassive,
) -> None:
    url = f"{massive.base_url}/v3/reference/splits"

    by_query = httpx.get(url, params={"apiKey": KEY, "ticker": "GRWT"})
    unknown = httpx.get(url, params={"ticker": "GRWT", "when": "now"}, headers={
        "Authorization": f"Bearer {KEY}"
    })  # fmt: skip
    without = httpx.get(url)

    assert by_query.json()["results"][0]["execution_date"] == "2024-06-10"
    assert unknown.status_code == 400 and unknown.json()["status"] == "ERROR"
    assert "Unknown query parameter 'when'" in unknown.json()["error"]
    assert without.status_code == 401 and without.json()["error"] == "API Key was not provided"


# --- through the router -------------------------------------------------------------------


def _desk(fake: FakeMassive, tmp_path: Path) -> Settings:
    return load_settings(
        data_dir=tmp_path,
        massive={"base_url": fake.base_url, "api_key": KEY, "timeout_seconds": 0.5},
        data_routes={"universe": ["massive", "sim"]},
    )


def test_the_desk_reads_the_universe_from_massive_once_per_date(
    massive: FakeMassive, tmp_path: Path
) -> None:
    as_of = utc(2024, 3, 1)

    def read() -> tuple[str | None, int]:
        reader = DataReader(build_router(_desk(massive, tmp_path)), as_of)
        listed = reader.read(DataKind.UNIVERSE, lambda v: v.universe(as_of))
        return reader.answer(listed).vendor, len(listed)

    assert read() == ("massive", 7)
    assert read() == ("massive", 7)
    assert len(massive.requests) == 1  # the second from the desk's cache
