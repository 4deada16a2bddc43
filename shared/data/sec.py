"""SEC EDGAR: statements, fundamentals and insider trades as filed, and the company list.

A thin client of our own over the SEC's JSON APIs, not ``edgartools``: we need four
endpoints, an explicit timeout and no retries (Temporal retries the tool activity), our own
mapping of every fault to the router's kinds, and a base URL a stand-in can take; edgartools
brings a cache, retries and a rate limiter of its own, and reads the identity from its own
global state. Its bulk-file readers are not needed either: the JSON is the same.

- ``www.sec.gov/files/company_tickers.json``: ticker → CIK and name (today's list, so the
  universe it gives is now-only: a list of today has no company that has since died);
- ``data.sec.gov/submissions/CIK##########.json``: the SIC code (→ sector), and the recent
  filings with their acceptance times (when a filing became public) and primary documents;
- ``data.sec.gov/api/xbrl/companyfacts/CIK##########.json``: every reported value with its
  filing, read by ``shared.data.sec_facts`` as known at ``as_of``;
- a Form 4's XML under ``www.sec.gov/Archives/edgar/data/``: an insider's trades, dated by
  the filing's acceptance.

With `quantdesk data sec-mirror`, the ticker list, the facts and the submissions are read from
the SEC's bulk files in the data directory instead (``shared.data.sec_mirror``).

The SEC refuses (403) a request whose User-Agent names no contact, so one is required
(``EDGAR_IDENTITY``: "Name email@example.com"), and allows 10 requests a second: each request
first passes the desk's quota (``gate``, ``shared.data.quota``).
"""

from __future__ import annotations

import time
from collections.abc import Callable
from datetime import UTC, datetime, timedelta
from functools import partial
from typing import Any
from xml.etree import ElementTree

import httpx

from shared.config import DEFAULT_QUOTAS, EDGAR_IDENTITY_ENV, SecSettings
from shared.data.contracts import (
    DataKind,
    DataVendor,
    Fundamentals,
    InsiderTransaction,
    Listing,
    Reach,
    Sector,
    Statement,
    StatementKind,
)
from shared.data.figures import compute_fundamentals
from shared.data.http_vendor import get, json_of, retry_after
from shared.data.quota import Gate, LocalQuota
from shared.data.sec_facts import statements_known_at
from shared.data.sec_mirror import SecMirror
from shared.errors import NoData, NotConfigured, RateLimited, VendorFailure

NAME = "sec"
IDENTITY_FIX = (
    f"Set {EDGAR_IDENTITY_ENV} to who calls, e.g. 'Jane Doe jane@example.com' (the SEC's "
    "rule for automated access), or route the kind to another vendor."
)
FRESH_FOR = 600.0
"""Seconds a company's ticker list, filings and facts are reused in one process: a running
desk sees a new filing within ten minutes, and a run reads each once, not once per tool call
(reads still filter them by ``as_of``)."""
KEPT_DOCUMENTS = 32
"""At most this many documents kept (a large filer's facts parse to tens of megabytes)."""
DEFAULT_RETRY_AFTER = timedelta(minutes=10)
"""The SEC blocks a client past its rate for about ten minutes and names no wait."""
FORM4_LIMIT = 20
"""Form 4 filings read for one insider window, the newest first (one request each)."""
OPEN_MARKET = {"P": "buy", "S": "sell"}
"""Form 4 transaction codes of open-market purchases and sales; grants, exercises and gifts
say nothing of an insider's view."""

