"""Finnhub: company news by publication time, insider trades by filing day, and financials as
reported with their acceptance times (a free key, ``FINNHUB_API_KEY``).

Three endpoints of Finnhub's API (its OpenAPI file, ``finnhub.io/static/swagger.json``), each
read as of ``as_of``:

- ``/company-news?symbol&from&to``: articles with their publication time (``datetime``, Unix
  seconds). ``from`` and ``to`` are days (Finnhub does not say in which zone), so the request
  spans every day the window may touch and the article published after ``as_of``, later the
  same day included, is dropped here. The free tier keeps about a year of it
  (``news_history_days``: a paid plan's reach is set there) and answers an older range with
  an empty list, which would read as "no news then": a window older than that
  is "no data" saying so, without a request, and one reaching past it says so when nothing
  came back. So the router goes on to the next vendor, and the agent reads why.
- ``/stock/insider-transactions?symbol&from&to``: Form 4 rows with a filing *day* and no
  time: a trade counts as public at the end of its filing day in New York, never earlier (as
  the SEC's facts without an acceptance time do). Open-market buys and sells only (codes P and
  S, ``shared.data.sec.OPEN_MARKET``). The spec does not say which date ``from``/``to`` bound,
  so the request starts a month before the window (a Form 4 is due two business days after
  the trade; some come late) and the filing day is checked here.
- ``/stock/financials-reported?symbol&freq``: the 10-Qs (``quarterly``) and the 10-Ks
  (``annual``: Finnhub files no fourth quarter, a company reports it only in its year) as
  filed, each with its acceptance time (New York, as EDGAR stamps it) and its us-gaap lines.
  They are read as the SEC's company facts are (``shared.data.sec_facts``, its concept table
  included): each period in the version filed last by ``as_of``, an amendment only from its
  own acceptance (a report without one from the end of its filing day). A report's income
  lines cover its own span (``startDate`` to ``endDate``: a 10-Q's quarter, a 10-K's year) and
  its balance lines stand at ``endDate``; its cash flows run from the fiscal year's start, as
  a 10-Q presents them. Quarters then come as from the SEC's facts: a span of about three
  months, or the difference of two spans that start on the same day, so the fourth quarter's
  cash flows come from the year less nine months, its income from the year less its three
  quarters, and its balance sheet from the 10-K. Fundamentals are computed from these and the
  close at ``as_of`` (``price_at``: the bars' vendors), never Finnhub's snapshot of today.

Market news (``/news?category=general``) is only the latest: asked about a past ``as_of`` it
would answer with today's stories. ``reach`` is per kind, and company news is point in time,
so marking news now-only would also stop the router from asking Finnhub about a company's
past; instead a read for no symbol, or for a topic (Finnhub's articles carry none), is
``NotConfigured`` with that reason and the router asks the next vendor of the chain.

Endpoints on a paid plan only, which this vendor never calls (the kind they would serve is not
among its ``kinds``, so the router never asks it for one):

=============================  =============================================================
``/stock/candle``              daily bars: premium since 2024 (Massive, the bundled files or
                               Yahoo serve bars)
``/stock/social-sentiment``    social: Reddit and X mention counts, premium, and about now
``/stock/financials``          standardized statements: premium (the as-reported filings
                               above are free)
=============================  =============================================================

A 403 from any endpoint (Finnhub's "You don't have access to this resource.", what a free key
gets from a paid endpoint) is ``NotConfigured`` with Finnhub's words, never a crash.

The key travels in the ``X-Finnhub-Token`` header (Finnhub also takes a ``token`` query
parameter; a header stays out of URLs and their logs) and never appears in an error. Finnhub
allows 60 requests a minute and 30 a second per key: each request first passes the desk's
quotas for both (``gate``). A refused key (401) is ``NotConfigured``, a 429 ``RateLimited``, a
5xx, a timeout or a dropped connection ``VendorFailure``.
"""

from __future__ import annotations

from collections.abc import Callable
from datetime import UTC, date, datetime, time, timedelta
from time import monotonic
from typing import Any, TypeVar
from zoneinfo import ZoneInfo

