"""Massive's raw daily bars adjusted for the splits and dividends known at ``as_of``, and only
those.

Massive's default (``adjusted=true``) divides every bar by every split it knows today: read
for a past ``as_of``, a later split would already show in the prices (a run as of early 2024
would see NVDA at a tenth of what traded). So the bars are asked raw and adjusted here:

- a split divides the prices (and multiplies the volumes) of the bars before its
  ``execution_date``, once that date is at or before ``as_of``'s date: until a split is
  executed the shares trade as before, so one merely announced changes nothing;
- a cash dividend scales the prices of the bars before its ``ex_dividend_date`` by
  ``1 - cash / the close before it`` (Yahoo's method, so bars read alike from either vendor
  of the chain), once the ex-date is at or before ``as_of``'s date and the dividend was
  declared by then. The ex-date gates it because that is the day the price drops; before it
  there is nothing to adjust for, whenever it was declared.

A bar is labelled 00:00 UTC of its session's date, as every daily bar in quantdesk: Massive's
``t`` is the bar's start, midnight New York, in milliseconds.
"""

from __future__ import annotations

from bisect import bisect_left
from collections.abc import Sequence
from dataclasses import dataclass
from datetime import UTC, date, datetime, time
from zoneinfo import ZoneInfo

from shared.data.massive_wire import Agg, Dividend, Split
from shared.market.bars import Bar

NEW_YORK = ZoneInfo("America/New_York")


@dataclass(frozen=True)
class _Event:
    """What an event does to the bars before ``day``: prices and volumes times these."""

    day: date
    price: float
    volume: float


def session_day(t: int) -> date:
    """The session date of a bar starting at ``t`` (ms since the epoch)."""
    return datetime.fromtimestamp(t / 1000, NEW_YORK).date()


def day_label(day: date) -> datetime:
    """A daily bar's time: 00:00 UTC of its date."""
    return datetime.combine(day, time(), UTC)


def scaled(agg: Agg, day: date, price: float = 1.0, volume: float = 1.0) -> Bar:
    """``agg`` as the bar of ``day``, prices times ``price`` and volume times ``volume``."""
    return Bar(
        time=day_label(day),
        open=agg.o * price,
        high=agg.h * price,
        low=agg.l * price,
        close=agg.c * price,
        volume=agg.v * volume,
    )


def adjusted_bars(
    aggs: Sequence[Agg], splits: Sequence[Split], dividends: Sequence[Dividend], known_by: date
) -> list[Bar]:
    """``aggs`` (raw, oldest first) adjusted for the events known by the date ``known_by``."""
    days = [session_day(agg.t) for agg in aggs]
    events = [
        _Event(s.execution_date, s.split_from / s.split_to, s.split_to / s.split_from)
        for s in splits
        if s.execution_date <= known_by
    ]
    for dividend in dividends:
        declared = dividend.declaration_date or dividend.ex_dividend_date
        before = bisect_left(days, dividend.ex_dividend_date) - 1
        if dividend.ex_dividend_date > known_by or declared > known_by or before < 0:
            continue  # not known yet, or no bar of the window before it
        factor = 1 - dividend.cash_amount / aggs[before].c
        if factor > 0:  # a dividend worth the whole share is a data error, not an adjustment
            events.append(_Event(dividend.ex_dividend_date, factor, 1.0))
    events.sort(key=lambda event: event.day, reverse=True)
    bars: list[Bar] = []
    price = volume = 1.0
    pending = iter(events)
    event = next(pending, None)
    for day, agg in zip(reversed(days), reversed(aggs), strict=True):
        while event is not None and event.day > day:
            price, volume = price * event.price, volume * event.volume
            event = next(pending, None)
        bars.append(scaled(agg, day, price, volume))
    return bars[::-1]
