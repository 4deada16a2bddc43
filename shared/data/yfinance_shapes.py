"""What yfinance's answers look like, and how they become quantdesk records (no I/O here).

yfinance hands back pandas frames and Yahoo JSON whose labels changed across
versions; every label and path quantdesk relies on is in a table below, so a
change of shape is fixed in one place. Yahoo gives no date at which a statement
or an insider trade became public, so the as-of bound for those is a statutory
deadline, documented here:

- statements: ``REPORTING_LAG`` after the period end, the latest SEC deadline for
  US domestic filers (10-Q: 40 or 45 days; 10-K: 60, 75 or 90). A fiscal year's
  last quarter gets the annual lag because its numbers come with the 10-K, not a
  10-Q. Late filers (NT 10-Q/10-K) and foreign issuers can publish later still.
- insider trades: Form 4 is due before the end of the second business day
  (federal holidays excluded) after the trade.

Both become public "at the end of the deadline day in New York", so a read as of
that day's close still cannot see them.

How yfinance fails is a shape too: ``ERROR_RULES`` maps its exceptions, matched by
class name so yfinance need not be importable, to quantdesk's error taxonomy.
"""

from __future__ import annotations

import math
from collections.abc import Callable, Mapping, Sequence
from datetime import UTC, date, datetime, time, timedelta
from typing import Any
from zoneinfo import ZoneInfo

import pandas as pd
from pandas.tseries.holiday import USFederalHolidayCalendar
from pandas.tseries.offsets import CustomBusinessDay

from shared.data.contracts import (
    InsiderTransaction,
    Listing,
    Mover,
    NewsItem,
    Sector,
    Statement,
    StatementKind,
)
from shared.errors import NoData, QuantdeskError, RateLimited, VendorFailure

REPORTING_LAG: dict[str, timedelta] = {
    "quarter": timedelta(days=45),
    "fiscal_year": timedelta(days=90),
}
"""Days after a period's end by which its statement is assumed public (see the module doc)."""

INSIDER_FILING_DAYS = 2
"""Business days after a trade by which its Form 4 is filed."""

_SEC_DAY = CustomBusinessDay(calendar=USFederalHolidayCalendar())
_NEW_YORK = ZoneInfo("America/New_York")
_YEAR_END_TOLERANCE_DAYS = 10  # 52/53-week fiscal years end on a weekday near a fixed date

SECTOR_NAMES: dict[str, Sector] = {
    **{sector.value: sector for sector in Sector},
    "Technology": Sector.INFORMATION_TECHNOLOGY,
    "Financial Services": Sector.FINANCIALS,
    "Healthcare": Sector.HEALTH_CARE,
    "Consumer Cyclical": Sector.CONSUMER_DISCRETIONARY,
    "Consumer Defensive": Sector.CONSUMER_STAPLES,
    "Basic Materials": Sector.MATERIALS,
}
"""Yahoo's (Morningstar-style) sector names to the GICS sectors; GICS names map to themselves."""

ASSET_TYPES: dict[str, str] = {"EQUITY": "equity", "ETF": "etf", "INDEX": "index"}
"""``info["quoteType"]`` to ``Listing.asset_type``; other types (funds, FX, crypto) are left out."""

STATEMENT_FRAMES: dict[StatementKind, str] = {
    StatementKind.INCOME: "quarterly_income_stmt",
    StatementKind.BALANCE: "quarterly_balance_sheet",
    StatementKind.CASH_FLOW: "quarterly_cashflow",
}
"""The ``Ticker`` attribute holding each statement: rows are line items, columns period ends."""