import httpx
from pydantic import BaseModel, Field, RootModel, ValidationError, field_validator

from shared.config import DEFAULT_QUOTAS, FINNHUB_KEY_ENV, FinnhubSettings
from shared.data.contracts import (
    DataKind,
    DataVendor,
    Fundamentals,
    InsiderTransaction,
    NewsItem,
    NewsQuery,
    NewsSearch,
    Statement,
    StatementKind,
)
from shared.data.figures import compute_fundamentals
from shared.data.http_vendor import get, json_of, retry_after
from shared.data.quota import Gate, LocalQuota
from shared.data.sec import OPEN_MARKET, PriceAt
from shared.data.sec_facts import statements_known_at
from shared.errors import InvalidInput, NoData, NotConfigured, RateLimited, VendorFailure

M = TypeVar("M", bound=BaseModel)

NAME = "finnhub"
BURST = "finnhub/burst"
NEW_YORK = ZoneInfo("America/New_York")
KEY_FIX = (
    f"Set {FINNHUB_KEY_ENV} (a free key from finnhub.io/register) on the tools workers, or "
    "route the kind to another vendor in QUANTDESK_DATA_ROUTES."
)
DEFAULT_RETRY_AFTER = timedelta(seconds=20)
"""Finnhub's 429 names no wait and does not say which of its two windows is full: a third
of the minute."""
LATE_FILING = timedelta(days=31)
"""How long before the window an insider request starts, for trades filed late."""
FRESH_FOR = 600.0
"""Seconds a company's filings are reused in one process: its three statements
cost two requests, not six (reads still filter them by ``as_of``)."""
KEPT_FILINGS = 64
"""At most this many (company, frequency) answers kept."""
END_OF_DAY = time(23, 59, 59)
UNITS = {"usd": "USD", "usd/shares": "USD/shares", "usd/share": "USD/shares", "shares": "shares"}
"""Finnhub's unit spellings → the company-facts units ``sec_facts`` reads; a line in any other
unit (another currency) is left out."""
SECTIONS = {StatementKind.INCOME: "ic", StatementKind.BALANCE: "bs", StatementKind.CASH_FLOW: "cf"}
"""Each statement's section of a report."""
GAAP_PREFIXES = ("us-gaap_", "us-gaap:")
MARKET_NEWS_REFUSED = (
    "Finnhub serves company news only: its market news is the latest only (never as of a past "
    "time), and its articles carry no topics"
)


class _Story(BaseModel):
    id: int
    published: int = Field(alias="datetime")
    headline: str
    summary: str = ""
    source: str = ""
    url: str = ""
    related: str = ""


class _News(RootModel[list[_Story]]):
    pass


class _Trade(BaseModel):
    name: str
    change: float
    filingDate: date
    transactionDate: date
    transactionCode: str
    transactionPrice: float | None = None


class _Trades(BaseModel):
    data: list[_Trade]


class _Line(BaseModel):
    concept: str
    unit: str = ""
    value: float | None = None


class _Sections(BaseModel):
    bs: list[_Line] = []
    ic: list[_Line] = []
    cf: list[_Line] = []


class _Report(BaseModel):
    accessNumber: str
    year: int
    quarter: int
    form: str
    startDate: datetime
    endDate: datetime
    filedDate: datetime
    acceptedDate: datetime | None = None
    report: _Sections

    @field_validator("acceptedDate", mode="before")
    @classmethod
    def _blank_is_none(cls, value: object) -> object:
        return value or None

    @property
    def annual(self) -> bool:
        return self.form.upper().startswith("10-K")


class _Financials(BaseModel):
    data: list[_Report]


def _end_of_day(day: date) -> datetime:
    """The end of ``day`` in New York, in UTC: when something filed that day was surely public."""
    return datetime.combine(day, END_OF_DAY, NEW_YORK).astimezone(UTC)


