"""Vendor quotas held across the desk: every worker of every host draws one vendor's requests
from one count, so the desk as a whole stays under what the vendor allows.

The LLM queues get this from Temporal (a task queue's rate is enforced by the server), but a
data tool's vendor is chosen inside the activity, and one tool call may make several
requests (the SEC's ticker list, a company's filings, its facts). So the count is kept where
every host already meets: the desk's SQL database (PostgreSQL across hosts; the SQLite file
for the workers of one host). Each request first records itself in ``vendor_requests``, in a
transaction that holds the vendor's lock (PostgreSQL's advisory lock; SQLite's write lock,
taken by that first write); if the vendor's window then holds more than its quota, the row is
taken back and the request waits until the oldest one leaves the window. A request that would
wait past ``WAIT_AT_MOST`` is ``RateLimited`` with that wait, so Temporal retries the tool
call then instead of holding a worker's slot.

``LocalQuota`` keeps the same count in memory, for a vendor built outside a desk (a test, a
one-off script).
"""

from __future__ import annotations

import threading
import time
import zlib
from collections import deque
from collections.abc import Callable
from datetime import timedelta

from sqlalchemy import Column, Engine, Float, Integer, MetaData, String, Table, delete, func, select

from shared.config import VendorQuota
from shared.database import SchemaStep, SqlStore, ensure_versioned_schema
from shared.errors import RateLimited

COMPONENT = "vendor_quota"
PG_SCHEMA_LOCK = 0x7164717565756F
WAIT_AT_MOST = 30.0
"""Seconds a request may wait for its turn before the tool call is retried later instead."""
MARGIN = 0.2
"""Seconds added to every window at least: the vendor counts requests as they arrive, a little
after they leave, so a window measured here exactly would let one too many into its own."""
MARGIN_SHARE = 0.02
"""And a share of a long window: a loaded host's request can arrive more than 0.2 s after its
turn (measured: six of Massive's five a minute reached its stand-in while the test suite ran
beside the desk), and a minute can spare a second and a bit."""


def span(quota: VendorQuota) -> float:
    """The seconds a quota's window is counted over here: its own, plus the margin."""
    return quota.seconds + max(MARGIN, quota.seconds * MARGIN_SHARE)


Gate = Callable[[], None]
"""Called before each request to a vendor: returns once it may go, or raises RateLimited."""


metadata = MetaData()

vendor_requests = Table(
    "vendor_requests",
    metadata,
    Column("id", Integer, primary_key=True, autoincrement=True),
    Column("vendor", String(32), nullable=False, index=True),
    Column("at", Float, nullable=False, comment="seconds since the epoch"),
)

STEPS = (SchemaStep(tables=(vendor_requests,)),)


def ensure_schema(engine: Engine) -> None:
    """Bring the quota's table to this version (creating it in a fresh database)."""
    ensure_versioned_schema(engine, component=COMPONENT, steps=STEPS, lock_key=PG_SCHEMA_LOCK)


def _too_long(vendor: str, quota: VendorQuota, wait: float) -> RateLimited:
    return RateLimited(
        f"{vendor}: the desk's quota of {quota.requests} requests in {quota.seconds:g} s is "
        f"taken; the next turn is in {wait:.1f} s",
        retry_after=timedelta(seconds=max(wait, 0.1)),
    )


class QuotaStore(SqlStore):
    """The desk's count of requests per vendor, in its database."""

    ensure_schema = staticmethod(ensure_schema)

    def gate(self, vendor: str, quota: VendorQuota, wait_at_most: float = WAIT_AT_MOST) -> Gate:
        """The ``Gate`` of ``vendor`` under ``quota``."""
        return lambda: self.take(vendor, quota, wait_at_most)

    def take(self, vendor: str, quota: VendorQuota, wait_at_most: float = WAIT_AT_MOST) -> None:
        """Record one request of ``vendor`` once its window has room; wait for it at most
        ``wait_at_most`` seconds, else ``RateLimited``."""
        deadline = time.monotonic() + wait_at_most
        while True:
            wait = self._try(vendor, quota)
            if wait is None:
                return
            if time.monotonic() + wait > deadline:
                raise _too_long(vendor, quota, wait)
            time.sleep(wait)

    def _try(self, vendor: str, quota: VendorQuota) -> float | None:
        """None when the request is recorded; else how long until the window has room."""
        with self._engine.begin() as conn:
            if conn.dialect.name == "postgresql":
                conn.execute(select(func.pg_advisory_xact_lock(zlib.crc32(vendor.encode()))))
            now = time.time()
            counted = span(quota)
            since = now - counted
            # The first write: on SQLite it takes the write lock before anything is counted.
            mine = conn.execute(
                vendor_requests.insert()
                .values(vendor=vendor, at=now)
                .returning(vendor_requests.c.id)
            ).scalar_one()
            mine_or_theirs = vendor_requests.c.vendor == vendor
            conn.execute(
                delete(vendor_requests).where(mine_or_theirs, vendor_requests.c.at <= since)
            )
            window = select(func.count(), func.min(vendor_requests.c.at)).where(
                mine_or_theirs, vendor_requests.c.at > since
            )
            held, oldest = conn.execute(window).one()
            if held <= quota.requests:
                return None
            conn.execute(delete(vendor_requests).where(vendor_requests.c.id == mine))
            return float(oldest) + counted - now


class LocalQuota:
    """The same rolling window, in this process's memory."""

    def __init__(self, vendor: str, quota: VendorQuota, wait_at_most: float = WAIT_AT_MOST) -> None:
        self.vendor, self.quota, self.wait_at_most = vendor, quota, wait_at_most
        self._sent: deque[float] = deque()
        self._lock = threading.Lock()

    def __call__(self) -> None:
        deadline = time.monotonic() + self.wait_at_most
        while True:
            with self._lock:
                now = time.monotonic()
                counted = span(self.quota)
                while self._sent and self._sent[0] <= now - counted:
                    self._sent.popleft()
                if len(self._sent) < self.quota.requests:
                    self._sent.append(now)
                    return
                wait = self._sent[0] + counted - now
            if time.monotonic() + wait > deadline:
                raise _too_long(self.vendor, self.quota, wait)
            time.sleep(wait)
