"""Social posts, honestly: StockTwits (through its stand-in over HTTP) serves only the present,
so the desk records it into the local vendor's ``social.jsonl``, and a run as of a later time
reads, through the router, exactly the posts out by then; StockTwits itself is never asked
about the past."""

from __future__ import annotations

import fcntl
import json
import os
import subprocess
from collections.abc import Iterator
from concurrent.futures import ThreadPoolExecutor
from datetime import UTC, datetime, timedelta
from pathlib import Path

import pytest

from shared.config import ENV_PREFIX, Settings, load_settings
from shared.data.contracts import DataKind, SocialPost
from shared.data.factory import LOCAL_DATA_DIR, build_router
from shared.data.local import SOCIAL_FILE, LocalVendor
from shared.data.router import DataRouter
from shared.data.social_record import record_social
from shared.data.stocktwits import StocktwitsVendor
from shared.errors import InvalidInput, NoData, RateLimited, VendorFailure
from shared.watchlists.store import WatchlistStore
from tests.cli_process import run_quantdesk
from tests.fakes.stocktwits import NOT_FOUND, FakeStocktwits, Fault, Message

NOW = datetime(2024, 3, 28, 14, 0, tzinfo=UTC)
LATER = NOW + timedelta(minutes=45)
TITLES = {"AAPL": "Apple Inc.", "MSFT": "Microsoft Corporation", "NVDA": "NVIDIA Corporation"}
MESSAGES = [
    Message(101, "AAPL", NOW - timedelta(hours=30), "$AAPL higher into earnings", "bulls", "Bullish"),
    Message(102, "AAPL", NOW - timedelta(minutes=30), "$AAPL looks tired", "bears", "Bearish", 3),
    Message(103, "AAPL", NOW - timedelta(minutes=5), "$AAPL Q&A at 5 & it's 'live'", "anon"),
    Message(104, "AAPL", NOW + timedelta(minutes=20), "$AAPL gap filled", "bulls", "Bullish"),
    Message(105, "AAPL", NOW + timedelta(minutes=40), "$AAPL new high", "bulls", "Bullish", 1),
    Message(201, "MSFT", NOW - timedelta(hours=1), "$MSFT steady", "anon"),
    Message(202, "MSFT", NOW + timedelta(minutes=30), "$MSFT breaking out", "bulls", "Bullish"),
]  # fmt: skip
WEEK = timedelta(days=7)


@pytest.fixture
def stocktwits() -> Iterator[FakeStocktwits]:
    with FakeStocktwits(TITLES, MESSAGES, now=NOW) as fake:
        yield fake


@pytest.fixture
def vendor(stocktwits: FakeStocktwits) -> StocktwitsVendor:
    return StocktwitsVendor(stocktwits.base_url, timeout_seconds=0.5)


def _store(data_dir: Path) -> Path:
    return data_dir / LOCAL_DATA_DIR / SOCIAL_FILE


def _lines(store: Path) -> list[SocialPost]:
    return [SocialPost.model_validate_json(line) for line in store.read_text().splitlines()]


def _record(vendor: StocktwitsVendor, data_dir: Path, at: datetime, *symbols: str) -> object:
    return record_social(vendor, list(symbols), _store(data_dir), at)


# -- the vendor ---------------------------------------------------------------------------


def test_messages_become_posts_with_the_authors_tag_as_sentiment(vendor: StocktwitsVendor) -> None:
    posts = vendor.social("aapl", NOW, WEEK)

    assert [(p.id, p.author, p.likes, p.sentiment) for p in posts] == [
        ("103", "anon", 0, None),
        ("102", "bears", 3, -1.0),
        ("101", "bulls", 0, 1.0),
    ]
    assert posts[0].text == "$AAPL Q&A at 5 & it's 'live'"
    assert posts[0].posted_at == NOW - timedelta(minutes=5) and posts[0].symbol == "AAPL"


def test_posts_after_as_of_or_before_the_window_are_dropped(
    stocktwits: FakeStocktwits, vendor: StocktwitsVendor
) -> None:
    stocktwits.now = LATER

    posts = vendor.social("AAPL", NOW, timedelta(hours=1))

    assert [p.id for p in posts] == ["103", "102"]