STATEMENT_ROWS: dict[StatementKind, dict[str, str]] = {
    StatementKind.INCOME: {
        "Total Revenue": "revenue",
        "Cost Of Revenue": "cost_of_revenue",
        "Gross Profit": "gross_profit",
        "Research And Development": "research_and_development",
        "Operating Income": "operating_income",
        "EBITDA": "ebitda",
        "Pretax Income": "pretax_income",
        "Net Income": "net_income",
        "Basic EPS": "eps_basic",
        "Diluted EPS": "eps_diluted",
        "Diluted Average Shares": "diluted_shares",
    },
    StatementKind.BALANCE: {
        "Total Assets": "total_assets",
        "Current Assets": "current_assets",
        "Cash And Cash Equivalents": "cash",
        "Total Liabilities Net Minority Interest": "total_liabilities",
        "Current Liabilities": "current_liabilities",
        "Total Debt": "total_debt",
        "Stockholders Equity": "total_equity",
        "Ordinary Shares Number": "shares_outstanding",
    },
    StatementKind.CASH_FLOW: {
        "Operating Cash Flow": "operating_cash_flow",
        "Capital Expenditure": "capital_expenditure",
        "Free Cash Flow": "free_cash_flow",
        "Cash Dividends Paid": "dividends_paid",
        "Repurchase Of Capital Stock": "share_repurchases",
    },
}
"""Yahoo's row labels to the item names quantdesk uses; Yahoo's other rows are left out."""

NEWS_PATHS: dict[str, tuple[tuple[str, ...], ...]] = {
    "id": (("uuid",), ("id",), ("content", "id")),
    "title": (("title",), ("content", "title")),
    "summary": (("summary",), ("content", "summary"), ("content", "description")),
    "source": (("publisher",), ("content", "provider", "displayName")),
    "url": (("link",), ("content", "clickThroughUrl", "url"), ("content", "canonicalUrl", "url")),
    "published": (("providerPublishTime",), ("content", "pubDate")),
}
"""Where each field sits in a story: flat (yfinance < 0.2.48, ``Search``) or under "content"."""

NEWS_SYMBOL_PATHS: tuple[tuple[str, ...], ...] = (
    ("relatedTickers",),
    ("content", "finance", "stockTickers"),
)
"""Where a story lists its tickers: strings (flat shape) or ``{"symbol": ...}`` (nested)."""

INSIDER_SIDES: dict[str, str] = {"purchase": "buy", "sale": "sell"}
"""First word of the "Text" column to the side; awards, gifts and exercises are not trades."""

MOVER_SCREENS: dict[str, str] = {
    "gainers": "day_gainers",
    "losers": "day_losers",
    "most_active": "most_actives",
}
"""``MarketMovers`` field to the name of Yahoo's predefined screener."""

MOVER_FIELDS: dict[str, str] = {
    "last": "regularMarketPrice",
    "change_pct": "regularMarketChangePercent",
    "volume": "regularMarketVolume",
}
"""``Mover`` field to the screener quote's key (``regularMarketChangePercent`` is in percent)."""


def end_of_day_new_york(day: date) -> datetime:
    """The instant ``day`` ends in New York, in UTC: when a same-day SEC filing is surely public."""
    return datetime.combine(day + timedelta(days=1), time(), tzinfo=_NEW_YORK).astimezone(UTC)


def reported_at(period_end: date, fiscal_year_end: date | None) -> datetime:
    """When a quarter's statement is assumed public; an unknown fiscal calendar takes the longer lag."""
    closes_year = fiscal_year_end is None or _same_day_of_year(period_end, fiscal_year_end)
    return end_of_day_new_york(
        period_end + REPORTING_LAG["fiscal_year" if closes_year else "quarter"]
    )


def filed_at(traded_on: date) -> datetime:
    """When a Form 4 for a trade on ``traded_on`` is due at the latest."""
    deadline = pd.Timestamp(traded_on) + INSIDER_FILING_DAYS * _SEC_DAY
    return end_of_day_new_york(deadline.date())


def statements_from_frame(
    symbol: str,
    kind: StatementKind,
    frame: pd.DataFrame,
    *,
    currency: str,
    fiscal_year_end: date | None,
) -> list[Statement]:
    """One ``Statement`` per column (period end) with at least one known item, oldest first."""
    rows = STATEMENT_ROWS[kind]
    table = frame.loc[[label for label in rows if label in frame.index]]
    statements = []
    for column in table.columns:
        values = pd.to_numeric(table[column], errors="coerce").dropna()
        if values.empty:
            continue
        end = pd.Timestamp(column).date()
        statements.append(
            Statement(
                symbol=symbol,
                kind=kind,
                fiscal_period=f"{end.year}Q{(end.month - 1) // 3 + 1}",
                period_end=end,
                reported_at=reported_at(end, fiscal_year_end),
                currency=currency,
                items={rows[label]: float(value) for label, value in values.items()},
            )
        )
    return sorted(statements, key=lambda statement: statement.period_end)


