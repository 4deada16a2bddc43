"""A strict Finnhub stand-in, written from Finnhub's OpenAPI file (``finnhub.io/static/
swagger.json``; its copy in Finnhub's Go client, ``api/openapi.yaml``) and the error bodies
its maintainers quote, with invented company data of our own (``sample_company``).

It serves, under ``/api/v1``, the three free endpoints quantdesk reads, and answers the paid
ones (``/stock/candle``, ``/stock/social-sentiment``, ``/stock/financials``) as Finnhub answers a
free key: 403 ``{"error": "You don't have access to this resource."}``.

- The key is taken as Finnhub takes it, from the ``X-Finnhub-Token`` header or the ``token``
  query parameter; none is 401 ``{"error": "Please use an API key."}``, another one 401
  ``{"error": "Invalid API key."}``.
- Past ``per_second`` (30) requests in a second or ``per_minute`` (60) in a minute, 429
  ``{"error": "API limit reached. Please try again later. Remaining Limit: 0"}`` (every arrival
  counts, as Finnhub counts them).
- ``/company-news``: ``symbol``, ``from`` and ``to`` (``YYYY-MM-DD``) are required; articles
  whose day (UTC) is in the range, newest first, and none published more than a year before
  ``today`` (the free tier's history), so an older range answers ``[]``.
- ``/stock/insider-transactions``: ``symbol`` required, ``from``/``to`` optional; the spec does
  not say which date they bound: here the transaction's, at most 100 rows, newest first.
- ``/stock/financials-reported``: ``symbol`` (or ``cik``) required, ``freq`` ``annual`` (the
  default: 10-Ks) or ``quarterly`` (10-Qs: Finnhub has no fourth-quarter report),
  ``from``/``to`` bounding the period's end. Each line as ``{concept, unit, label, value}``
  with ``us-gaap_`` concepts; times as ``%Y-%m-%d %H:%M:%S``, acceptance in New York time.

Finnhub does not document its answer to a malformed request; here it is 422 with an error
body, so a test sees the vendor never sends one. A parameter the endpoint does not take is
refused too (Finnhub ignores it, so a misspelt ``form`` for ``from`` would silently widen the
answer). ``fail_next`` queues a fault for the next request (a status with Finnhub's body, a
slow answer, a dropped connection). Every request is recorded with its parameters and whether
the key came in the header.
"""

from __future__ import annotations

import time
from collections import deque
from dataclasses import dataclass, field
from datetime import UTC, date, datetime, timedelta
from http.server import BaseHTTPRequestHandler
from typing import Any

from tests.fakes.served import Fault, JsonStandIn  # the tests take Fault from here

KEY = "cq7fakekey0finnhub0a"
NO_KEY = "Please use an API key."
BAD_KEY = "Invalid API key."
PREMIUM = "You don't have access to this resource."
LIMIT_REACHED = "API limit reached. Please try again later. Remaining Limit: 0"
FREE_HISTORY = timedelta(days=365)
INSIDER_ROWS = 100
PAID = frozenset({"/stock/candle", "/stock/social-sentiment", "/stock/financials"})
PARAMS = {
    "/company-news": ({"symbol", "from", "to"}, set()),
    "/stock/insider-transactions": ({"symbol"}, {"from", "to"}),
    "/stock/financials-reported": (set(), {"symbol", "cik", "accessNumber", "freq", "from", "to"}),
}
"""Each served endpoint's required and optional parameters, as the spec lists them."""
DATE_PARAMS = ("from", "to")
STAMP = "%Y-%m-%d %H:%M:%S"


@dataclass(frozen=True)
class Story:
    """One company-news article."""

    id: int
    published: datetime
    headline: str
    summary: str = ""
    source: str = "Reuters"
    related: str = ""

    def row(self, symbol: str) -> dict[str, Any]:
        return {
            "category": "company",
            "datetime": int(self.published.timestamp()),
            "headline": self.headline,
            "id": self.id,
            "image": "",
            "related": self.related or symbol,
            "source": self.source,
            "summary": self.summary,
            "url": f"https://news.example.com/{self.id}",
        }


@dataclass(frozen=True)
class Trade:
    """One row of a Form 4, as Finnhub lists it: ``change`` signed, ``share`` held after."""

    name: str
    change: int
    share: int
    code: str
    price: float
    traded: date
    filed: date

    def row(self, symbol: str) -> dict[str, Any]:
        return {
            "name": self.name,
            "share": self.share,
            "change": self.change,
            "filingDate": self.filed.isoformat(),
            "transactionDate": self.traded.isoformat(),
            "transactionCode": self.code,
            "transactionPrice": self.price,
            "symbol": symbol,
        }


