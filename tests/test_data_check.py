"""`quantdesk data check`: per kind, the vendor that answered, its records and why the others
did not, through the router a tools worker builds (here with the FRED stand-in for macro)."""

from __future__ import annotations

import json
import os
from collections.abc import Iterator
from datetime import UTC, datetime, timedelta
from pathlib import Path

import pytest

from shared.config import ENV_PREFIX, FRED_KEY_ENV
from shared.data.check import CheckQuery, check
from shared.data.contracts import POINT_IN_TIME, DataKind, Reach
from shared.data.router import DataRouter
from shared.market.bars import Bar
from tests.cli_process import run_quantdesk
from tests.fakes.fred import KEY, FakeFred
from tests.test_data_fred import CORE_CPI

AS_OF = datetime(2023, 6, 1, tzinfo=UTC)


@pytest.fixture
def fred() -> Iterator[FakeFred]:
    with FakeFred({"CPILFESL": CORE_CPI}) as fake:
        yield fake


def _env(fred: FakeFred, tmp_path: Path) -> dict[str, str]:
    clean = {k: v for k, v in os.environ.items() if not k.startswith(ENV_PREFIX)}
    return {
        **clean,
        f"{ENV_PREFIX}DATA_DIR": str(tmp_path),
        f"{ENV_PREFIX}FRED__BASE_URL": fred.base_url,
        FRED_KEY_ENV: KEY,
        f"{ENV_PREFIX}DATA_ROUTES": json.dumps({"macro": ["fred", "sim"]}),
    }


def test_check_as_json_gives_each_kinds_vendor_and_records(fred: FakeFred, tmp_path: Path) -> None:
    result = run_quantdesk(
        _env(fred, tmp_path), "data", "check", "GOOG", "--as-of", "2023-06-01",
        "--kind", "macro", "--json",
    )  # fmt: skip

    assert result.returncode == 0, result.stderr
    [macro] = json.loads(result.stdout)
    assert (macro["kind"], macro["vendor"], macro["records"]) == ("macro", "fred", 3)
    assert macro["latest"] == "2023-04-12T12:30:00Z"
    assert [p["value"] for p in macro["data"]["points"]] == [300.9, 302.0, 303.3]


def test_check_shows_the_vendors_passed_over(fred: FakeFred, tmp_path: Path) -> None:
    result = run_quantdesk(
        {**_env(fred, tmp_path), "COLUMNS": "200"},
        "data", "check", "GOOG", "--as-of", "2012-06-01", "--kind", "ohlcv",
    )  # fmt: skip

    assert result.returncode == 0, result.stderr
    chain, row = [line for line in result.stdout.splitlines() if line.strip().startswith("ohlcv")]
    assert "local → bundled" in chain and "→ sim" in chain  # the chain asked, above the table
    assert "(finnhub)" in result.stdout and "left out: no key: FINNHUB_API_KEY" in result.stdout
    assert "bundled" in row and "2012-06-01" in row and "local: does not serve ohlcv" in row


def test_a_bad_kind_is_one_line_listing_the_kinds(fred: FakeFred, tmp_path: Path) -> None:
    result = run_quantdesk(_env(fred, tmp_path), "data", "check", "GOOG", "--kind", "gossip")

    assert result.returncode == 1
    [line] = result.stderr.strip().splitlines()
    assert "`--kind`" in line and "gossip" in line and "ohlcv" in line


def test_a_time_without_a_zone_is_refused(fred: FakeFred, tmp_path: Path) -> None:
    result = run_quantdesk(
        _env(fred, tmp_path), "data", "check", "GOOG", "--as-of", "2023-06-01T10:00"
    )

    assert result.returncode == 1 and "has no timezone" in result.stderr


class _Vendor:
    """Bars for every symbol, or a now-only vendor that must never be asked."""

    def __init__(self, name: str, reach: Reach = POINT_IN_TIME) -> None:
        self.name, self.kinds, self._reach = name, frozenset({DataKind.OHLCV}), reach
        self.asked = 0

    def reach(self, kind: DataKind) -> Reach:
        return self._reach

    def ohlcv(self, symbol: str, timeframe: object, as_of: datetime, lookback: int) -> list[Bar]:
        self.asked += 1
        day = as_of - timedelta(days=1)
        return [Bar(time=day, open=1, high=1, low=1, close=1, volume=1)]


def test_a_skipped_now_only_vendor_is_shown_with_its_reason() -> None:
    live = _Vendor("live", Reach(timedelta(days=1), "it serves only today's bars"))
    router = DataRouter({"live": live, "past": _Vendor("past")}, {DataKind.OHLCV: ["live", "past"]})

    [outcome] = check(router, CheckQuery("GOOG", AS_OF), [DataKind.OHLCV])

    assert (outcome.vendor, outcome.records, live.asked) == ("past", 1, 0)
    assert outcome.latest == AS_OF - timedelta(days=1)
    [reason] = outcome.passed
    assert "live: skipped" in reason and "it serves only today's bars" in reason
