"""The yfinance vendor against a fake ``yfinance`` answering in Yahoo's real shapes (never online;
the fake is ``tests.fakes.yahoo``)."""

from __future__ import annotations

import sys
from datetime import UTC, date, datetime, timedelta
from typing import Any

import pandas as pd
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from shared.data.contracts import (
    INDEX_SYMBOLS,
    DataKind,
    DataVendor,
    Sector,
    StatementKind,
)
from shared.data.router import DataRouter
from shared.data.yfinance_shapes import SECTOR_NAMES
from shared.data.yfinance_vendor import YFinanceVendor
from shared.errors import InvalidInput, NoData, NotConfigured, RateLimited, VendorFailure
from shared.market.bars import Timeframe
from tests.fakes.yahoo import (
    FISCAL_YEAR_END,
    INFO,
    NOW,
    NY,
    QUARTER_ENDS,
    HTTPError,
    Market,
    YFRateLimitError,
    YFTzMissingError,
    apple_market,
    daily_history,
    news_stories,
    quote,
    utc,
)


@pytest.fixture
def market() -> Market:
    return apple_market()


def close_on(market: Market, symbol: str, day: str) -> float:
    closes = market.history[(symbol, "1d")]["Close"]
    return float(closes[closes.index.strftime("%Y-%m-%d") == day].iloc[0])


def vendor_for(market: Market, **options: Any) -> YFinanceVendor:
    return YFinanceVendor(market.module(), clock=lambda: NOW, **options)


# --- loading yfinance -------------------------------------------------------------------


def test_vendor_implements_the_data_vendor_protocol(market: Market) -> None:
    vendor = vendor_for(market)

    assert isinstance(vendor, DataVendor)
    assert vendor.name == "yfinance"
    assert DataKind.UNIVERSE not in vendor.kinds
    assert {DataKind.SOCIAL, DataKind.INDUSTRY, DataKind.MACRO}.isdisjoint(vendor.kinds)
    assert DataKind.UNIVERSE in vendor_for(market, symbols=["aapl"]).kinds