SIC_SECTORS: tuple[tuple[range, Sector], ...] = (
    (range(100, 1000), Sector.CONSUMER_STAPLES),
    (range(1000, 1300), Sector.MATERIALS),
    (range(1300, 1400), Sector.ENERGY),
    (range(1400, 1500), Sector.MATERIALS),
    (range(1500, 1800), Sector.INDUSTRIALS),
    (range(2000, 2200), Sector.CONSUMER_STAPLES),
    (range(2200, 2800), Sector.CONSUMER_DISCRETIONARY),
    (range(2800, 2830), Sector.MATERIALS),
    (range(2830, 2840), Sector.HEALTH_CARE),
    (range(2840, 2850), Sector.CONSUMER_STAPLES),
    (range(2850, 2900), Sector.MATERIALS),
    (range(2900, 3000), Sector.ENERGY),
    (range(3000, 3300), Sector.MATERIALS),
    (range(3300, 3500), Sector.MATERIALS),
    (range(3500, 3570), Sector.INDUSTRIALS),
    (range(3570, 3580), Sector.INFORMATION_TECHNOLOGY),
    (range(3580, 3600), Sector.INDUSTRIALS),
    (range(3600, 3660), Sector.INDUSTRIALS),
    (range(3660, 3700), Sector.INFORMATION_TECHNOLOGY),
    (range(3700, 3720), Sector.CONSUMER_DISCRETIONARY),
    (range(3720, 3800), Sector.INDUSTRIALS),
    (range(3800, 3840), Sector.INFORMATION_TECHNOLOGY),
    (range(3840, 3860), Sector.HEALTH_CARE),
    (range(3860, 4000), Sector.CONSUMER_DISCRETIONARY),
    (range(4000, 4800), Sector.INDUSTRIALS),
    (range(4800, 4900), Sector.COMMUNICATION_SERVICES),
    (range(4900, 5000), Sector.UTILITIES),
    (range(5000, 5400), Sector.CONSUMER_DISCRETIONARY),
    (range(5400, 5500), Sector.CONSUMER_STAPLES),
    (range(5500, 6000), Sector.CONSUMER_DISCRETIONARY),
    (range(6000, 6500), Sector.FINANCIALS),
    (range(6500, 6600), Sector.REAL_ESTATE),
    (range(6600, 6798), Sector.FINANCIALS),
    (range(6798, 6799), Sector.REAL_ESTATE),
    (range(6799, 7000), Sector.FINANCIALS),
    (range(7000, 7370), Sector.CONSUMER_DISCRETIONARY),
    (range(7370, 7380), Sector.INFORMATION_TECHNOLOGY),
    (range(7380, 8000), Sector.INDUSTRIALS),
    (range(8000, 8100), Sector.HEALTH_CARE),
    (range(8100, 10000), Sector.INDUSTRIALS),
)
"""SEC SIC code ranges → the nearest GICS sector: a coarse map (the two schemes cut
industries differently), used only where no better sector is known."""

PriceAt = Callable[[str, datetime], float | None]
"""The close of a symbol at ``as_of`` (the as-traded price a ratio needs), or None."""


def sector_of(sic: str | None) -> Sector | None:
    """The sector ``SIC_SECTORS`` maps an SIC code to, None for none or an unknown one."""
    if not sic or not sic.isdigit():
        return None
    code = int(sic)
    return next((sector for codes, sector in SIC_SECTORS if code in codes), None)


