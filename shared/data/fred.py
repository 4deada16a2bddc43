"""FRED / ALFRED: macro series as they were known at ``as_of``, never as revised since.

FRED answers about today unless asked for a real-time period: a March CPI read on March 31
without one is the figure released on April 12, and every revision after it (the peers'
leak, TradingAgents #1275). ALFRED's real-time period selects the vintage: with
``realtime_start = realtime_end = D`` each observation comes in the version current on day D,
carrying the day that version was published (its own ``realtime_start``; FRED clips it to the
period asked, so the period asked starts at FRED's first day and ends on day D: every version
known by D comes back, and the one whose ``realtime_end`` is D is the one then current). So:

- the vintage day is ``as_of``'s date in New York, or the day before when ``as_of`` comes
  before that day's release time (a CPI print is published at 08:30 New York time, so a run
  at 08:00 that day must not see it);
- each point's ``released_at`` is its version's publication day at the series' release time
  (``RELEASE_TIMES``; a series not listed counts as published at the end of the day, never
  earlier);
- a series without a vintage on that day answers "no data", never today's revision.

The key (``FRED_API_KEY``, free) travels as a query parameter, as FRED requires; it never
appears in an error or a log line. Errors map to the router's kinds: a missing or refused key
is ``NotConfigured`` (the router asks the next vendor), a 429 ``RateLimited``, a 5xx, a
timeout or a dropped connection ``VendorFailure``, an unknown series ``NoData``. FRED allows
120 requests a minute per key: each request first passes the desk's quota (``gate``).
"""

from __future__ import annotations

from datetime import UTC, date, datetime, time, timedelta
from typing import Any, TypeVar
from zoneinfo import ZoneInfo

import httpx
from pydantic import BaseModel, Field, ValidationError

from shared.config import DEFAULT_QUOTAS, FRED_KEY_ENV, FredSettings
from shared.data.contracts import DataKind, DataVendor, MacroPoint, MacroSeries
from shared.data.http_vendor import get, json_of, retry_after
from shared.data.quota import Gate, LocalQuota
from shared.errors import InvalidInput, NoData, NotConfigured, RateLimited, VendorFailure

M = TypeVar("M", bound=BaseModel)

NEW_YORK = ZoneInfo("America/New_York")
NAME = "fred"
KEY_FIX = (
    f"Set {FRED_KEY_ENV} (a free 32-character key from fredaccount.stlouisfed.org) on the tools "
    "workers, or route macro to another vendor in QUANTDESK_DATA_ROUTES."
)
DEFAULT_RETRY_AFTER = timedelta(seconds=20)
"""FRED's limit is per minute and its 429 names no wait: a third of the window."""
FIRST_DAY = "1776-07-04"
"""FRED's earliest real-time date: a period from it to day D holds every version known by D."""
VERSIONS_PER_OBSERVATION = 12
"""Rows asked for per observation wanted: each revision of an observation is a row."""
MISSING = "."
"""FRED's value for an observation that has none (a holiday, a gap)."""

ALIASES: dict[str, str] = {"CPI": "CPILFESL", "CORE_CPI": "CPILFESL"}
"""The desk's own names: the Scan reads "CPI" as core inflation, as the simulated market
serves it."""

RELEASE_TIMES: dict[str, time] = {
    "CPIAUCSL": time(8, 30),
    "CPILFESL": time(8, 30),
    "UNRATE": time(8, 30),
    "PAYEMS": time(8, 30),
    "GDP": time(8, 30),
    "GDPC1": time(8, 30),
    "INDPRO": time(9, 15),
    "UMCSENT": time(10, 0),
    "FEDFUNDS": time(16, 15),
    "DFF": time(16, 15),
    "DGS2": time(16, 15),
    "DGS10": time(16, 15),
}
"""When each series' release is published, New York time (BLS and BEA at 08:30, the Fed's
G.17 at 09:15, Michigan's survey at 10:00, the H.15 rates in the afternoon)."""
END_OF_DAY = time(23, 59, 59)


class _Observation(BaseModel):
    observed: date = Field(alias="date")
    value: str
    realtime_start: date
    realtime_end: date


class _Observations(BaseModel):
    observations: list[_Observation]


class _SeriesInfo(BaseModel):
    id: str
    title: str
    units: str


class _Series(BaseModel):
    seriess: list[_SeriesInfo]


def vintage_day(series: str, as_of: datetime) -> date:
    """The day whose vintage was current at ``as_of``: its New York date, or the day before
    when ``as_of`` comes before that day's release."""
    local = as_of.astimezone(NEW_YORK)
    release = RELEASE_TIMES.get(series, END_OF_DAY)
    return local.date() if local.time() >= release else local.date() - timedelta(days=1)