class FinnhubVendor(DataVendor, NewsSearch):
    """Company news, insider trades and financials as reported, from Finnhub's free tier."""

    name = NAME
    kinds = frozenset({DataKind.NEWS, DataKind.INSIDER, DataKind.STATEMENTS, DataKind.FUNDAMENTALS})

    def __init__(
        self,
        settings: FinnhubSettings,
        gate: Gate | None = None,
        transport: httpx.BaseTransport | None = None,
        clock: Callable[[], datetime] = lambda: datetime.now(UTC),
        price_at: PriceAt = lambda symbol, as_of: None,
    ) -> None:
        if settings.api_key is None or not settings.api_key.get_secret_value():
            raise NotConfigured(
                f"Finnhub needs a key and {FINNHUB_KEY_ENV} is not set", fix=KEY_FIX
            )
        self._key = settings.api_key.get_secret_value()
        self._http = httpx.Client(
            base_url=settings.base_url.rstrip("/") + "/",
            headers={"X-Finnhub-Token": self._key},
            timeout=settings.timeout_seconds,
            transport=transport,
        )
        self._gate = gate or _local_gate()
        self._clock = clock
        self._price_at = price_at
        days = settings.news_history_days
        self._news_history = timedelta(days=days) if days is not None else None
        self._filings: dict[tuple[str, str], tuple[float, list[_Report]]] = {}

    # --- the DataVendor interface -----------------------------------------------------

    def search_news(self, query: NewsQuery) -> list[NewsItem]:
        """A company's articles published in ``(as_of - window, as_of]``, newest first."""
        if query.symbol is None or query.topic:
            raise NotConfigured(
                MARKET_NEWS_REFUSED, fix="Route news to another vendor after finnhub."
            )
        ticker = query.symbol.upper()
        start = query.as_of - query.window
        history = self._news_history
        horizon = self._clock() - history if history else datetime.min.replace(tzinfo=UTC)
        too_old = (
            f"Finnhub serves company news from {horizon.date().isoformat()} on (the free "
            "tier keeps about a year; QUANTDESK_FINNHUB__NEWS_HISTORY_DAYS sets your plan's)"
        )
        if query.as_of <= horizon:
            raise NoData(f"{too_old}, and {query.as_of.isoformat()} is older")
        first_day = start.astimezone(UTC).date() - timedelta(days=1)
        answer = self._get(
            "company-news",
            ticker,
            symbol=ticker,
            **{"from": first_day.isoformat(), "to": query.as_of.astimezone(UTC).date().isoformat()},
        )
        items = [
            _news_item(ticker, story)
            for story in _parsed(_News, answer, ticker).root
            if start.timestamp() < story.published <= query.as_of.timestamp()
        ]
        if not items:
            why = f": {too_old}" if start < horizon else ""
            raise NoData(
                f"Finnhub has no news of {ticker} published in the {query.window} to "
                f"{query.as_of.isoformat()}{why}"
            )
        return sorted(items, key=lambda item: item.published_at, reverse=True)[: query.limit]

    def insider(self, symbol: str, as_of: datetime, window: timedelta) -> list[InsiderTransaction]:
        """Open-market buys and sells filed in ``(as_of - window, as_of]``, newest first."""
        ticker = symbol.upper()
        start = as_of - window
        answer = self._get(
            "stock/insider-transactions",
            ticker,
            symbol=ticker,
            **{
                "from": (start - LATE_FILING).astimezone(NEW_YORK).date().isoformat(),
                "to": as_of.astimezone(NEW_YORK).date().isoformat(),
            },
        )
        trades = [
            trade
            for row in _parsed(_Trades, answer, ticker).data
            if (trade := _insider_trade(ticker, row)) is not None
            and start < trade.filed_at <= as_of
        ]
        if not trades:
            raise NoData(
                f"Finnhub has no open-market trade of {ticker} filed in the {window} to "
                f"{as_of.isoformat()}"
            )
        return sorted(trades, key=lambda trade: trade.filed_at, reverse=True)

    def statements(
        self, symbol: str, kind: StatementKind, as_of: datetime, periods: int = 4
    ) -> list[Statement]:
        """The last ``periods`` quarterly statements of ``kind`` as filed by ``as_of``."""
        ticker = symbol.upper()
        kind = StatementKind(kind)
        reports = self._reports(ticker, "quarterly") + self._reports(ticker, "annual")
        facts, accepted = _as_facts(reports, SECTIONS[kind])
        found = statements_known_at(ticker, kind, facts, as_of, accepted)
        if not found:
            raise NoData(
                f"Finnhub has no {kind.value} statement of {ticker} filed by {as_of.isoformat()}"
            )
        return found[:periods]

    def fundamentals(self, symbol: str, as_of: datetime) -> Fundamentals:
        """Ratios from the statements filed by ``as_of`` (``statements``) and the close at
        ``as_of`` (``price_at``: the bars' vendors), never Finnhub's own snapshot of today."""
        ticker = symbol.upper()
        found = []
        for kind in StatementKind:
            try:
                found += self.statements(ticker, kind, as_of)
            except NoData:
                continue
        if not found:
            raise NoData(f"Finnhub has no statement of {ticker} filed by {as_of.isoformat()}")
        return compute_fundamentals(ticker, as_of, found, self._price_at(ticker, as_of), None)

    # --- reading Finnhub --------------------------------------------------------------

    def _reports(self, ticker: str, freq: str) -> list[_Report]:
        """``ticker``'s filings of ``freq``, reused for ``FRESH_FOR`` seconds."""
        now = monotonic()
        kept = self._filings.get((ticker, freq))
        if kept is not None and now - kept[0] < FRESH_FOR:
            return kept[1]
        answer = self._get("stock/financials-reported", ticker, symbol=ticker, freq=freq)
        reports = _parsed(_Financials, answer, ticker).data
        self._filings.pop((ticker, freq), None)
        self._filings[(ticker, freq)] = (now, reports)
        while len(self._filings) > KEPT_FILINGS:
            del self._filings[next(iter(self._filings))]
        return reports

    def _get(self, path: str, ticker: str, **params: str) -> Any:
        """One GET once the desk's quotas have room, its JSON, or the router's error."""
        self._gate()
        response = get(
            self._http, "Finnhub", path, params, refused=lambda answer: self._error(answer, ticker)
        )
        return json_of(response, "Finnhub")

    def _error(self, response: httpx.Response, ticker: str) -> Exception:
        """Finnhub's error body (``{"error": ...}``) as the router's error, the key scrubbed."""
        try:
            body = response.json()
            message = str(body.get("error", "")).strip() if isinstance(body, dict) else ""
        except ValueError:
            message = ""
        message = message.replace(self._key, "[the key]")
        status = response.status_code
        said = f"Finnhub answered {status}" + (f": {message}" if message else "")
        if status == 429:
            wait = retry_after(response, DEFAULT_RETRY_AFTER)
            return RateLimited(f"{said} (60 requests a minute, 30 a second)", retry_after=wait)
        if status >= 500:
            return VendorFailure(said)
        if status == 401:
            return NotConfigured(
                f"Finnhub refused the key in {FINNHUB_KEY_ENV}: {said}", fix=KEY_FIX
            )
        if status == 403:
            return NotConfigured(
                f"{said} (an endpoint of a paid plan, which the key in {FINNHUB_KEY_ENV} lacks)",
                fix="Route the kind to another vendor, or use a key whose plan includes it.",
            )
        if status == 404:
            return NoData(f"Finnhub has nothing for {ticker} ({said})")
        return InvalidInput("symbol", f"{said} for {ticker}")


