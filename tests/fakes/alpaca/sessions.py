"""NYSE sessions (exchange-calendars' XNYS) as the stand-in's clock and calendar see them."""

from __future__ import annotations

import bisect
import functools
from dataclasses import dataclass
from datetime import date, datetime
from typing import Literal
from zoneinfo import ZoneInfo

import exchange_calendars

NEW_YORK = ZoneInfo("America/New_York")


@dataclass(frozen=True)
class Session:
    """One trading day: its date and its core session's open and close (UTC, early closes kept)."""

    day: date
    open: datetime
    close: datetime


@dataclass(frozen=True)
class Boundary:
    """A session opening or closing: the moments at which orders wake up or expire."""

    at: datetime
    kind: Literal["open", "close"]
    session: Session


@functools.cache
def _xnys() -> tuple[Session, ...]:
    """Every XNYS session the package knows, built once per process (it takes a moment)."""
    calendar = exchange_calendars.get_calendar("XNYS")
    opens = calendar.opens.dt.to_pydatetime()
    closes = calendar.closes.dt.to_pydatetime()
    return tuple(
        Session(day.date(), opened, closed)
        for day, opened, closed in zip(calendar.sessions, opens, closes, strict=True)
    )


class NyseCalendar:
    """Sessions looked up by time or date, by bisection over the whole XNYS calendar."""

    def __init__(self) -> None:
        self._sessions = _xnys()
        self._days = [session.day for session in self._sessions]
        self._closes = [session.close for session in self._sessions]

    @property
    def first_day(self) -> date:
        return self._days[0]

    @property
    def last_day(self) -> date:
        return self._days[-1]

    def sessions(self, start: date, end: date) -> list[Session]:
        """The sessions from ``start`` to ``end``, both included."""
        low = bisect.bisect_left(self._days, start)
        high = bisect.bisect_right(self._days, end)
        return list(self._sessions[low:high])

    def current_or_next(self, when: datetime) -> Session:
        """The session open at ``when``, else the next one to open."""
        index = bisect.bisect_right(self._closes, when)
        if index == len(self._sessions):
            raise ValueError(f"{when} is past the last session XNYS knows ({self.last_day})")
        return self._sessions[index]

    def open_at(self, when: datetime) -> Session | None:
        """The session whose core hours contain ``when`` (open included, close excluded)."""
        session = self.current_or_next(when)
        return session if session.open <= when else None

    def next_open(self, when: datetime) -> datetime:
        """The first open strictly after ``when``: tomorrow's while the market is open."""
        index = bisect.bisect_right(self._closes, when)
        if index + 1 >= len(self._sessions):
            raise ValueError(f"{when} is past the last session XNYS knows ({self.last_day})")
        session = self._sessions[index]
        return session.open if session.open > when else self._sessions[index + 1].open

    def settlement_day(self, session: Session) -> date:
        """T+1: the next session's date (US equities settle one business day after trade)."""
        index = bisect.bisect_right(self._days, session.day)
        return self._days[index] if index < len(self._days) else session.day

    def boundaries(self, after: datetime, until: datetime) -> list[Boundary]:
        """Every open and close in (``after``, ``until``], in time order."""
        found: list[Boundary] = []
        index = bisect.bisect_right(self._closes, after)
        while index < len(self._sessions) and self._sessions[index].open <= until:
            session = self._sessions[index]
            if session.open > after:
                found.append(Boundary(session.open, "open", session))
            if session.close <= until:
                found.append(Boundary(session.close, "close", session))
            index += 1
        return found