def test_pages_go_back_by_cursor_until_the_limit(tmp_path: Path) -> None:
    # Ids grow with time, as StockTwits' do: 1045 is the newest, a minute before NOW.
    many = [
        Message(1000 + i, "NVDA", NOW - timedelta(minutes=46 - i), "$NVDA") for i in range(1, 46)
    ]
    gated: list[int] = []
    with FakeStocktwits(TITLES, many, now=NOW) as fake:
        vendor = StocktwitsVendor(fake.base_url, 0.5, gate=lambda: gated.append(1))

        posts = vendor.social("NVDA", NOW, WEEK, limit=40)
        short = vendor.social("NVDA", NOW, timedelta(minutes=10), limit=40)

    assert [p.id for p in posts] == [str(i) for i in range(1045, 1005, -1)]
    first, second, third = fake.requests
    assert first.params == {} and second.params == {"max": "1015"}  # below the oldest read
    assert third.params == {} and len(short) == 9  # the first page already left the window
    assert len(gated) == len(fake.requests)


def test_an_unknown_symbol_is_no_data_in_stocktwits_words(vendor: StocktwitsVendor) -> None:
    with pytest.raises(NoData, match=f"StockTwits has no symbol ZZZZ .*404: {NOT_FOUND}"):
        vendor.social("ZZZZ", NOW, WEEK)


def test_nothing_in_the_window_says_stocktwits_serves_the_latest_only(
    vendor: StocktwitsVendor,
) -> None:
    with pytest.raises(NoData, match="latest messages only; the messages read go back to"):
        vendor.social("MSFT", NOW - timedelta(hours=2), timedelta(minutes=30))


def test_past_the_hourly_limit_is_rate_limited_until_the_reset(tmp_path: Path) -> None:
    with FakeStocktwits(TITLES, MESSAGES, now=NOW, per_hour=1) as fake:
        vendor = StocktwitsVendor(fake.base_url, 0.5)
        vendor.social("AAPL", NOW, WEEK)
        with pytest.raises(RateLimited, match="more than 1 requests an hour") as limited:
            vendor.social("MSFT", NOW, WEEK)

    wait = limited.value.retry_after
    assert wait is not None and timedelta(minutes=50) < wait <= timedelta(hours=1)


@pytest.mark.parametrize(
    ("fault", "said"),
    [
        (Fault(status=503, message="Service Unavailable"), "StockTwits answered 503"),
        (Fault(drop=True), "StockTwits could not be reached"),
        (Fault(delay=2.0), "StockTwits gave no answer in 0.5 s"),
    ],
)
def test_faults_are_vendor_failures_naming_stocktwits(
    stocktwits: FakeStocktwits, vendor: StocktwitsVendor, fault: Fault, said: str
) -> None:
    stocktwits.fail_next(fault)

    with pytest.raises(VendorFailure, match=said):
        vendor.social("AAPL", NOW, WEEK)


def test_the_router_never_asks_stocktwits_about_the_past(
    stocktwits: FakeStocktwits, vendor: StocktwitsVendor, tmp_path: Path
) -> None:
    _record(vendor, tmp_path, NOW, "AAPL")
    asked = len(stocktwits.requests)
    router = DataRouter(
        {"stocktwits": vendor, "local": LocalVendor(tmp_path / LOCAL_DATA_DIR)},
        {DataKind.SOCIAL: ("stocktwits", "local")},
        clock=lambda: NOW,
    )
    a_day_before = NOW - timedelta(hours=26)  # older than StockTwits' day of "now"

    past = router.call(
        DataKind.SOCIAL, lambda v: v.social("AAPL", a_day_before, WEEK), as_of=a_day_before
    )
    present = router.call(DataKind.SOCIAL, lambda v: v.social("AAPL", NOW, WEEK), as_of=NOW)

    assert (past.vendor, [p.id for p in past.value]) == ("local", ["101"])
    [skipped] = past.timed
    assert skipped.startswith("stocktwits: skipped") and "latest messages only" in skipped
    assert len(stocktwits.requests) == asked + 1  # only the read about now reached it
    assert present.vendor == "stocktwits" and present.timed == ()


# -- recording ----------------------------------------------------------------------------


def test_two_passes_store_each_post_once(
    stocktwits: FakeStocktwits, vendor: StocktwitsVendor, tmp_path: Path
) -> None:
    first = record_social(vendor, ["AAPL", "MSFT"], _store(tmp_path), NOW)
    stocktwits.now = LATER
    second = record_social(vendor, ["AAPL", "MSFT"], _store(tmp_path), LATER)

    assert [(r.symbol, r.fetched, r.new) for r in first.symbols] == [("AAPL", 3, 3), ("MSFT", 1, 1)]
    assert [(r.symbol, r.fetched, r.new) for r in second.symbols] == [
        ("AAPL", 5, 2),
        ("MSFT", 2, 1),
    ]
    assert second.symbols[0].newest == NOW + timedelta(minutes=40)
    stored = _lines(_store(tmp_path))
    assert sorted(p.id for p in stored) == ["101", "102", "103", "104", "105", "201", "202"]
    assert stored[1] == vendor.social("AAPL", NOW, WEEK)[1]  # as served, sentiment included