@dataclass(frozen=True)
class Filing:
    """One 10-Q or 10-K as filed; its sections map a us-gaap concept to a value (EPS in USD per
    share, share counts in shares, the rest in USD). ``accepted`` is New York wall time."""

    access_number: str
    form: str
    year: int
    quarter: int
    start: date
    end: date
    filed: date
    accepted: datetime | None
    ic: dict[str, float] = field(default_factory=dict)
    bs: dict[str, float] = field(default_factory=dict)
    cf: dict[str, float] = field(default_factory=dict)

    @property
    def annual(self) -> bool:
        return self.form.startswith("10-K")

    def row(self, symbol: str, cik: str) -> dict[str, Any]:
        def lines(section: dict[str, float]) -> list[dict[str, Any]]:
            return [
                {"concept": f"us-gaap_{concept}", "unit": _unit(concept), "label": concept,
                 "value": value}
                for concept, value in section.items()
            ]  # fmt: skip

        return {
            "accessNumber": self.access_number,
            "symbol": symbol,
            "cik": cik,
            "year": self.year,
            "quarter": self.quarter,
            "form": self.form,
            "startDate": f"{self.start.isoformat()} 00:00:00",
            "endDate": f"{self.end.isoformat()} 00:00:00",
            "filedDate": f"{self.filed.isoformat()} 00:00:00",
            "acceptedDate": self.accepted.strftime(STAMP) if self.accepted else "",
            "report": {"bs": lines(self.bs), "ic": lines(self.ic), "cf": lines(self.cf)},
        }


@dataclass
class FinnhubCompany:
    """What Finnhub holds of one company."""

    symbol: str
    cik: str
    news: list[Story] = field(default_factory=list)
    trades: list[Trade] = field(default_factory=list)
    filings: list[Filing] = field(default_factory=list)


@dataclass(frozen=True)
class Request:
    """One request as it arrived: path under ``/api/v1``, query, whether the key was a header."""

    path: str
    params: dict[str, str]
    key_in_header: bool


class FakeFinnhub(JsonStandIn[Fault]):
    """Finnhub on a loopback port; ``base_url`` is what ``QUANTDESK_FINNHUB__BASE_URL`` takes.
    ``today`` is the free tier's "now" (its year of news ends there)."""

    root = "/api/v1"
    content_type = "application/json; charset=utf-8"

    def __init__(
        self,
        companies: list[FinnhubCompany],
        *,
        today: date | None = None,
        per_second: int = 30,
        per_minute: int = 60,
        minute: float = 60.0,
    ) -> None:
        super().__init__()
        self.minute = minute  # a bench may play Finnhub's minute faster
        self.companies = {company.symbol: company for company in companies}
        self.today = today or datetime.now(UTC).date()
        self.per_second = per_second
        self.per_minute = per_minute
        self.requests: list[Request] = []
        self._times: deque[float] = deque()

    def answer(
        self, path: str, params: dict[str, str], handler: BaseHTTPRequestHandler
    ) -> tuple[int, object]:
        """The status and JSON body for one request (0: the connection was dropped)."""
        header_key = handler.headers.get("X-Finnhub-Token")
        endpoint = path.removeprefix("/api/v1") if path.startswith("/api/v1/") else path
        with self._lock:
            self.requests.append(Request(endpoint, dict(params), header_key is not None))
            fault = self._next_fault()
            limited = self._over_limit()
        if faulted := self._faulted(fault, handler, lambda _, message: {"error": message}):
            return faulted
        if limited:
            return 429, {"error": LIMIT_REACHED}
        key = header_key or params.pop("token", None)
        if not key:
            return 401, {"error": NO_KEY}
        if key != KEY:
            return 401, {"error": BAD_KEY}
        if endpoint in PAID:
            return 403, {"error": PREMIUM}
        if endpoint not in PARAMS:
            return 404, {"error": "Not found"}
        problem = _request_problem(endpoint, params)
        if problem:
            return 422, {"error": problem}
        if endpoint == "/company-news":
            return 200, self._news(params)
        if endpoint == "/stock/insider-transactions":
            return 200, self._trades(params)
        return 200, self._financials(params)

    def _news(self, params: dict[str, str]) -> list[dict[str, Any]]:
        company = self.companies.get(params["symbol"].upper())
        first = max(date.fromisoformat(params["from"]), self.today - FREE_HISTORY)
        last = date.fromisoformat(params["to"])
        stories = [
            story
            for story in (company.news if company else [])
            if first <= story.published.astimezone(UTC).date() <= last
        ]
        stories.sort(key=lambda story: story.published, reverse=True)
        return [story.row(params["symbol"].upper()) for story in stories]

    def _trades(self, params: dict[str, str]) -> dict[str, Any]:
        symbol = params["symbol"].upper()
        company = self.companies.get(symbol)
        first = date.fromisoformat(params.get("from", date.min.isoformat()))
        last = date.fromisoformat(params.get("to", date.max.isoformat()))
        trades = [t for t in (company.trades if company else []) if first <= t.traded <= last]
        trades.sort(key=lambda trade: (trade.filed, trade.traded), reverse=True)
        return {"data": [t.row(symbol) for t in trades[:INSIDER_ROWS]], "symbol": symbol}

    def _financials(self, params: dict[str, str]) -> dict[str, Any]:
        company = next(
            (
                c
                for c in self.companies.values()
                if c.symbol == params.get("symbol", "").upper() or c.cik == params.get("cik")
            ),
            None,
        )
        if company is None:
            return {"cik": "", "data": [], "symbol": ""}
        annual = params.get("freq", "annual") == "annual"
        first = date.fromisoformat(params.get("from", date.min.isoformat()))
        last = date.fromisoformat(params.get("to", date.max.isoformat()))
        filings = [
            f
            for f in company.filings
            if f.annual == annual
            and first <= f.end <= last
            and params.get("accessNumber", f.access_number) == f.access_number
        ]
        filings.sort(key=lambda filing: (filing.end, filing.filed), reverse=True)
        rows = [filing.row(company.symbol, company.cik) for filing in filings]
        return {"cik": company.cik, "data": rows, "symbol": company.symbol}

    def _over_limit(self) -> bool:
        now = time.monotonic()
        while self._times and now - self._times[0] > self.minute:
            self._times.popleft()
        self._times.append(now)
        last_second = sum(1 for at in self._times if now - at <= 1)
        return len(self._times) > self.per_minute or last_second > self.per_second


