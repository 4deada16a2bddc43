"""A strict FRED / ALFRED stand-in, written from FRED's API documentation.

It serves ``fred/series`` and ``fred/series/observations`` as FRED does:

- a request without ``api_key``, or with one that is not a 32-character lower-case
  alphanumeric string, or not registered, gets 400 with FRED's body
  (``{"error_code": 400, "error_message": "Bad Request.  The value for variable api_key ..."}``);
- ``file_type=json`` is required here (FRED's default is XML, which quantdesk never reads);
- ``realtime_start``/``realtime_end`` select vintages: each observation is answered in every
  version current during the period (a closed period), with the days it was current clipped
  to the period (``realtime_start`` its publication day or the period's start, whichever is
  later; ``realtime_end`` the day before its revision, ``9999-12-31`` for the one still
  current, or the period's end); both default to today;
- an unknown series is 400 "The series does not exist."; ``sort_order`` and ``limit`` apply;
- past ``per_minute`` requests in a rolling minute, 429 "Too Many Requests.  Exceeded Rate
  Limit"; a fault queued with ``fail_next`` answers the next request instead (a status with
  FRED's body, a slow answer, a dropped connection).

Every request is recorded (path and parameters), so a test can count the vendor's calls.
"""

from __future__ import annotations

import time
from collections import deque
from dataclasses import dataclass, field
from datetime import date
from http.server import BaseHTTPRequestHandler

from tests.fakes.served import Fault, JsonStandIn  # the tests take Fault from here

KEY = "0123456789abcdef0123456789abcdef"
FOREVER = date(9999, 12, 31)


@dataclass(frozen=True)
class Version:
    """One observation's value as published on ``published`` (a vintage day)."""

    observed: date
    published: date
    value: str


@dataclass
class FredSeries:
    """A series: its description and every published version of every observation."""

    title: str
    units: str
    versions: list[Version] = field(default_factory=list)


class FakeFred(JsonStandIn[Fault]):
    """FRED on a loopback port; ``base_url`` is what ``QUANTDESK_FRED__BASE_URL`` takes."""

    root = "/fred"

    def __init__(self, series: dict[str, FredSeries], *, per_minute: int = 120) -> None:
        super().__init__()
        self.series = series
        self.per_minute = per_minute
        self.requests: list[tuple[str, dict[str, str]]] = []
        self.arrivals: list[float] = []
        """When each request arrived (``time.monotonic``)."""
        self._times: deque[float] = deque()

    def answer(
        self, path: str, params: dict[str, str], handler: BaseHTTPRequestHandler
    ) -> tuple[int, object]:
        """The status and JSON body for one request (0: the connection was dropped)."""
        with self._lock:
            self.requests.append((path, params))
            self.arrivals.append(time.monotonic())
            fault = self._next_fault()
            limited = self._over_limit()
        if faulted := self._faulted(fault, handler, _error):
            return faulted
        if limited:
            return 429, _error(429, "Too Many Requests.  Exceeded Rate Limit")
        problem = _key_problem(params.get("api_key"))
        if problem:
            return 400, _error(400, f"Bad Request.  The value for variable api_key {problem}")
        if params.get("file_type") != "json":
            return 400, _error(400, "Bad Request.  This stand-in answers file_type=json only.")
        found = self.series.get(params.get("series_id", ""))
        if found is None:
            return 400, _error(400, "Bad Request.  The series does not exist.")
        today = date.today()
        start = date.fromisoformat(params.get("realtime_start", today.isoformat()))
        end = date.fromisoformat(params.get("realtime_end", today.isoformat()))
        if end < start:
            return 400, _error(400, "Bad Request.  The real-time end date is before the start.")
        if path == "/fred/series":
            return 200, {"seriess": [{"id": params["series_id"], "title": found.title,
                                      "units": found.units}]}  # fmt: skip
        if path == "/fred/series/observations":
            return 200, {"observations": _observations(found, start, end, params)}
        return 404, _error(404, "Not Found")

    def _over_limit(self) -> bool:
        now = time.monotonic()
        while self._times and now - self._times[0] > 60:
            self._times.popleft()
        self._times.append(now)
        return len(self._times) > self.per_minute


def _error(status: int, message: str) -> dict[str, object]:
    return {"error_code": status, "error_message": message}


def _key_problem(key: str | None) -> str:
    if not key or len(key) != 32 or not key.isalnum() or key.lower() != key:
        return "is not a 32 character alpha-numeric lower-case string."
    return "" if key == KEY else "is not registered."


def _observations(
    series: FredSeries, start: date, end: date, params: dict[str, str]
) -> list[dict[str, str]]:
    """Each version of each observation current at some day of ``[start, end]``."""
    rows = []
    by_observation: dict[date, list[Version]] = {}
    for version in sorted(series.versions, key=lambda v: (v.observed, v.published)):
        by_observation.setdefault(version.observed, []).append(version)
    for observed, versions in by_observation.items():
        for index, version in enumerate(versions):
            later = versions[index + 1].published if index + 1 < len(versions) else None
            current_until = date.fromordinal(later.toordinal() - 1) if later else FOREVER
            if version.published <= end and current_until >= start:
                rows.append(
                    {
                        "realtime_start": max(version.published, start).isoformat(),
                        "realtime_end": min(current_until, end).isoformat(),
                        "date": observed.isoformat(),
                        "value": version.value,
                    }
                )
    rows.sort(key=lambda row: row["date"], reverse=params.get("sort_order") == "desc")
    return rows[: int(params.get("limit", "100000"))]
