"""The delay an HTTP server asks for before the next attempt, read from its headers.

LLM vendors and brokers alike send ``Retry-After`` (seconds or an HTTP date) with
a 429 or 503; OpenAI-style servers add the more precise ``retry-after-ms``.
Temporal waits that long through ``next_retry_delay``.
"""

from __future__ import annotations

import math
from collections.abc import Callable, Mapping
from datetime import UTC, datetime, timedelta
from email.utils import parsedate_to_datetime


def _milliseconds(value: str) -> float | None:
    try:
        return float(value) / 1000
    except ValueError:
        return None


def _seconds_or_date(value: str) -> float | None:
    try:
        return float(value)
    except ValueError:
        pass
    try:
        when = parsedate_to_datetime(value)
    except (TypeError, ValueError):
        return None
    when = when if when.tzinfo else when.replace(tzinfo=UTC)
    return (when - datetime.now(UTC)).total_seconds()


# The non-standard millisecond header is more precise, so it wins when both are sent.
_RETRY_HEADERS: tuple[tuple[str, Callable[[str], float | None]], ...] = (
    ("retry-after-ms", _milliseconds),
    ("retry-after", _seconds_or_date),
)


def retry_after(headers: Mapping[str, str]) -> timedelta | None:
    """The delay a server asked for, from ``retry-after-ms`` or ``Retry-After``.

    ``headers`` must look names up case-insensitively (httpx's and the SDKs' do).
    """
    for name, parse in _RETRY_HEADERS:
        value = headers.get(name)
        seconds = parse(value) if value is not None else None
        if seconds is not None and math.isfinite(seconds):
            return timedelta(seconds=max(seconds, 0.0))
    return None