def _local_gate() -> Gate:
    """Finnhub's two windows, counted in this process (a vendor built outside a desk)."""
    minute = LocalQuota(NAME, DEFAULT_QUOTAS[NAME])
    second = LocalQuota(BURST, DEFAULT_QUOTAS[BURST])

    def gate() -> None:
        minute()
        second()

    return gate


def _news_item(ticker: str, story: _Story) -> NewsItem:
    related = {part.strip().upper() for part in story.related.split(",") if part.strip()}
    return NewsItem(
        id=str(story.id),
        published_at=datetime.fromtimestamp(story.published, UTC),
        title=story.headline,
        summary=story.summary,
        source=story.source or "Finnhub",
        url=story.url or None,
        symbols=sorted(related | {ticker}),
    )


def _insider_trade(ticker: str, row: _Trade) -> InsiderTransaction | None:
    """An open-market buy or sell with its shares and price, else None."""
    side = OPEN_MARKET.get(row.transactionCode.strip().upper())
    price = row.transactionPrice or 0.0
    if side is None or not row.change or price <= 0:
        return None
    return InsiderTransaction(
        symbol=ticker,
        insider=row.name.strip() or "unnamed insider",
        role="insider",
        side=side,
        shares=abs(row.change),
        price=price,
        traded_on=row.transactionDate,
        filed_at=_end_of_day(row.filingDate),
    )


