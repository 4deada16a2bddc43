"""A fake ``yfinance`` module answering in Yahoo's real shapes, for the yfinance vendor's tests.

The builders copy yfinance's labels and types: history frames with an exchange-local,
tz-aware ``DatetimeIndex`` named "Date"; statements with line items as rows and naive
period-end ``Timestamp`` columns, newest first, object dtype; news in both the flat
(``providerPublishTime``) and the nested ("content" / "pubDate") shapes; insider frames
with "Start Date", "Text", "Shares", "Value"; ``yf.screen`` answers with "quotes".
``Market`` holds what the fake Yahoo knows and records the calls it was asked.
"""

from __future__ import annotations

import types
from collections.abc import Sequence
from dataclasses import dataclass, field
from datetime import UTC, date, datetime
from typing import Any
from zoneinfo import ZoneInfo

import pandas as pd

from shared.data.contracts import INDEX_SYMBOLS, SECTOR_ETFS

NY = ZoneInfo("America/New_York")
NOW = datetime(2025, 3, 14, 22, 0, tzinfo=UTC)  # a Friday, after the close
FIRST_SESSION, LAST_SESSION = "2023-01-02", "2025-03-14"
QUARTER_ENDS = ["2024-12-28", "2024-09-28", "2024-06-29", "2024-03-30", "2023-12-30"]
FISCAL_YEAR_END = date(2024, 9, 28)  # Apple-like: the 2024-09-28 quarter closes the year


def utc(year: int, month: int, day: int, hour: int = 0, minute: int = 0) -> datetime:
    return datetime(year, month, day, hour, minute, tzinfo=UTC)


def epoch(moment: datetime) -> int:
    return int(moment.timestamp())


# --- fixture builders, in yfinance's shapes ------------------------------------------


def daily_history(drift: float = 0.001, splits: dict[str, float] | None = None) -> pd.DataFrame:
    """``Ticker.history(interval="1d", actions=True)``: sessions at New York midnight."""
    index = pd.bdate_range(FIRST_SESSION, LAST_SESSION, tz=NY, name="Date")
    close = pd.Series([100 * (1 + drift) ** i for i in range(len(index))], index=index)
    frame = pd.DataFrame(
        {
            "Open": close * 0.99,
            "High": close * 1.02,
            "Low": close * 0.97,
            "Close": close,
            "Volume": 1_000_000.0,
            "Dividends": 0.0,
            "Stock Splits": 0.0,
        }
    )
    for day, ratio in (splits or {}).items():
        frame.loc[pd.Timestamp(day, tz=NY), "Stock Splits"] = ratio
    return frame


def hourly_history(day: str) -> pd.DataFrame:
    """``Ticker.history(interval="1h")`` for one US session: bars start at :30, New York time."""
    index = pd.date_range(f"{day} 09:30", periods=7, freq="h", tz=NY, name="Datetime")
    return pd.DataFrame(
        {"Open": 10.0, "High": 11.0, "Low": 9.0, "Close": 10.5, "Volume": 500.0}, index=index
    )


def statement_frame(rows: dict[str, Sequence[float | None]]) -> pd.DataFrame:
    """A ``quarterly_*`` frame: line items as rows, naive period ends as columns, newest first."""
    columns = [pd.Timestamp(end) for end in QUARTER_ENDS]
    return pd.DataFrame(list(rows.values()), index=list(rows), columns=columns, dtype=object)


INCOME = statement_frame(
    {
        "Tax Effect Of Unusual Items": [0.0, 0.0, 0.0, 0.0, 0.0],
        "Total Revenue": [124.3e9, 94.9e9, 85.8e9, 90.8e9, 119.6e9],
        "Net Income": [36.3e9, 14.7e9, 21.4e9, 23.6e9, 33.9e9],
        "Diluted EPS": [2.40, 0.97, 1.40, 1.53, None],
    }
)
BALANCE = statement_frame(
    {
        "Total Assets": [344e9, 365e9, 331e9, 337e9, 353e9],
        "Stockholders Equity": [66.8e9, 56.9e9, 66.7e9, 74.2e9, 74.1e9],
        "Total Debt": [96.7e9, 106.6e9, 101.3e9, 104.6e9, 108.0e9],
        "Ordinary Shares Number": [15.04e9, 15.12e9, 15.22e9, 15.34e9, 15.44e9],
    }
)
CASH_FLOW = statement_frame(
    {
        "Operating Cash Flow": [29.9e9, 26.8e9, 28.9e9, 22.7e9, 39.9e9],
        "Capital Expenditure": [-2.9e9, -2.9e9, -2.2e9, -2.0e9, -2.4e9],
        "Free Cash Flow": [27.0e9, 23.9e9, 26.7e9, 20.7e9, 37.5e9],
    }
)