class SecVendor(DataVendor):
    """Statements, fundamentals, insider trades and today's company list from SEC EDGAR."""

    name = NAME
    kinds = frozenset(
        {DataKind.STATEMENTS, DataKind.FUNDAMENTALS, DataKind.INSIDER, DataKind.UNIVERSE}
    )

    def __init__(
        self,
        settings: SecSettings,
        price_at: PriceAt = lambda symbol, as_of: None,
        gate: Gate | None = None,
        mirror: SecMirror | None = None,
        transport: httpx.BaseTransport | None = None,
    ) -> None:
        if not settings.identity or "@" not in settings.identity:
            raise NotConfigured(
                f"the SEC refuses clients that name no contact and {EDGAR_IDENTITY_ENV} is "
                f"{'not set' if not settings.identity else 'no contact (no e-mail address)'}",
                fix=IDENTITY_FIX,
            )
        self._http = httpx.Client(
            headers={"User-Agent": settings.identity, "Accept-Encoding": "gzip, deflate"},
            timeout=settings.timeout_seconds,
            transport=transport,
        )
        self._data_url = settings.data_url.rstrip("/")
        self._www_url = settings.www_url.rstrip("/")
        self._price_at = price_at
        self._gate = gate or LocalQuota(NAME, DEFAULT_QUOTAS[NAME])
        self._mirror = mirror
        self._documents: dict[str, tuple[float, Any]] = {}

    def reach(self, kind: DataKind) -> Reach:
        """Filings are dated, so every kind answers for the past but the company list, which
        is today's."""
        if kind is DataKind.UNIVERSE:
            return Reach(timedelta(days=7), "the SEC's ticker list is today's")
        return Reach()

    # --- the DataVendor interface -----------------------------------------------------

    def universe(self, as_of: datetime) -> list[Listing]:
        """Every company of today's ticker list (no sector: that takes a call per company)."""
        return [
            Listing(symbol=ticker, name=name) for ticker, (_cik, name) in self._tickers().items()
        ]

    def statements(
        self, symbol: str, kind: StatementKind, as_of: datetime, periods: int = 4
    ) -> list[Statement]:
        """The last ``periods`` quarterly statements of ``kind`` as known at ``as_of``."""
        found = self._statements(symbol, StatementKind(kind), as_of)
        if not found:
            raise NoData(f"the SEC has no {kind} statement of {symbol} filed by {as_of}")
        return found[:periods]

    def fundamentals(self, symbol: str, as_of: datetime) -> Fundamentals:
        """Ratios from the statements known at ``as_of`` and the close at ``as_of``."""
        statements = [s for kind in StatementKind for s in self._statements(symbol, kind, as_of)]
        if not statements:
            raise NoData(f"the SEC has no statement of {symbol} filed by {as_of}")
        ticker = symbol.upper()
        return compute_fundamentals(
            ticker, as_of, statements, self._price_at(ticker, as_of), self._listing(ticker)
        )

    def insider(self, symbol: str, as_of: datetime, window: timedelta) -> list[InsiderTransaction]:
        """Open-market buys and sells of Form 4s accepted in ``(as_of - window, as_of]``,
        newest first."""
        ticker = symbol.upper()
        filings = [
            f
            for f in self._recent_filings(ticker)
            if f["form"] == "4" and as_of - window < f["accepted"] <= as_of
        ]
        trades = [
            trade
            for filing in sorted(filings, key=lambda f: f["accepted"], reverse=True)[:FORM4_LIMIT]
            for trade in self._form4(ticker, filing)
        ]
        if not trades:
            raise NoData(
                f"no open-market Form 4 trade of {ticker} accepted in the {window} to {as_of}"
            )
        return trades

    # --- reading EDGAR ----------------------------------------------------------------

    def _statements(self, symbol: str, kind: StatementKind, as_of: datetime) -> list[Statement]:
        ticker = symbol.upper()
        cik = self._cik(ticker)
        accepted = {f["accession"]: f["accepted"] for f in self._recent_filings(ticker)}
        url = f"{self._data_url}/api/xbrl/companyfacts/CIK{cik:010d}.json"
        mirrored = partial(self._mirror.facts, cik) if self._mirror else None
        facts = self._json(url, f"company facts of CIK {cik}", mirrored).get("facts", {})
        return statements_known_at(ticker, kind, facts, as_of, accepted)

    def _tickers(self) -> dict[str, tuple[int, str]]:
        """Ticker → (CIK, name)."""
        url = f"{self._www_url}/files/company_tickers.json"
        rows = self._json(url, "the ticker list", self._mirror.tickers if self._mirror else None)
        return {
            str(row["ticker"]).upper(): (int(row["cik_str"]), str(row["title"]))
            for row in rows.values()
        }

    def _cik(self, ticker: str) -> int:
        found = self._tickers().get(ticker)
        if found is None:
            raise NoData(f"the SEC's ticker list has no {ticker}")
        return found[0]

    def _listing(self, ticker: str) -> Listing:
        submissions = self._submissions(self._cik(ticker))
        return Listing(
            symbol=ticker,
            name=str(submissions.get("name") or ticker),
            sector=sector_of(submissions.get("sic")),
            industry=submissions.get("sicDescription") or None,
        )

    def _submissions(self, cik: int) -> dict[str, Any]:
        url = f"{self._data_url}/submissions/CIK{cik:010d}.json"
        mirrored = partial(self._mirror.submissions, cik) if self._mirror else None
        return dict(self._json(url, f"filings of CIK {cik}", mirrored))

    def _recent_filings(self, ticker: str) -> list[dict[str, Any]]:
        """The recent filings of ``ticker``'s company: accession, form, acceptance, document."""
        cik = self._cik(ticker)
        recent = self._submissions(cik).get("filings", {}).get("recent", {})
        columns = ("accessionNumber", "form", "acceptanceDateTime", "primaryDocument")
        rows = zip(*(recent.get(column, []) for column in columns), strict=False)
        return [
            {
                "cik": cik,
                "accession": accession,
                "form": form,
                "accepted": datetime.fromisoformat(accepted.replace("Z", "+00:00")).astimezone(UTC),
                "document": document,
            }
            for accession, form, accepted, document in rows
        ]

    def _form4(self, ticker: str, filing: dict[str, Any]) -> list[InsiderTransaction]:
        """The open-market trades of one Form 4 (its raw XML, not the rendered page)."""
        document = str(filing["document"]).split("/")[-1]
        folder = str(filing["accession"]).replace("-", "")
        url = f"{self._www_url}/Archives/edgar/data/{filing['cik']}/{folder}/{document}"
        text = self._get(url, f"Form 4 {filing['accession']}").text
        try:
            return parse_form4(ticker, text, filing["accepted"])
        except ElementTree.ParseError as error:
            raise VendorFailure(
                f"the SEC's Form 4 {filing['accession']} is not XML ({error})"
            ) from None

    def _json(self, url: str, what: str, mirrored: Callable[[], Any | None] | None = None) -> Any:
        """The JSON at ``url`` (from the mirror when it has it), reused for ``FRESH_FOR``
        seconds: a mirrored company's facts are parsed once, not once per tool call."""
        now = time.monotonic()
        kept = self._documents.get(url)
        if kept is not None and now - kept[0] < FRESH_FOR:
            return kept[1]
        found = mirrored() if mirrored is not None else None
        document = found if found is not None else json_of(self._get(url, what), "the SEC")
        self._documents.pop(url, None)
        self._documents[url] = (now, document)
        while len(self._documents) > KEPT_DOCUMENTS:
            del self._documents[next(iter(self._documents))]
        return document

    def _get(self, url: str, what: str) -> httpx.Response:
        """One GET, once the desk's quota has room for it."""
        self._gate()
        return get(self._http, "the SEC", url, refused=lambda response: _error(response, what))