def test_missing_yfinance_is_not_configured_and_says_how_to_install(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    monkeypatch.setitem(sys.modules, "yfinance", None)
    vendor = YFinanceVendor()  # creating it needs nothing: the import waits for a read

    with pytest.raises(NotConfigured, match=r"pip install .*\[online\]'"):
        vendor.ohlcv("AAPL", Timeframe.D1, NOW, 5)


def test_missing_yfinance_lets_the_router_ask_the_next_vendor(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    monkeypatch.setitem(sys.modules, "yfinance", None)
    router = DataRouter(
        {"yfinance": YFinanceVendor()}, {DataKind.NEWS: ("yfinance",)}, clock=lambda: NOW
    )

    with pytest.raises(NotConfigured, match="yfinance: yfinance: the optional package yfinance"):
        router.call(DataKind.NEWS, lambda vendor: vendor.news(NOW, timedelta(days=1)), as_of=NOW)


def test_yfinance_is_told_to_raise_and_history_gets_the_timeout(market: Market) -> None:
    module = market.module()
    YFinanceVendor(module, timeout=3.5, clock=lambda: NOW).ohlcv("AAPL", "1d", NOW, 5)

    assert module.config.debug.hide_exceptions is False
    assert market.calls[-1][1]["timeout"] == 3.5
    assert "raise_errors" not in market.calls[-1][1]


def test_older_yfinance_without_config_gets_raise_errors_per_call(market: Market) -> None:
    YFinanceVendor(market.module(with_config=False), clock=lambda: NOW).ohlcv("AAPL", "1d", NOW, 5)

    assert market.calls[-1][1]["raise_errors"] is True


def test_naive_as_of_is_invalid_input(market: Market) -> None:
    with pytest.raises(InvalidInput, match="as_of"):
        vendor_for(market).statements("AAPL", StatementKind.INCOME, datetime(2025, 1, 1))


def test_unserved_kinds_are_not_configured(market: Market) -> None:
    vendor = vendor_for(market)

    for read in (
        lambda: vendor.social("AAPL", NOW, timedelta(days=1)),
        lambda: vendor.industry(Sector.ENERGY, NOW),
        lambda: vendor.macro("CPI", NOW),
    ):
        with pytest.raises(NotConfigured, match="yfinance does not serve"):
            read()


# --- bars -------------------------------------------------------------------------------


def test_ohlcv_is_cut_at_as_of_and_dated_by_session(market: Market) -> None:
    as_of = utc(2025, 3, 12, 15)

    bars = vendor_for(market).ohlcv("aapl", Timeframe.D1, as_of, 3)

    assert [bar.time for bar in bars] == [utc(2025, 3, 10), utc(2025, 3, 11), utc(2025, 3, 12)]
    assert bars[-1].close == pytest.approx(close_on(market, "AAPL", "2025-03-12"))
    history_call = market.calls[-1][1]
    assert history_call["end"] == pd.Timestamp(as_of + timedelta(days=1))
    assert history_call["auto_adjust"] is True


def test_ohlcv_drops_the_bar_still_forming_now(market: Market) -> None:
    now = datetime(2025, 3, 14, 15, 0, tzinfo=NY)  # the 14:30 bar is still forming

    bars = YFinanceVendor(market.module(), clock=lambda: now).ohlcv("AAPL", "1h", now, 10)

    assert bars[-1].time == datetime(2025, 3, 14, 13, 30, tzinfo=NY)
    assert len(bars) == 5


def test_ohlcv_of_an_unknown_ticker_is_no_data(market: Market) -> None:
    with pytest.raises(NoData, match="no 1d bars for 'NOPE'"):
        vendor_for(market).ohlcv("NOPE", Timeframe.D1, NOW, 5)


def test_ohlcv_4h_from_yahoos_half_hour_bars_is_no_data(market: Market) -> None:
    # US hourly bars start at :30, so they do not tile UTC 4h buckets.
    with pytest.raises(NoData, match="unusable"):
        vendor_for(market).ohlcv("AAPL", Timeframe.H4, NOW, 2)


# --- news -------------------------------------------------------------------------------


def test_news_reads_both_shapes_and_keeps_the_window(market: Market) -> None:
    as_of = utc(2025, 1, 10, 12)

    items = vendor_for(market).news(as_of, timedelta(days=10), symbol="aapl", limit=3)

    assert [item.published_at for item in items] == [
        utc(2025, 1, 9, 14, 30),
        utc(2025, 1, 6, 14, 30),
        utc(2025, 1, 3, 14, 30),
    ]
    flat = next(item for item in items if item.id.startswith("flat"))
    nested = next(item for item in items if item.id.startswith("nested"))
    assert (flat.source, flat.url, flat.symbols) == (
        "Reuters",
        f"https://example.com/flat/{flat.id[5:]}",
        ["AAPL", "MSFT"],
    )
    assert (nested.source, nested.summary, nested.symbols) == (
        "Yahoo Finance Video",
        f"Summary {nested.id[7:]}",
        ["AAPL"],
    )
    assert nested.url == f"https://example.com/nested/{nested.id[7:]}"


def test_news_about_a_topic_searches_yahoo(market: Market) -> None:
    market.search_news = [story for story in news_stories() if "uuid" in story]

    items = vendor_for(market).news(NOW, timedelta(days=7), topic="tariffs")

    assert ("search", "tariffs") in market.calls
    assert items and all(item.topics == ["tariffs"] for item in items)


def test_news_older_than_yahoo_keeps_is_no_data(market: Market) -> None:
    with pytest.raises(NoData, match="no news for AAPL"):
        vendor_for(market).news(utc(2024, 1, 1), timedelta(days=30), symbol="AAPL")


# --- statements and fundamentals ----------------------------------------------------------


def test_statements_appear_only_after_the_reporting_lag(market: Market) -> None:
    vendor = vendor_for(market)
    # 2024-12-28 + 45 days = 2025-02-11; public at the end of that day in New York.
    public = datetime(2025, 2, 12, 0, 0, tzinfo=NY)

    before = vendor.statements("AAPL", StatementKind.INCOME, public - timedelta(seconds=1), 10)
    after = vendor.statements("AAPL", StatementKind.INCOME, public, 10)

    assert before[0].period_end == date(2024, 9, 28)
    assert [s.period_end for s in after] == [pd.Timestamp(end).date() for end in QUARTER_ENDS]
    assert after[0].reported_at == public
    assert after[0].fiscal_period == "2024Q4"
    assert after[0].items == {"revenue": 124.3e9, "net_income": 36.3e9, "eps_diluted": 2.40}
    assert "eps_diluted" not in after[-1].items  # Yahoo's NaN is left out, not zero


def test_the_fiscal_years_last_quarter_waits_for_the_annual_lag(market: Market) -> None:
    statements = vendor_for(market).statements("AAPL", StatementKind.BALANCE, NOW, 10)

    lags = {s.period_end: s.reported_at.astimezone(NY).date() - s.period_end for s in statements}
    assert lags[date(2024, 9, 28)] == timedelta(days=91)  # 90 days, public at that day's end
    assert lags[date(2024, 6, 29)] == timedelta(days=46)
    assert [s.kind for s in statements] == [StatementKind.BALANCE] * 5


def test_statements_of_an_unknown_fiscal_calendar_take_the_annual_lag(market: Market) -> None:
    market.info["AAPL"] = {key: v for key, v in INFO.items() if key != "lastFiscalYearEnd"}

    statements = vendor_for(market).statements("AAPL", StatementKind.CASH_FLOW, NOW, 10)

    assert {s.reported_at.astimezone(NY).date() - s.period_end for s in statements} == {
        timedelta(days=91)
    }


def test_statements_before_any_is_public_are_no_data(market: Market) -> None:
    with pytest.raises(NoData, match="no income statement of 'AAPL' public"):
        vendor_for(market).statements("AAPL", "income", utc(2024, 2, 1))


def test_fundamentals_come_from_as_of_statements_and_price_never_live_info(
    market: Market,
) -> None:
    as_of = utc(2025, 3, 12, 21)

    facts = vendor_for(market).fundamentals("AAPL", as_of)

    close = close_on(market, "AAPL", "2025-03-12")
    shares, equity, debt = 15.04e9, 66.8e9, 96.7e9
    net_income = 36.3e9 + 14.7e9 + 21.4e9 + 23.6e9
    eps = net_income / shares
    assert (facts.name, facts.sector, facts.industry) == (
        "Apple Inc.",
        Sector.INFORMATION_TECHNOLOGY,
        "Consumer Electronics",
    )
    assert facts.price == pytest.approx(close)
    assert facts.market_cap == pytest.approx(close * shares)
    assert facts.pe_ratio == pytest.approx(close / eps)
    assert facts.price_to_book == pytest.approx(close * shares / equity)
    assert facts.debt_to_equity == pytest.approx(debt / equity)
    assert facts.revenue_ttm == pytest.approx(124.3e9 + 94.9e9 + 85.8e9 + 90.8e9)
    assert facts.net_income_ttm == pytest.approx(net_income)
    assert facts.eps_ttm == pytest.approx(eps)
    assert facts.latest_period == "2024Q4"
    price_call = next(c[1] for c in market.calls if c[0] == "history")
    assert (price_call["auto_adjust"], price_call["actions"]) == (False, True)


def test_fundamentals_use_only_quarters_public_at_as_of(market: Market) -> None:
    # 2025-01-05: the 2024-12-28 quarter is not public yet.
    facts = vendor_for(market).fundamentals("AAPL", utc(2025, 1, 5))

    assert facts.revenue_ttm == pytest.approx(94.9e9 + 85.8e9 + 90.8e9 + 119.6e9)
    assert facts.eps_ttm == pytest.approx((14.7e9 + 21.4e9 + 23.6e9 + 33.9e9) / 15.12e9)
    assert facts.latest_period == "2024Q3"


def test_fundamentals_drop_price_figures_across_a_split(market: Market) -> None:
    market.history[("AAPL", "1d")] = daily_history(splits={"2025-03-03": 4.0})

    facts = vendor_for(market).fundamentals("AAPL", utc(2025, 2, 20))

    assert (facts.price, facts.market_cap, facts.pe_ratio, facts.price_to_book) == (None,) * 4
    assert facts.revenue_ttm is not None and facts.debt_to_equity is not None


# --- insider ----------------------------------------------------------------------------


def test_insider_trades_appear_after_the_form_4_deadline(market: Market) -> None:
    vendor = vendor_for(market)
    # Traded Wed 2024-07-03; July 4 is a holiday: due by the end of Mon 2024-07-08.
    due = datetime(2024, 7, 9, 0, 0, tzinfo=NY)

    with pytest.raises(NoData):
        vendor.insider("AAPL", due - timedelta(seconds=1), timedelta(days=30))
    [sale] = vendor.insider("AAPL", due, timedelta(days=30))

    assert (sale.side, sale.shares, sale.price) == ("sell", 100_000, 225.0)
    assert (sale.insider, sale.role, sale.traded_on) == (
        "COOK TIMOTHY D",
        "Chief Executive Officer",
        date(2024, 7, 3),
    )
    assert sale.filed_at == due


def test_insider_keeps_only_priced_buys_and_sells(market: Market) -> None:
    trades = vendor_for(market).insider("AAPL", NOW, timedelta(days=365))

    assert [(t.side, t.insider) for t in trades] == [
        ("buy", "LEVINSON ARTHUR D"),
        ("sell", "COOK TIMOTHY D"),
    ]
    assert trades[0].filed_at == datetime(2024, 11, 6, 0, 0, tzinfo=NY)


# --- sectors, indices, movers, universe ---------------------------------------------------


def change(closes: pd.Series, sessions: int) -> float:
    return closes.iloc[-1] / closes.iloc[-1 - sessions] - 1


def test_sectors_come_from_spdr_history_up_to_as_of(market: Market) -> None:
    as_of = utc(2025, 3, 12, 21)

    rows = {row.sector: row for row in vendor_for(market).sectors(as_of)}

    assert set(rows) == set(Sector)
    closes = market.history[("XLK", "1d")]["Close"].loc[:"2025-03-12"]
    tech = rows[Sector.INFORMATION_TECHNOLOGY]
    assert tech.etf == "XLK"
    assert tech.return_1d == pytest.approx(change(closes, 1))  # fractions, as every vendor's
    assert tech.return_5d == pytest.approx(change(closes, 5))
    assert tech.return_21d == pytest.approx(change(closes, 21))
    last_year = closes.loc[:"2024-12-31"].iloc[-1]
    assert tech.return_ytd == pytest.approx(closes.iloc[-1] / last_year - 1)
    communication = rows[Sector.COMMUNICATION_SERVICES]
    assert (communication.return_1d, communication.return_ytd) == (None, None)


def test_indices_report_level_and_changes(market: Market) -> None:
    levels = {level.symbol: level for level in vendor_for(market).indices(utc(2025, 3, 12, 21))}

    assert set(levels) == set(INDEX_SYMBOLS) - {"^VIX"}
    closes = market.history[("^GSPC", "1d")]["Close"].loc[:"2025-03-12"]
    spx = levels["^GSPC"]
    assert (spx.name, spx.level) == ("S&P 500", pytest.approx(closes.iloc[-1]))
    assert spx.change_21d_pct == pytest.approx(change(closes, 21) * 100)  # percent


def test_movers_refuse_a_past_as_of_without_asking_yahoo(market: Market) -> None:
    with pytest.raises(NotConfigured, match="live screener cannot answer as of a past date"):
        vendor_for(market).movers(NOW - timedelta(days=2))

    assert not [call for call in market.calls if call[0] == "screen"]


def test_movers_keep_only_quotes_timed_by_as_of(market: Market) -> None:
    close = utc(2025, 3, 14, 20)
    market.screens = {
        "day_gainers": [quote("UP", 12.5, close), quote("LATE", 30.0, NOW + timedelta(hours=1))],
        "day_losers": [quote("DOWN", -9.0, close)],
        "most_actives": [quote("BUSY", 1.0, close), {"symbol": "BROKEN"}],
    }

    movers = vendor_for(market).movers(NOW)

    assert [m.symbol for m in movers.gainers] == ["UP"]
    assert [(m.symbol, m.change_pct, m.last) for m in movers.losers] == [("DOWN", -9.0, 50.0)]
    assert [m.symbol for m in movers.most_active] == ["BUSY"]
    assert movers.as_of == NOW


def test_movers_without_a_screener_are_not_configured(market: Market) -> None:
    vendor = YFinanceVendor(market.module(with_screen=False), clock=lambda: NOW)

    with pytest.raises(NotConfigured, match="no screener"):
        vendor.movers(NOW)


def test_universe_needs_an_allow_list(market: Market) -> None:
    with pytest.raises(NotConfigured, match="no point-in-time universe"):
        vendor_for(market).universe(NOW)


def test_universe_lists_the_allow_list_from_static_info(market: Market) -> None:
    listings = vendor_for(market, symbols=["aapl", "spy", "nope"]).universe(NOW)

    assert [(x.symbol, x.name, x.sector, x.asset_type) for x in listings] == [
        ("AAPL", "Apple Inc.", Sector.INFORMATION_TECHNOLOGY, "equity"),
        ("SPY", "SPDR S&P 500", None, "etf"),
    ]


@pytest.mark.parametrize(
    ("yahoo", "sector"),
    [
        ("Technology", Sector.INFORMATION_TECHNOLOGY),
        ("Financial Services", Sector.FINANCIALS),
        ("Healthcare", Sector.HEALTH_CARE),
        ("Consumer Cyclical", Sector.CONSUMER_DISCRETIONARY),
        ("Consumer Defensive", Sector.CONSUMER_STAPLES),
        ("Basic Materials", Sector.MATERIALS),
        ("Communication Services", Sector.COMMUNICATION_SERVICES),
        ("Real Estate", Sector.REAL_ESTATE),
        ("Utilities", Sector.UTILITIES),
        ("Energy", Sector.ENERGY),
        ("Industrials", Sector.INDUSTRIALS),
    ],
)
def test_yahoo_sector_names_map_to_gics(yahoo: str, sector: Sector) -> None:
    assert SECTOR_NAMES[yahoo] is sector


# --- error classification -------------------------------------------------------------


@pytest.mark.parametrize(
    ("raised", "expected", "retry_after"),
    [
        (YFRateLimitError(), RateLimited, None),
        (HTTPError(429, {"Retry-After": "30"}), RateLimited, timedelta(seconds=30)),
        (RuntimeError("429 Client Error: Too Many Requests for url"), RateLimited, None),
        (ConnectionError("Failed to resolve 'query2.finance.yahoo.com'"), VendorFailure, None),
        (TimeoutError("read timed out after 10 s"), VendorFailure, None),
        (HTTPError(503), VendorFailure, None),
        (HTTPError(401), VendorFailure, None),
        (KeyError("chart"), VendorFailure, None),
        (YFTzMissingError("NOPE"), NoData, None),
        (HTTPError(404), NoData, None),
    ],
)
def test_yfinance_errors_are_classified(
    market: Market, raised: BaseException, expected: type, retry_after: timedelta | None
) -> None:
    market.failure = raised

    with pytest.raises(expected) as caught:
        vendor_for(market).statements("AAPL", StatementKind.INCOME, NOW)

    assert caught.value.retryable is (expected is not NoData)
    assert getattr(caught.value, "retry_after", None) == retry_after
    assert caught.value.__cause__ is raised


# --- the as-of bound, over random as_of -------------------------------------------------


def public_at(end: date) -> datetime:
    """The oracle: period end plus 45 days (90 at the fiscal year's end), at that day's end in NY."""
    lag = timedelta(days=90 if end == FISCAL_YEAR_END else 45)
    return datetime.combine(end + lag + timedelta(days=1), datetime.min.time(), NY)


def public_quarters(as_of: datetime) -> set[date]:
    ends = (pd.Timestamp(end).date() for end in QUARTER_ENDS)
    return {end for end in ends if public_at(end) <= as_of}


def answer_or_nothing(read: Any) -> list[Any]:
    try:
        return read()
    except NoData:
        return []


@settings(deadline=None, max_examples=40)
@given(as_of=st.datetimes(min_value=datetime(2023, 6, 1), max_value=datetime(2025, 3, 14, 21)))
def test_nothing_read_is_dated_after_as_of(as_of: datetime) -> None:
    as_of = as_of.replace(tzinfo=UTC)
    vendor = vendor_for(apple_market())
    window = timedelta(days=400)

    bars = answer_or_nothing(lambda: vendor.ohlcv("AAPL", Timeframe.D1, as_of, 5))
    news = answer_or_nothing(lambda: vendor.news(as_of, window, symbol="AAPL", limit=500))
    trades = answer_or_nothing(lambda: vendor.insider("AAPL", as_of, window))
    statements = {
        kind: answer_or_nothing(lambda kind=kind: vendor.statements("AAPL", kind, as_of, 10))
        for kind in StatementKind
    }

    assert bars and all(bar.time <= as_of for bar in bars)
    assert all(item.published_at <= as_of for item in news)
    assert all(trade.filed_at <= as_of for trade in trades)
    for found in statements.values():
        assert all(s.reported_at <= as_of for s in found)
        assert {s.period_end for s in found} == public_quarters(as_of)