def _as_facts(
    reports: list[_Report], section: str
) -> tuple[dict[str, object], dict[str, datetime]]:
    """``section``'s lines of every report as SEC company facts (``{"us-gaap": {concept:
    {"units": {unit: [entry]}}}}``), and each filing's acceptance time in UTC."""
    year_starts = _fiscal_year_starts(reports)
    concepts: dict[str, dict[str, list[dict[str, object]]]] = {}
    accepted: dict[str, datetime] = {}
    for report in reports:
        if report.acceptedDate is not None:
            local = report.acceptedDate.replace(tzinfo=NEW_YORK)
            accepted[report.accessNumber] = local.astimezone(UTC)
        start = _span_start(report, section, year_starts)
        if section != "bs" and start is None:
            continue
        for line in getattr(report.report, section):
            concept, unit = _gaap(line.concept), UNITS.get(line.unit.strip().lower())
            if concept is None or unit is None or line.value is None:
                continue
            concepts.setdefault(concept, {}).setdefault(unit, []).append(
                {
                    "start": start,
                    "end": report.endDate.date(),
                    "val": line.value,
                    "accn": report.accessNumber,
                    "form": report.form,
                    "filed": report.filedDate.date(),
                    "fy": report.year,
                    "fp": "FY" if report.annual else f"Q{report.quarter}",
                }
            )
    facts = {c: {"units": units} for c, units in concepts.items()}
    return {"us-gaap": facts}, accepted


def _fiscal_year_starts(reports: list[_Report]) -> dict[int, date]:
    """Fiscal year → its first day: a 10-K's or a first quarter's ``startDate``, else the day
    after the year before's 10-K ended."""
    after_last_year = {
        r.year + 1: r.endDate.date() + timedelta(days=1) for r in reports if r.annual
    }
    first_quarters = {r.year: r.startDate.date() for r in reports if r.quarter == 1}
    years = {r.year: r.startDate.date() for r in reports if r.annual}
    return after_last_year | first_quarters | years


def _span_start(report: _Report, section: str, year_starts: dict[int, date]) -> date | None:
    """Where ``section``'s values of ``report`` start: an instant for the balance sheet, the
    fiscal year's start for a 10-Q's cash flows (None when unknown), else the report's own."""
    if section == "bs":
        return None
    if section == "cf" and not report.annual:
        return year_starts.get(report.year)
    return report.startDate.date()


def _gaap(concept: str) -> str | None:
    """A us-gaap concept's bare name (Finnhub writes ``us-gaap_Revenues``, older filings a bare
    ``Revenues``); None for a company's own extension (``aapl_...``) or another taxonomy."""
    for prefix in GAAP_PREFIXES:
        if concept.startswith(prefix):
            return concept[len(prefix) :]
    return None if "_" in concept or ":" in concept else concept


def _parsed(model: type[M], answer: Any, ticker: str) -> M:
    """``answer`` read as ``model``, or a ``VendorFailure`` saying Finnhub's shape changed."""
    try:
        return model.model_validate(answer)
    except ValidationError as error:
        raise VendorFailure(
            f"Finnhub answered {ticker} in a shape quantdesk does not know: {error.errors()[0]}"
        ) from None