def parse_form4(ticker: str, text: str, accepted: datetime) -> list[InsiderTransaction]:
    """A Form 4's open-market trades in non-derivative securities."""
    root = ElementTree.fromstring(text)
    owner = root.findtext("reportingOwner/reportingOwnerId/rptOwnerName", "").strip()
    relation = root.find("reportingOwner/reportingOwnerRelationship")
    role = _role(relation) if relation is not None else "insider"
    trades = []
    for row in root.iterfind("nonDerivativeTable/nonDerivativeTransaction"):
        side = OPEN_MARKET.get(row.findtext("transactionCoding/transactionCode", "").strip())
        shares = _number(row.findtext("transactionAmounts/transactionShares/value"))
        price = _number(row.findtext("transactionAmounts/transactionPricePerShare/value"))
        traded = row.findtext("transactionDate/value", "").strip()[:10]
        if side is None or not shares or not price or not traded:
            continue
        trades.append(
            InsiderTransaction(
                symbol=ticker,
                insider=owner or "unnamed insider",
                role=role,
                side=side,
                shares=shares,
                price=price,
                traded_on=datetime.fromisoformat(traded).date(),
                filed_at=accepted,
            )
        )
    return trades


def _role(relation: ElementTree.Element) -> str:
    title = relation.findtext("officerTitle", "").strip()
    if title:
        return title
    flags = {"isDirector": "director", "isOfficer": "officer", "isTenPercentOwner": "10% owner"}
    held = [
        name for tag, name in flags.items() if relation.findtext(tag, "").strip() in ("1", "true")
    ]
    return ", ".join(held) or "insider"


def _number(text: str | None) -> float | None:
    try:
        return float(text) if text else None
    except ValueError:
        return None


def _error(response: httpx.Response, what: str) -> Exception:
    said = f"the SEC answered {response.status_code} for the {what}"
    if response.status_code == 403:
        return NotConfigured(
            f"{said}: it refuses a client whose User-Agent names no contact", fix=IDENTITY_FIX
        )
    if response.status_code == 429:
        wait = retry_after(response, DEFAULT_RETRY_AFTER)
        return RateLimited(f"{said}: past its 10 requests a second", retry_after=wait)
    if response.status_code == 404:
        return NoData(f"{said}: it has none")
    return VendorFailure(said)