def insider_from_frame(symbol: str, frame: pd.DataFrame) -> list[InsiderTransaction]:
    """The open-market buys and sells of ``insider_transactions``; price is Value / Shares."""
    trades = []
    for row in frame.to_dict("records"):
        side = INSIDER_SIDES.get(str(row.get("Text") or "").split(" ", 1)[0].lower())
        shares, value = number(row.get("Shares")), number(row.get("Value"))
        start = pd.Timestamp(row.get("Start Date"))
        if side is None or pd.isna(start) or not (shares and shares > 0 and value and value > 0):
            continue
        trades.append(
            InsiderTransaction(
                symbol=symbol,
                insider=str(row.get("Insider") or "unknown"),
                role=str(row.get("Position") or ""),
                side=side,
                shares=shares,
                price=value / shares,
                traded_on=start.date(),
                filed_at=filed_at(start.date()),
            )
        )
    return trades


def news_item(raw: Mapping[str, Any], *, symbol: str | None, topic: str | None) -> NewsItem | None:
    """A story in either shape as a ``NewsItem``; None when it lacks an id, a title or a time."""
    fields = {name: _first(raw, paths) for name, paths in NEWS_PATHS.items()}
    published = instant(fields["published"])
    if published is None or not fields["id"] or not fields["title"]:
        return None
    return NewsItem(
        id=str(fields["id"]),
        published_at=published,
        title=str(fields["title"]),
        summary=str(fields["summary"] or ""),
        source=str(fields["source"] or "Yahoo Finance"),
        url=fields["url"],
        symbols=sorted(_related_symbols(raw) | ({symbol} if symbol else set())),
        topics=[topic] if topic else [],
    )


def mover_from_quote(quote: Mapping[str, Any]) -> tuple[datetime, Mover] | None:
    """A screener quote as (its market time, ``Mover``); None when a figure or the time is missing."""
    when = instant(quote.get("regularMarketTime"))
    figures = {field: number(quote.get(key)) for field, key in MOVER_FIELDS.items()}
    symbol = quote.get("symbol")
    if when is None or not symbol or any(value is None for value in figures.values()):
        return None
    return when, Mover(symbol=symbol, name=name_of(symbol, quote), **figures)


def listing_from_info(symbol: str, info: Mapping[str, Any]) -> Listing | None:
    """``Ticker.info`` as a ``Listing``; None for quote types the universe does not hold."""
    asset_type = ASSET_TYPES.get(str(info.get("quoteType") or "").upper())
    if asset_type is None:
        return None
    equity = asset_type == "equity"
    return Listing(
        symbol=symbol,
        name=name_of(symbol, info),
        sector=sector_of(info) if equity else None,
        industry=info.get("industry") if equity else None,
        asset_type=asset_type,
    )


def name_of(symbol: str, info: Mapping[str, Any]) -> str:
    """The company's name from ``info`` or a quote, else the ticker."""
    return str(info.get("longName") or info.get("shortName") or symbol)


def sector_of(info: Mapping[str, Any]) -> Sector | None:
    """The GICS sector for Yahoo's sector name; None when absent or unknown."""
    return SECTOR_NAMES.get(str(info.get("sector") or ""))


def fiscal_year_end(info: Mapping[str, Any]) -> date | None:
    """The last fiscal year's end (``lastFiscalYearEnd``, epoch seconds), if Yahoo gives it."""
    when = instant(info.get("lastFiscalYearEnd"))
    return when.date() if when else None


def currency_of(info: Mapping[str, Any]) -> str:
    """The statements' currency; Yahoo's statements default to dollars like the contract's."""
    return str(info.get("financialCurrency") or info.get("currency") or "USD")


def number(value: object) -> float | None:
    """A finite float, or None for Yahoo's NaN, None, "" and text."""
    try:
        result = float(value)  # type: ignore[arg-type]
    except (TypeError, ValueError):
        return None
    return result if math.isfinite(result) else None


def instant(value: object) -> datetime | None:
    """An aware UTC datetime from epoch seconds or an ISO string with a zone; else None.

    A time without a zone is refused: guessing it could date a story after ``as_of``
    as before it.
    """
    if isinstance(value, int | float) and not isinstance(value, bool):
        return pd.Timestamp(value, unit="s", tz="UTC").to_pydatetime()
    if not isinstance(value, str):
        return None
    try:
        stamp = pd.Timestamp(value)
    except ValueError:
        return None
    return None if pd.isna(stamp) or stamp.tzinfo is None else stamp.tz_convert(UTC).to_pydatetime()