def _request_problem(endpoint: str, params: dict[str, str]) -> str:
    """Why the spec refuses these parameters, or "" when it takes them."""
    required, optional = PARAMS[endpoint]
    missing = sorted(name for name in required if not params.get(name))
    if missing:
        return f"Missing required parameter: {missing[0]}"
    unknown = sorted(set(params) - required - optional)
    if unknown:
        return f"Unknown parameter: {unknown[0]}"
    if endpoint == "/stock/financials-reported":
        if not params.get("symbol") and not params.get("cik"):
            return "Missing required parameter: symbol or cik"
        if params.get("freq", "annual") not in ("annual", "quarterly"):
            return "freq must be annual or quarterly"
    for name in DATE_PARAMS:
        if name in params and not _is_day(params[name]):
            return f"Wrong date format for {name}. Use YYYY-MM-DD."
    return ""


def _is_day(text: str) -> bool:
    """Whether ``text`` is a ``YYYY-MM-DD`` day (``date.fromisoformat`` takes ``YYYYMMDD`` too)."""
    try:
        date.fromisoformat(text)
    except ValueError:
        return False
    return len(text) == 10


def _unit(concept: str) -> str:
    if concept.startswith("EarningsPerShare"):
        return "usd/shares"
    return "shares" if concept.endswith("SharesOutstanding") else "usd"


def _ny(day: date, hour: int, minute: int) -> datetime:
    """A New York wall time, as Finnhub writes an acceptance."""
    return datetime(day.year, day.month, day.day, hour, minute)


