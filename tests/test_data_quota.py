"""A vendor's quota holds for the whole desk: requests counted in the desk's database (SQLite
and PostgreSQL), across threads and across two worker processes reading FRED's stand-in."""

from __future__ import annotations

import json
import os
import subprocess
import sys
import threading
import time
from pathlib import Path

import pytest

from bench.bench_data import arrivals
from shared.config import ENV_PREFIX, FRED_KEY_ENV, MASSIVE_KEY_ENV, VendorQuota
from shared.data.quota import MARGIN, LocalQuota, QuotaStore, span
from shared.errors import RateLimited
from tests.cli_process import ROOT
from tests.fakes.fred import KEY, FakeFred
from tests.fakes.massive import KEY as MASSIVE_KEY
from tests.fakes.massive import FakeMassive
from tests.test_data_fred import CORE_CPI
from tests.test_data_massive import MARKET, TODAY

QUOTA = VendorQuota(requests=4, seconds=0.5)


def _most_in_any_window(times: list[float], seconds: float) -> int:
    """The most of ``times`` that fall in one window of ``seconds``."""
    ordered = sorted(times)
    return max(
        (sum(1 for t in ordered[i:] if t - start < seconds) for i, start in enumerate(ordered)),
        default=0,
    )


def test_threads_sharing_a_database_never_exceed_the_quota(database_url: str) -> None:
    store = QuotaStore(database_url)
    taken: list[float] = []
    lock = threading.Lock()

    def worker() -> None:
        for _ in range(4):
            store.take("fred", QUOTA)
            with lock:
                taken.append(time.monotonic())

    threads = [threading.Thread(target=worker) for _ in range(3)]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join()
    store.close()

    assert len(taken) == 12
    assert _most_in_any_window(taken, QUOTA.seconds) <= QUOTA.requests


def test_a_turn_further_than_the_wait_allowed_is_rate_limited(database_url: str) -> None:
    store = QuotaStore(database_url)
    for _ in range(QUOTA.requests):
        store.take("sec", QUOTA, wait_at_most=0)

    with pytest.raises(RateLimited) as caught:
        store.take("sec", QUOTA, wait_at_most=0)
    store.take("fred", QUOTA, wait_at_most=0)  # another vendor's count is its own
    store.close()

    assert "quota of 4 requests in 0.5 s" in str(caught.value)
    assert caught.value.retry_after is not None
    assert caught.value.retry_after.total_seconds() <= QUOTA.seconds + MARGIN


def test_a_window_is_counted_longer_by_at_least_the_margin_and_by_a_share_of_a_long_one() -> None:
    assert span(VendorQuota(requests=8, seconds=1)) == pytest.approx(1 + MARGIN)
    assert span(VendorQuota(requests=5, seconds=60)) == pytest.approx(61.2)


def test_a_local_quota_keeps_the_same_window() -> None:
    gate = LocalQuota("fred", QUOTA)
    taken = []
    for _ in range(9):
        gate()
        taken.append(time.monotonic())

    assert _most_in_any_window(taken, QUOTA.seconds) <= QUOTA.requests


READER = """
import sys
from datetime import UTC, datetime, timedelta
from shared.config import load_settings
from shared.data.contracts import DataKind
from shared.data.factory import build_router

router = build_router(load_settings())
start = datetime(2023, 6, 1, tzinfo=UTC) + timedelta(days=int(sys.argv[1]))
for day in range(6):
    as_of = start + timedelta(days=10 * day)
    router.call(DataKind.MACRO, lambda v: v.macro("CPI", as_of, 3), as_of=as_of)
"""


def test_two_worker_processes_keep_to_one_quota(tmp_path: Path) -> None:
    """Each process reads six dates (no disk cache): fourteen requests in all, never more
    than four in a second at the vendor, and none refused."""
    clean = {k: v for k, v in os.environ.items() if not k.startswith(ENV_PREFIX)}
    with FakeFred({"CPILFESL": CORE_CPI}, per_minute=120) as fred:
        env = {
            **clean,
            f"{ENV_PREFIX}DATA_DIR": str(tmp_path),
            f"{ENV_PREFIX}DATA_CACHE": "false",
            f"{ENV_PREFIX}FRED__BASE_URL": fred.base_url,
            FRED_KEY_ENV: KEY,
            f"{ENV_PREFIX}DATA_ROUTES": json.dumps({"macro": ["fred"]}),
            f"{ENV_PREFIX}DATA_QUOTAS": json.dumps({"fred": {"requests": 4, "seconds": 1}}),
        }
        started = time.monotonic()
        readers = [
            subprocess.Popen([sys.executable, "-c", READER, str(offset)], cwd=ROOT, env=env,
                             stderr=subprocess.PIPE, text=True)
            for offset in (0, 3)
        ]  # fmt: skip
        errors = [reader.communicate(timeout=120)[1] for reader in readers]
        elapsed = time.monotonic() - started

    assert [reader.returncode for reader in readers] == [0, 0], errors
    assert len(fred.arrivals) == 14
    assert _most_in_any_window(fred.arrivals, 1.0) <= 4
    assert elapsed >= 2.5


MASSIVE_READER = """
import sys
from datetime import UTC, datetime
from shared.config import load_settings
from shared.data.contracts import DataKind
from shared.data.factory import build_router
from shared.market.bars import Timeframe

router = build_router(load_settings())
as_of = datetime(2024, 6, 20, tzinfo=UTC)
for symbol in sys.argv[1:]:
    router.call(DataKind.OHLCV, lambda v: v.ohlcv(symbol, Timeframe.D1, as_of, 5), as_of=as_of)
"""


def test_two_worker_processes_keep_to_massives_quota(tmp_path: Path) -> None:
    """Massive's free tier, its minute played as a second: two processes read two names each
    (two requests a name, the bars and the dividends, and the window's splits once), ten
    requests in all, never more than three in a second at the stand-in, none refused."""
    clean = {k: v for k, v in os.environ.items() if not k.startswith(ENV_PREFIX)}
    with FakeMassive(MARKET, today=TODAY, per_minute=3, window=1.0) as massive:
        seen = arrivals(massive, "answer")
        env = {
            **clean,
            f"{ENV_PREFIX}DATA_DIR": str(tmp_path),
            f"{ENV_PREFIX}DATA_CACHE": "false",
            f"{ENV_PREFIX}MASSIVE__BASE_URL": massive.base_url,
            MASSIVE_KEY_ENV: MASSIVE_KEY,
            f"{ENV_PREFIX}DATA_QUOTAS": json.dumps({"massive": {"requests": 3, "seconds": 1}}),
        }
        readers = [
            subprocess.Popen([sys.executable, "-c", MASSIVE_READER, *names], cwd=ROOT, env=env,
                             stderr=subprocess.PIPE, text=True)
            for names in (("GRWT", "SLOW"), ("XLK", "XLE"))
        ]  # fmt: skip
        errors = [reader.communicate(timeout=120)[1] for reader in readers]

    assert [reader.returncode for reader in readers] == [0, 0], errors
    assert len(seen) == 10 and {status for _, status in seen} == {200}
    assert _most_in_any_window([at for at, _ in seen], 1.0) <= 3