def _first(raw: Mapping[str, Any], paths: Sequence[tuple[str, ...]]) -> Any:
    """The first non-empty value found along ``paths`` in nested mappings."""
    for path in paths:
        value: Any = raw
        for key in path:
            value = value.get(key) if isinstance(value, Mapping) else None
        if value not in (None, "", [], {}):
            return value
    return None


def _related_symbols(raw: Mapping[str, Any]) -> set[str]:
    """The tickers a story is tagged with, in either shape."""
    entries = [entry for path in NEWS_SYMBOL_PATHS for entry in _first(raw, (path,)) or ()]
    codes = (entry.get("symbol") if isinstance(entry, Mapping) else entry for entry in entries)
    return {code.upper() for code in codes if isinstance(code, str) and code}


def _same_day_of_year(day: date, anchor: date) -> bool:
    """Whether ``day`` falls within a few days of ``anchor``'s anniversary, across New Year too."""
    gap = abs(day.timetuple().tm_yday - anchor.timetuple().tm_yday)
    return min(gap, 365 - gap) <= _YEAR_END_TOLERANCE_DAYS


# --- how yfinance fails ---------------------------------------------------------------


def surface_errors(module: Any) -> dict[str, Any]:
    """Make yfinance raise instead of logging and returning an empty frame.

    Newer yfinance hides its exceptions process-wide unless
    ``config.debug.hide_exceptions`` is False (it then deprecates ``raise_errors``);
    older versions take ``raise_errors=True`` per history call. Either way a rate
    limit or an outage must surface, or it would read as "no data".
    """
    debug = getattr(getattr(module, "config", None), "debug", None)
    if debug is None:
        return {"raise_errors": True}
    debug.hide_exceptions = False
    return {}


def _status(error: BaseException) -> int | None:
    """The HTTP status an error carries (yfinance's own, or its HTTP client's response)."""
    for holder in (error, getattr(error, "response", None)):
        status = getattr(holder, "status_code", None)
        if isinstance(status, int):
            return status
    return None


def _named(*names: str) -> Callable[[BaseException], bool]:
    """Matches errors of a class (or subclass) of one of ``names``, without importing yfinance."""
    return lambda error: any(cls.__name__ in names for cls in type(error).__mro__)


def _says(*phrases: str) -> Callable[[BaseException], bool]:
    return lambda error: any(phrase in str(error).lower() for phrase in phrases)


def _rate_limited(what: str, error: BaseException) -> QuantdeskError:
    headers = getattr(getattr(error, "response", None), "headers", None) or {}
    wait = str(headers.get("Retry-After", ""))
    retry_after = timedelta(seconds=int(wait)) if wait.isdigit() else None
    return RateLimited(
        f"Yahoo Finance throttled the {what} request: {error}", retry_after=retry_after
    )


def _no_data(what: str, error: BaseException) -> QuantdeskError:
    return NoData(f"Yahoo Finance has no {what} (unknown or delisted ticker?): {error}")


_Rule = tuple[Callable[[BaseException], bool], Callable[[str, BaseException], QuantdeskError]]
ERROR_RULES: tuple[_Rule, ...] = (
    (_named("YFRateLimitError"), _rate_limited),
    (lambda error: _status(error) == 429, _rate_limited),
    (_says("too many requests", "rate limit"), _rate_limited),
    (_named("YFTickerMissingError", "YFTzMissingError", "YFPricesMissingError"), _no_data),
    (lambda error: _status(error) == 404, _no_data),
)
"""First match wins. Anything else (connection errors, timeouts, HTTP 5xx, Yahoo's
401 "Invalid Crumb", unreadable JSON) is a ``VendorFailure``: retrying may help."""


def classify(what: str, error: BaseException) -> QuantdeskError:
    """The quantdesk error for a failed yfinance call: the first matching rule, else a failure."""
    for matches, make in ERROR_RULES:
        if matches(error):
            return make(what, error)
    return VendorFailure(f"Yahoo Finance {what} failed: {type(error).__name__}: {error}")