def test_a_run_between_two_posts_reads_only_those_out_by_then(
    stocktwits: FakeStocktwits, vendor: StocktwitsVendor, tmp_path: Path
) -> None:
    record_social(vendor, ["AAPL"], _store(tmp_path), NOW)
    stocktwits.now = LATER
    record_social(vendor, ["AAPL"], _store(tmp_path), LATER)
    router = build_router(load_settings(data_dir=tmp_path, data_routes={"social": ["local"]}))
    between = NOW + timedelta(minutes=30)  # after 104, before 105
    before_any = NOW - timedelta(days=2)

    routed = router.call(DataKind.SOCIAL, lambda v: v.social("AAPL", between, WEEK), as_of=between)

    assert routed.vendor == "local"
    assert [p.id for p in routed.value] == ["104", "103", "102", "101"]
    with pytest.raises(NoData, match="local has no posts about AAPL"):
        router.call(DataKind.SOCIAL, lambda v: v.social("AAPL", before_any, WEEK), as_of=before_any)


def test_an_unknown_symbol_is_reported_and_the_others_recorded(
    vendor: StocktwitsVendor, tmp_path: Path
) -> None:
    report = record_social(vendor, ["AAPL", "ZZZZ", "MSFT"], _store(tmp_path), NOW)

    assert [(r.symbol, r.outcome) for r in report.symbols] == [
        ("AAPL", "recorded"),
        ("ZZZZ", "no data"),
        ("MSFT", "recorded"),
    ]
    assert NOT_FOUND in (report.symbols[1].said or "") and report.failed == []
    assert {p.symbol for p in _lines(_store(tmp_path))} == {"AAPL", "MSFT"}


@pytest.mark.parametrize(
    "fault", [Fault(status=500, message="Internal Server Error"), Fault(drop=True)]
)
def test_a_fault_leaves_the_store_as_it_was(
    stocktwits: FakeStocktwits, vendor: StocktwitsVendor, tmp_path: Path, fault: Fault
) -> None:
    store = _store(tmp_path)
    record_social(vendor, ["AAPL", "MSFT"], store, NOW)
    before = store.read_bytes()
    stocktwits.now = LATER
    stocktwits.fail_next(fault)

    failed = record_social(vendor, ["AAPL"], store, LATER)
    assert store.read_bytes() == before
    stocktwits.fail_next(fault)
    partly = record_social(vendor, ["AAPL", "MSFT"], store, LATER)

    assert failed.failed == ["AAPL"] and "StockTwits" in (failed.symbols[0].said or "")
    assert partly.failed == ["AAPL"] and partly.symbols[1].new == 1
    after = store.read_bytes()
    assert after.startswith(before) and after.count(b"\n") == before.count(b"\n") + 1
    assert sorted(p.name for p in store.parent.iterdir()) == [SOCIAL_FILE, f"{SOCIAL_FILE}.lock"]


def test_being_throttled_is_a_failure_of_that_symbol_only(tmp_path: Path) -> None:
    with FakeStocktwits(TITLES, MESSAGES, now=NOW, per_hour=2) as fake:
        vendor = StocktwitsVendor(fake.base_url, 0.5)
        report = record_social(vendor, ["AAPL", "MSFT", "NVDA"], _store(tmp_path), NOW)

    assert [r.outcome for r in report.symbols] == ["recorded", "recorded", "failed"]
    assert "Rate limit exceeded" in (report.symbols[2].said or "")


def test_a_recorder_waits_for_the_other_and_stores_only_what_it_did_not(
    stocktwits: FakeStocktwits, vendor: StocktwitsVendor, tmp_path: Path
) -> None:
    store = _store(tmp_path)
    store.parent.mkdir(parents=True)
    stocktwits.now = LATER
    other = vendor.social("AAPL", NOW, WEEK)  # what another recorder read a little earlier
    with ThreadPoolExecutor(1) as pool, open(f"{store}.lock", "a") as lock:
        fcntl.flock(lock, fcntl.LOCK_EX)  # that recorder is writing
        pending = pool.submit(record_social, vendor, ["AAPL"], store, LATER)
        with pytest.raises(TimeoutError):
            pending.result(timeout=1.0)  # this one has read StockTwits and waits for the file
        store.write_text("".join(post.model_dump_json() + "\n" for post in other[::-1]))
        fcntl.flock(lock, fcntl.LOCK_UN)
        report = pending.result(timeout=10)

    assert (report.symbols[0].fetched, report.symbols[0].new) == (5, 2)
    assert [p.id for p in _lines(store)] == ["101", "102", "103", "104", "105"]