def sample_company(symbol: str = "AAPL", cik: str = "320193") -> FinnhubCompany:
    """A company of invented, realistic figures for fiscal 2023 (a year ending on the last
    Saturday of September, as Apple's does): three 10-Qs, a 10-K, an amended second quarter,
    insider rows of several kinds, and news around the first quarter's report."""
    fy_start = date(2022, 9, 25)
    q1, q2, q3, fy = date(2022, 12, 31), date(2023, 4, 1), date(2023, 7, 1), date(2023, 9, 30)
    filings = [
        Filing(
            "0000320193-23-000006", "10-Q", 2023, 1, fy_start, q1, date(2023, 2, 3),
            _ny(date(2023, 2, 2), 18, 1),
            ic={"RevenueFromContractWithCustomerExcludingAssessedTax": 117.2e9,
                "GrossProfit": 50.3e9, "OperatingIncomeLoss": 36.0e9,
                "NetIncomeLoss": 30.0e9, "EarningsPerShareDiluted": 1.88},
            bs={"Assets": 346.7e9, "Liabilities": 290.0e9, "StockholdersEquity": 56.7e9,
                "CashAndCashEquivalentsAtCarryingValue": 20.5e9,
                "CommonStockSharesOutstanding": 15.84e9},
            cf={"NetCashProvidedByUsedInOperatingActivities": 34.0e9,
                "PaymentsToAcquirePropertyPlantAndEquipment": 3.8e9},
        ),
        Filing(
            "0000320193-23-000064", "10-Q", 2023, 2, date(2023, 1, 1), q2, date(2023, 5, 5),
            _ny(date(2023, 5, 4), 18, 3),
            ic={"RevenueFromContractWithCustomerExcludingAssessedTax": 94.8e9,
                "GrossProfit": 41.0e9, "OperatingIncomeLoss": 28.3e9,
                "NetIncomeLoss": 24.2e9, "EarningsPerShareDiluted": 1.52},
            bs={"Assets": 332.2e9, "Liabilities": 270.0e9, "StockholdersEquity": 62.2e9,
                "CashAndCashEquivalentsAtCarryingValue": 24.7e9,
                "CommonStockSharesOutstanding": 15.72e9},
            cf={"NetCashProvidedByUsedInOperatingActivities": 62.6e9,
                "PaymentsToAcquirePropertyPlantAndEquipment": 6.7e9},
        ),
        # The second quarter restated: revenue and net income lower.
        Filing(
            "0000320193-23-000080", "10-Q/A", 2023, 2, date(2023, 1, 1), q2, date(2023, 6, 16),
            _ny(date(2023, 6, 15), 16, 10),
            ic={"RevenueFromContractWithCustomerExcludingAssessedTax": 94.5e9,
                "GrossProfit": 40.8e9, "OperatingIncomeLoss": 28.1e9,
                "NetIncomeLoss": 24.0e9, "EarningsPerShareDiluted": 1.51},
        ),
        Filing(
            "0000320193-23-000077", "10-Q", 2023, 3, date(2023, 4, 2), q3, date(2023, 8, 4),
            _ny(date(2023, 8, 3), 18, 4),
            ic={"RevenueFromContractWithCustomerExcludingAssessedTax": 81.8e9,
                "GrossProfit": 36.4e9, "OperatingIncomeLoss": 23.0e9,
                "NetIncomeLoss": 19.9e9, "EarningsPerShareDiluted": 1.26},
            bs={"Assets": 335.0e9, "Liabilities": 274.8e9, "StockholdersEquity": 60.2e9,
                "CashAndCashEquivalentsAtCarryingValue": 28.4e9,
                "CommonStockSharesOutstanding": 15.65e9},
            cf={"NetCashProvidedByUsedInOperatingActivities": 88.9e9,
                "PaymentsToAcquirePropertyPlantAndEquipment": 8.8e9},
        ),
        # The year; no acceptance time here, so it counts from the end of its filing day.
        Filing(
            "0000320193-23-000106", "10-K", 2023, 0, fy_start, fy, date(2023, 11, 3), None,
            ic={"RevenueFromContractWithCustomerExcludingAssessedTax": 383.3e9,
                "GrossProfit": 169.1e9, "OperatingIncomeLoss": 114.3e9,
                "NetIncomeLoss": 97.0e9, "EarningsPerShareDiluted": 6.13},
            bs={"Assets": 352.6e9, "Liabilities": 290.4e9, "StockholdersEquity": 62.1e9,
                "CashAndCashEquivalentsAtCarryingValue": 30.0e9,
                "CommonStockSharesOutstanding": 15.55e9},
            cf={"NetCashProvidedByUsedInOperatingActivities": 110.5e9,
                "PaymentsToAcquirePropertyPlantAndEquipment": 11.0e9},
        ),
    ]  # fmt: skip
    trades = [
        Trade("Jordan Avery", -50_000, 3_280_000, "S", 171.25, date(2023, 4, 3), date(2023, 4, 5)),
        Trade("Morgan Lee", 10_000, 110_000, "P", 165.10, date(2023, 4, 4), date(2023, 4, 6)),
        # A grant and an exercise: no view of the insider's.
        Trade("Morgan Lee", 25_000, 135_000, "A", 0.0, date(2023, 4, 1), date(2023, 4, 4)),
        Trade("Jordan Avery", 80_000, 3_360_000, "M", 0.0, date(2023, 3, 30), date(2023, 4, 3)),
    ]  # fmt: skip
    news = [
        Story(9001, datetime(2023, 2, 2, 21, 30, tzinfo=UTC), f"{symbol} first-quarter sales "
              "beat estimates", "Services revenue set a record.", "Reuters"),
        Story(9002, datetime(2023, 2, 3, 14, 0, tzinfo=UTC), f"Analysts lift {symbol} targets "
              "after results", "Three brokers raised their targets.", "MarketWatch"),
        Story(9003, datetime(2023, 2, 3, 20, 45, tzinfo=UTC), f"{symbol} supplier warns on "
              "March quarter", "A key supplier cut its outlook.", "Bloomberg",
              f"{symbol},TSM"),
    ]  # fmt: skip
    return FinnhubCompany(symbol, cik, news=news, trades=trades, filings=filings)
