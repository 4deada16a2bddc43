"""What the test arms to make the stand-in misbehave, and its per-minute rate limit.

The faults are the ones a broker client must survive without placing an order
twice: the order is saved and then the answer is lost (an HTML 504 from the
gateway, a dropped connection, an answer too late for the client's timeout), or
nothing is saved and the answer is an error (500/502/503, 429). Each is armed
for the next ``times`` matching requests and fires deterministically.
"""

from __future__ import annotations

import math
from collections import deque
from dataclasses import dataclass
from enum import StrEnum
from fnmatch import fnmatchcase

WINDOW_SECONDS = 60.0


class FaultKind(StrEnum):
    """How a request is mishandled; *_AFTER_SAVE ones carry the request out first."""

    GATEWAY_TIMEOUT_AFTER_SAVE = "gateway_timeout_after_save"  # then a 504 with an HTML page
    DROP_AFTER_SAVE = "drop_after_save"  # then the socket closes with no answer
    SLOW_AFTER_SAVE = "slow_after_save"  # then the answer comes after ``delay`` seconds
    ERROR_WITHOUT_SAVE = "error_without_save"  # only ``status`` (500, 502 or 503)
    RATE_LIMITED = "rate_limited"  # only a 429 with Retry-After ``retry_after``

    @property
    def saves(self) -> bool:
        """Whether the request takes effect before the fault."""
        return self in (
            FaultKind.GATEWAY_TIMEOUT_AFTER_SAVE,
            FaultKind.DROP_AFTER_SAVE,
            FaultKind.SLOW_AFTER_SAVE,
        )


@dataclass
class Fault:
    """One armed fault: for the next ``times`` requests matching ``method`` and ``path``.

    ``method`` None matches any; ``path`` is a shell-style pattern (``/v2/orders/*``)
    over the path without its query, None matching any.
    """

    kind: FaultKind
    times: int = 1
    method: str | None = None
    path: str | None = None
    status: int = 503
    delay: float = 5.0
    retry_after: int = 1

    def __post_init__(self) -> None:
        if self.times < 1:
            raise ValueError(f"a fault fires at least once, got times={self.times}")
        if self.kind is FaultKind.ERROR_WITHOUT_SAVE and self.status not in (500, 502, 503):
            raise ValueError(f"error_without_save answers 500, 502 or 503, not {self.status}")

    def matches(self, method: str, path: str) -> bool:
        return (self.method is None or self.method == method) and (
            self.path is None or fnmatchcase(path, self.path)
        )


class FaultBoard:
    """The armed faults, in arming order; the first that matches a request fires."""

    def __init__(self) -> None:
        self._armed: list[Fault] = []

    def arm(self, fault: Fault) -> None:
        self._armed.append(fault)

    def take(self, method: str, path: str) -> Fault | None:
        """The fault that fires on this request, counted off; None when none matches."""
        for fault in self._armed:
            if fault.matches(method, path):
                fault.times -= 1
                if fault.times == 0:
                    self._armed.remove(fault)
                return fault
        return None

    @property
    def pending(self) -> int:
        """Requests that armed faults have yet to spoil."""
        return sum(fault.times for fault in self._armed)


class RateLimiter:
    """``per_minute`` requests in any sliding minute (Alpaca's default is 200).

    A sliding window rather than calendar minutes, so a fast test never
    straddles a boundary and flakes.
    """

    def __init__(self, per_minute: int) -> None:
        if per_minute < 1:
            raise ValueError(f"a rate limit allows at least one request, got {per_minute}")
        self.per_minute = per_minute
        self._stamps: deque[float] = deque()

    def admit(self, mono: float) -> bool:
        """Count a request at monotonic time ``mono``; False when it is over the limit."""
        while self._stamps and self._stamps[0] <= mono - WINDOW_SECONDS:
            self._stamps.popleft()
        if len(self._stamps) >= self.per_minute:
            return False
        self._stamps.append(mono)
        return True

    def _wait(self, mono: float) -> float:
        """Seconds until the oldest counted request leaves the window."""
        return self._stamps[0] + WINDOW_SECONDS - mono if self._stamps else 0.0

    def headers(self, mono: float, wall: float) -> dict[str, str]:
        """X-RateLimit-Limit, -Remaining, and -Reset: when the oldest counted request ages out."""
        return {
            "X-RateLimit-Limit": str(self.per_minute),
            "X-RateLimit-Remaining": str(self.per_minute - len(self._stamps)),
            "X-RateLimit-Reset": str(math.ceil(wall + self._wait(mono))),
        }

    def refused_headers(self, mono: float, wall: float, retry_after: int | None) -> dict[str, str]:
        """The 429's headers: nothing remaining, Retry-After in whole seconds, Reset to match."""
        wait = retry_after if retry_after is not None else self._wait(mono)
        return self.headers(mono, wall) | {
            "X-RateLimit-Remaining": "0",
            "X-RateLimit-Reset": str(math.ceil(wall + wait)),
            "Retry-After": str(max(1, math.ceil(wait))),
        }