def test_a_full_read_newer_than_everything_stored_may_have_missed_posts(
    vendor: StocktwitsVendor, stocktwits: FakeStocktwits, tmp_path: Path
) -> None:
    record_social(vendor, ["AAPL"], _store(tmp_path), NOW - timedelta(minutes=20), limit=1)
    stocktwits.now = LATER

    report = record_social(vendor, ["AAPL"], _store(tmp_path), LATER, limit=2)

    assert [p.id for p in _lines(_store(tmp_path))] == ["102", "104", "105"]
    assert report.symbols[0].may_have_missed  # 103 came between and was never read


def test_a_bad_line_in_the_store_stops_the_pass_before_writing(
    vendor: StocktwitsVendor, tmp_path: Path
) -> None:
    store = _store(tmp_path)
    store.parent.mkdir(parents=True)
    store.write_text('{"id": "1", "posted_at": "2024-03-28"}\n')
    before = store.read_bytes()

    with pytest.raises(InvalidInput, match="line 1"):
        record_social(vendor, ["AAPL"], store, NOW)

    assert store.read_bytes() == before


# -- the command --------------------------------------------------------------------------


def _env(fake: FakeStocktwits, data_dir: Path) -> dict[str, str]:
    clean = {k: v for k, v in os.environ.items() if not k.startswith(ENV_PREFIX)}
    return {
        **clean,
        f"{ENV_PREFIX}DATA_DIR": str(data_dir),
        f"{ENV_PREFIX}STOCKTWITS__BASE_URL": fake.base_url,
        f"{ENV_PREFIX}STOCKTWITS__TIMEOUT_SECONDS": "2",
        "COLUMNS": "200",
    }


def _quantdesk_data(env: dict[str, str], *args: str) -> subprocess.CompletedProcess[str]:
    return run_quantdesk(env, "data", *args)


@pytest.fixture
def live() -> Iterator[FakeStocktwits]:
    """The stand-in on the real clock, as the command reads it now."""
    now = datetime.now(UTC)
    recent = [
        Message(1, "AAPL", now - timedelta(minutes=9), "$AAPL one", "bulls", "Bullish"),
        Message(2, "MSFT", now - timedelta(minutes=8), "$MSFT two"),
        Message(3, "AAPL", now - timedelta(minutes=7), "$AAPL three", "bears", "Bearish"),
    ]
    with FakeStocktwits(TITLES, recent) as fake:
        yield fake


def test_record_social_of_a_watchlist_as_json(live: FakeStocktwits, tmp_path: Path) -> None:
    settings = Settings(_env_file=None, data_dir=tmp_path, database_url=None)
    WatchlistStore.from_settings(settings).create("core", ["AAPL", "MSFT"])

    result = _quantdesk_data(
        _env(live, tmp_path), "record", "social", "--watchlist", "core", "--json"
    )

    assert result.returncode == 0, result.stderr
    report = json.loads(result.stdout)
    assert [(r["symbol"], r["outcome"], r["new"]) for r in report["symbols"]] == [
        ("AAPL", "recorded", 2),
        ("MSFT", "recorded", 1),
    ]
    assert sorted(p.id for p in _lines(_store(tmp_path))) == ["1", "2", "3"]


def test_record_social_shows_each_symbol_and_fails_on_a_failure(
    live: FakeStocktwits, tmp_path: Path
) -> None:
    live.fail_next(Fault(status=503, message="Service Unavailable"))

    result = _quantdesk_data(
        _env(live, tmp_path), "record", "social", "--symbols", "AAPL,ZZZZ,MSFT"
    )

    assert result.returncode == 1, result.stderr
    rows = {line.split()[0]: line for line in result.stdout.splitlines() if line.strip()}
    assert "failed" in rows["AAPL"] and "503" in rows["AAPL"]
    assert "no data" in rows["ZZZZ"] and NOT_FOUND in rows["ZZZZ"]
    assert "recorded" in rows["MSFT"]
    assert [p.id for p in _lines(_store(tmp_path))] == ["2"]


def test_record_social_needs_a_watchlist_or_symbols(live: FakeStocktwits, tmp_path: Path) -> None:
    result = _quantdesk_data(_env(live, tmp_path), "record", "social")

    assert result.returncode == 1 and live.requests == []
    [line] = result.stderr.strip().splitlines()
    assert "--watchlist/--symbols" in line and "exactly one" in line