def released_at(series: str, day: date) -> datetime:
    """When a version published on ``day`` became visible, in UTC."""
    local = datetime.combine(day, RELEASE_TIMES.get(series, END_OF_DAY), NEW_YORK)
    return local.astimezone(UTC)


class FredVendor(DataVendor):
    """Macro series from FRED's ``series/observations``, one vintage at a time."""

    name = NAME
    kinds = frozenset({DataKind.MACRO})

    def __init__(
        self,
        settings: FredSettings,
        gate: Gate | None = None,
        transport: httpx.BaseTransport | None = None,
    ) -> None:
        if settings.api_key is None or not settings.api_key.get_secret_value():
            raise NotConfigured(f"FRED needs a key and {FRED_KEY_ENV} is not set", fix=KEY_FIX)
        self._key = settings.api_key
        self._http = httpx.Client(
            base_url=settings.base_url.rstrip("/") + "/",
            timeout=settings.timeout_seconds,
            transport=transport,
        )
        self._titles: dict[str, _SeriesInfo] = {}
        self._gate = gate or LocalQuota(NAME, DEFAULT_QUOTAS[NAME])

    def macro(self, series: str, as_of: datetime, lookback: int = 24) -> MacroSeries:
        """The last ``lookback`` observations of ``series`` in the vintage current at
        ``as_of``, oldest first."""
        series_id = ALIASES.get(series.upper(), series.upper())
        day = vintage_day(series_id, as_of)
        answer = self._get(
            "series/observations",
            series_id,
            realtime_start=FIRST_DAY,
            realtime_end=day.isoformat(),
            sort_order="desc",
            # Revisions and missing values count against the limit: ask for a margin.
            limit=str(lookback * VERSIONS_PER_OBSERVATION + 10),
        )
        observations = _parsed(_Observations, answer, series_id).observations
        current = [o for o in observations if o.realtime_end >= day and o.realtime_start <= day]
        points = [
            MacroPoint(
                observed=o.observed,
                released_at=released_at(series_id, o.realtime_start),
                value=float(o.value),
            )
            for o in sorted(current, key=lambda o: o.observed, reverse=True)
            if o.value != MISSING
        ][:lookback]
        if not points:
            raise NoData(
                f"FRED has no vintage of {series_id} as of {day.isoformat()} (ALFRED keeps "
                "vintages only from a series' first one on)"
            )
        info = self._info(series_id)
        return MacroSeries(series=series_id, name=info.title, unit=info.units, points=points[::-1])

    def _info(self, series_id: str) -> _SeriesInfo:
        """The series' title and units, asked once per process (they describe, not date, it)."""
        if series_id not in self._titles:
            found = _parsed(_Series, self._get("series", series_id), series_id).seriess
            untitled = _SeriesInfo(id=series_id, title=series_id, units="")
            self._titles[series_id] = found[0] if found else untitled
        return self._titles[series_id]

    def _get(self, path: str, series_id: str, **params: str) -> Any:
        """One GET, its JSON, or the router's error for what went wrong."""
        query = {
            "series_id": series_id,
            "api_key": self._key.get_secret_value(),
            "file_type": "json",
            **params,
        }
        self._gate()
        response = get(
            self._http, "FRED", path, query, refused=lambda answer: _error(answer, series_id)
        )
        return json_of(response, "FRED")


def _error(response: httpx.Response, series_id: str) -> Exception:
    """FRED's error body (``error_code``, ``error_message``) as the router's error."""
    try:
        message = str(response.json().get("error_message", "")).strip()
    except ValueError:
        message = ""
    status = response.status_code
    said = f"FRED answered {status}" + (f": {message}" if message else "")
    if status == 429:
        wait = retry_after(response, DEFAULT_RETRY_AFTER)
        return RateLimited(f"{said} (120 requests a minute per key)", retry_after=wait)
    if status >= 500:
        return VendorFailure(said)
    if "api_key" in message or status in (401, 403):
        return NotConfigured(f"FRED refused the key in {FRED_KEY_ENV}: {said}", fix=KEY_FIX)
    if "series does not exist" in message.lower() or status == 404:
        return NoData(f"FRED has no series {series_id} ({said})")
    return InvalidInput("series", said)


def _parsed(model: type[M], answer: Any, series_id: str) -> M:
    """``answer`` read as ``model``, or a ``VendorFailure`` saying FRED's shape changed."""
    try:
        return model.model_validate(answer)
    except ValidationError as error:
        raise VendorFailure(
            f"FRED answered {series_id} in a shape quantdesk does not know: {error.errors()[0]}"
        ) from None