INFO = {
    "longName": "Apple Inc.",
    "shortName": "Apple",
    "quoteType": "EQUITY",
    "sector": "Technology",
    "industry": "Consumer Electronics",
    "financialCurrency": "USD",
    "lastFiscalYearEnd": epoch(datetime.combine(FISCAL_YEAR_END, datetime.min.time(), UTC)),
    # Live figures the vendor must never use for a point-in-time read:
    "marketCap": 1.0,
    "trailingPE": 999.0,
    "priceToBook": 999.0,
    "sharesOutstanding": 1,
}


def news_stories() -> list[dict[str, Any]]:
    """Every third day a story, alternating the nested and the flat shapes, newest first."""
    stories = []
    for n, day in enumerate(pd.date_range("2024-06-01 14:30", "2025-03-14 14:30", freq="3D")):
        moment = day.tz_localize(UTC).to_pydatetime()
        if n % 2:
            stories.append(
                {
                    "uuid": f"flat-{n}",
                    "title": f"Flat story {n}",
                    "publisher": "Reuters",
                    "link": f"https://example.com/flat/{n}",
                    "providerPublishTime": epoch(moment),
                    "type": "STORY",
                    "relatedTickers": ["AAPL", "MSFT"],
                }
            )
        else:
            stories.append(
                {
                    "id": f"nested-{n}",
                    "content": {
                        "id": f"nested-{n}",
                        "contentType": "STORY",
                        "title": f"Nested story {n}",
                        "summary": f"Summary {n}",
                        "pubDate": moment.strftime("%Y-%m-%dT%H:%M:%SZ"),
                        "provider": {"displayName": "Yahoo Finance Video"},
                        "canonicalUrl": {"url": f"https://example.com/nested/{n}"},
                        "clickThroughUrl": None,
                    },
                }
            )
    undated = {"id": "undated", "content": {"title": "No date", "pubDate": None}}
    return [undated, *reversed(stories)]


def insider_frame() -> pd.DataFrame:
    """``Ticker.insider_transactions``: Yahoo's column names, naive "Start Date"."""
    rows = [
        # shares, text, insider, position, start date, value
        (
            100_000,
            "Sale at price 224.00 - 227.41 per share.",
            "COOK TIMOTHY D",
            "Chief Executive Officer",
            "2024-07-03",
            22_500_000.0,
        ),
        (
            1_000,
            "Purchase at price 150.00 per share.",
            "LEVINSON ARTHUR D",
            "Director",
            "2024-11-01",
            150_000.0,
        ),
        (
            50_000,
            "Stock Award(Grant) at price 0.00 per share.",
            "ADAMS KATHERINE L",
            "General Counsel",
            "2024-10-01",
            0.0,
        ),
        (
            2_000,
            "Stock Gift at price 0.00 per share.",
            "COOK TIMOTHY D",
            "Chief Executive Officer",
            "2024-12-20",
            None,
        ),
        (3_000, "Sale at price 230.00 per share.", "MAESTRI LUCA", "Officer", "2024-12-20", None),
    ]
    return pd.DataFrame(
        {
            "Shares": [row[0] for row in rows],
            "URL": "",
            "Text": [row[1] for row in rows],
            "Insider": [row[2] for row in rows],
            "Position": [row[3] for row in rows],
            "Transaction": "",
            "Start Date": pd.to_datetime([row[4] for row in rows]),
            "Ownership": "D",
            "Value": [row[5] for row in rows],
        }
    )


def quote(symbol: str, change: float, moment: datetime) -> dict[str, Any]:
    """One quote of a ``yf.screen`` answer (formatted=false: raw numbers, epoch times)."""
    return {
        "symbol": symbol,
        "shortName": f"{symbol} Corp",
        "regularMarketPrice": 50.0,
        "regularMarketChangePercent": change,
        "regularMarketVolume": 2_000_000,
        "averageDailyVolume3Month": 1_000_000,
        "regularMarketTime": epoch(moment),
    }


# --- the fake module ---------------------------------------------------------------------


class YFRateLimitError(Exception):
    """Named like ``yfinance.exceptions.YFRateLimitError``, with its message."""

    def __init__(self) -> None:
        super().__init__("Too Many Requests. Rate limited. Try after a while.")


class YFTickerMissingError(Exception):
    def __init__(self, ticker: str, rationale: str) -> None:
        super().__init__(f"${ticker}: possibly delisted; {rationale}")


class YFTzMissingError(YFTickerMissingError):
    def __init__(self, ticker: str) -> None:
        super().__init__(ticker, "no timezone found")


