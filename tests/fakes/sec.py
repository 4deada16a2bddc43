"""A strict SEC EDGAR stand-in, written from the SEC's documentation of its JSON APIs
("EDGAR Application Programming Interfaces") and of Form 4's XML (the ownershipDocument
schema), with a fictional company's data of our own.

It serves ``/files/company_tickers.json``, ``/submissions/CIK##########.json``,
``/api/xbrl/companyfacts/CIK##########.json`` and filings under ``/Archives/edgar/data/``
(one server stands for both www.sec.gov and data.sec.gov), and the nightly bulk files
``Archives/edgar/daily-index/xbrl/companyfacts.zip`` and ``.../bulkdata/submissions.zip``
(one ``CIK##########.json`` per company, as the APIs answer). As the SEC does, it refuses with
403 a request whose User-Agent names no contact (no e-mail address), answers 429 past 10
requests in a second, and 404 for a CIK or a document it does not have. ``fail_next``
queues a fault for the next request. Every request is recorded.
"""

from __future__ import annotations

import io
import json
import threading
import time
import zipfile
from collections import deque
from collections.abc import Callable
from dataclasses import dataclass, field
from http.server import BaseHTTPRequestHandler
from typing import Any

from tests.fakes.served import GetStandIn, send

UNDECLARED = (
    "<html><body><h1>Your Request Originates from an Undeclared Automated Tool</h1>"
    "<p>To allow for equitable access to all users, SEC reserves the right to limit requests "
    "originating from undeclared automated tools. Please declare your traffic by updating your "
    "user agent to include company specific information.</p></body></html>"
)
RATE_EXCEEDED = "<html><body><h1>Request Rate Threshold Exceeded</h1></body></html>"


@dataclass
class SecCompany:
    """One filer: what its submissions and company facts say, and its filed documents."""

    cik: int
    ticker: str
    name: str
    sic: str
    sic_description: str
    facts: dict[str, Any]
    filings: list[dict[str, str]]
    documents: dict[str, str] = field(default_factory=dict)
    """Path under ``/Archives/edgar/data/<cik>/`` → the document's text."""


class FakeSec(GetStandIn):
    """EDGAR on a loopback port; ``url`` is what both ``QUANTDESK_SEC__DATA_URL`` and
    ``QUANTDESK_SEC__WWW_URL`` take."""

    def __init__(self, companies: list[SecCompany], *, per_second: int = 10) -> None:
        super().__init__()
        self.companies = {company.cik: company for company in companies}
        self.per_second = per_second
        self.requests: list[tuple[str, str]] = []
        self.statuses: deque[int] = deque()
        self._times: deque[float] = deque()
        self._lock = threading.Lock()

    @property
    def url(self) -> str:
        return f"http://127.0.0.1:{self.port}"

    def fail_next(self, status: int) -> None:
        self.statuses.append(status)

    def _get(self, handler: BaseHTTPRequestHandler) -> None:
        """``answer`` takes the raw target as its path: none of the SEC's paths served here takes
        a query, so one with a query is not found, as a path the SEC does not serve."""
        status, body, kind = self.answer(handler.path, handler.headers.get("User-Agent", ""))
        send(handler, status, body if isinstance(body, bytes) else body.encode(), kind, {})

    def answer(self, path: str, agent: str) -> tuple[int, str | bytes, str]:
        """Status, body and content type of one request."""
        html, js = "text/html", "application/json"
        with self._lock:
            self.requests.append((path, agent))
            queued = self.statuses.popleft() if self.statuses else None
            limited = self._over_limit()
        if "@" not in agent:
            return 403, UNDECLARED, html
        if queued is not None:
            return queued, f"<html><body>{queued}</body></html>", html
        if limited:
            return 429, RATE_EXCEEDED, html
        if path == "/files/company_tickers.json":
            rows = {
                str(i): {"cik_str": c.cik, "ticker": c.ticker, "title": c.name}
                for i, c in enumerate(self.companies.values())
            }
            return 200, json.dumps(rows), js
        for prefix, build in (
            ("/submissions/CIK", self._submissions),
            ("/api/xbrl/companyfacts/CIK", self._facts),
        ):
            if path.startswith(prefix) and path.endswith(".json"):
                company = self.companies.get(int(path[len(prefix) : -len(".json")]))
                if company is None:
                    break
                return 200, json.dumps(build(company)), js
        bulk = {
            "/Archives/edgar/daily-index/xbrl/companyfacts.zip": self._facts,
            "/Archives/edgar/daily-index/bulkdata/submissions.zip": self._submissions,
        }
        if path in bulk:
            return 200, self._zipped(bulk[path]), "application/zip"
        if path.startswith("/Archives/edgar/data/"):
            cik, _, rest = path[len("/Archives/edgar/data/") :].partition("/")
            company = self.companies.get(int(cik)) if cik.isdigit() else None
            if company is not None and rest in company.documents:
                return 200, company.documents[rest], "application/xml"
        return 404, "<html><body>Not Found</body></html>", html

    def _over_limit(self) -> bool:
        now = time.monotonic()
        while self._times and now - self._times[0] > 1.0:
            self._times.popleft()
        self._times.append(now)
        return len(self._times) > self.per_second

    def _zipped(self, build: Callable[[SecCompany], dict[str, Any]]) -> bytes:
        """Every company's document as ``CIK##########.json`` in one zip."""
        buffer = io.BytesIO()
        with zipfile.ZipFile(buffer, "w", zipfile.ZIP_DEFLATED) as archive:
            for company in self.companies.values():
                archive.writestr(f"CIK{company.cik:010d}.json", json.dumps(build(company)))
        return buffer.getvalue()

    @staticmethod
    def _submissions(company: SecCompany) -> dict[str, Any]:
        columns = ("accessionNumber", "filingDate", "acceptanceDateTime", "form", "primaryDocument")
        return {
            "cik": f"{company.cik:010d}",
            "name": company.name,
            "sic": company.sic,
            "sicDescription": company.sic_description,
            "tickers": [company.ticker],
            "filings": {
                "recent": {c: [filing[c] for filing in company.filings] for c in columns},
                "files": [],
            },
        }

    @staticmethod
    def _facts(company: SecCompany) -> dict[str, Any]:
        return {"cik": company.cik, "entityName": company.name, "facts": company.facts}