class HTTPError(OSError):
    """Like requests' and curl_cffi's HTTPError: the response carries the status."""

    def __init__(self, status: int, headers: dict[str, str] | None = None) -> None:
        super().__init__(f"{status} Error for url: https://query2.finance.yahoo.com/")
        self.response = types.SimpleNamespace(status_code=status, headers=headers or {})


@dataclass
class Market:
    """What the fake Yahoo knows, and the calls it was asked."""

    history: dict[tuple[str, str], pd.DataFrame] = field(default_factory=dict)
    frames: dict[tuple[str, str], pd.DataFrame] = field(default_factory=dict)
    info: dict[str, dict[str, Any]] = field(default_factory=dict)
    news: dict[str, list[dict[str, Any]]] = field(default_factory=dict)
    search_news: list[dict[str, Any]] = field(default_factory=list)
    screens: dict[str, list[dict[str, Any]]] = field(default_factory=dict)
    failure: BaseException | None = None
    calls: list[tuple[str, Any]] = field(default_factory=list)

    def module(self, *, with_config: bool = True, with_screen: bool = True) -> Any:
        market = self
        fake = types.SimpleNamespace(
            Ticker=lambda symbol: FakeTicker(market, symbol),
            Search=lambda query, news_count=8: FakeSearch(market, query, news_count),
        )
        if with_config:
            fake.config = types.SimpleNamespace(debug=types.SimpleNamespace(hide_exceptions=True))
        if with_screen:
            fake.screen = self.screen
        return fake

    def call(self, what: str, detail: Any = None) -> None:
        self.calls.append((what, detail))
        if self.failure is not None:
            raise self.failure

    def screen(self, name: str, **options: Any) -> dict[str, Any]:
        self.call("screen", name)
        return {
            "id": name,
            "count": len(self.screens.get(name, [])),
            "quotes": self.screens.get(name, []),
        }


class FakeTicker:
    def __init__(self, market: Market, symbol: str) -> None:
        self._market, self.ticker = market, symbol

    def history(
        self, *, interval: str, start: Any, end: Any, auto_adjust: bool, actions: bool, **rest: Any
    ) -> pd.DataFrame:
        self._market.call(
            "history",
            {
                "symbol": self.ticker,
                "interval": interval,
                "start": start,
                "end": end,
                "auto_adjust": auto_adjust,
                "actions": actions,
                **rest,
            },
        )
        frame = self._market.history.get((self.ticker, interval))
        if frame is None:  # yfinance's empty_df(): the columns, no rows
            return pd.DataFrame(columns=["Open", "High", "Low", "Close", "Adj Close", "Volume"])
        frame = frame[(frame.index >= pd.Timestamp(start)) & (frame.index < pd.Timestamp(end))]
        if not auto_adjust:
            frame = frame.assign(**{"Adj Close": frame["Close"]})
        return (
            frame if actions else frame.drop(columns=["Dividends", "Stock Splits"], errors="ignore")
        )

    def get_news(self, count: int = 10, tab: str = "news") -> list[dict[str, Any]]:
        self._market.call("get_news", (self.ticker, count))
        return self._market.news.get(self.ticker, [])[:count]

    @property
    def info(self) -> dict[str, Any]:
        self._market.call("info", self.ticker)
        return self._market.info.get(self.ticker, {"trailingPegRatio": None})

    def __getattr__(self, attribute: str) -> pd.DataFrame:
        """``quarterly_income_stmt``, ``insider_transactions`` ...: frames, empty if unknown."""
        self._market.call(attribute, self.ticker)
        return self._market.frames.get((self.ticker, attribute), pd.DataFrame())


class FakeSearch:
    def __init__(self, market: Market, query: str, news_count: int) -> None:
        market.call("search", query)
        self.news = market.search_news[:news_count]


def apple_market() -> Market:
    market = Market(
        history={("AAPL", "1d"): daily_history(), ("AAPL", "1h"): hourly_history("2025-03-14")},
        frames={
            ("AAPL", "quarterly_income_stmt"): INCOME,
            ("AAPL", "quarterly_balance_sheet"): BALANCE,
            ("AAPL", "quarterly_cashflow"): CASH_FLOW,
            ("AAPL", "insider_transactions"): insider_frame(),
        },
        info={"AAPL": INFO, "SPY": {"longName": "SPDR S&P 500", "quoteType": "ETF"}},
        news={"AAPL": news_stories()},
    )
    for n, etf in enumerate(SECTOR_ETFS.values()):
        if etf != "XLC":  # no history: a sector without bars
            market.history[(etf, "1d")] = daily_history(drift=0.0005 * (n - 5))
    for n, symbol in enumerate(INDEX_SYMBOLS):
        if symbol != "^VIX":
            market.history[(symbol, "1d")] = daily_history(drift=0.0002 * n)
    return market
