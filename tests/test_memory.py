"""Agent memory: persisted lessons, recalled by BM25 strictly as of a date."""

from __future__ import annotations

import sqlite3
from concurrent.futures import ThreadPoolExecutor
from datetime import UTC, datetime, timedelta, timezone
from pathlib import Path
from typing import Any

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from pydantic import ValidationError
from sqlalchemy import create_engine, update

from shared.database import schema_versions
from shared.errors import ConfigError, InvalidInput
from shared.memory import (
    MIN_RELEVANCE,
    SCHEMA_VERSION,
    Lesson,
    MemoryRole,
    MemoryStore,
    Outcome,
    Recollection,
    SchemaVersionError,
    SourceRun,
    render_recollections,
    tokenise,
)
from shared.memory.retrieval import SituationIndex
from shared.memory.schema import memories
from tests.servers import count_rows, fresh_database

T0 = datetime(2024, 3, 1, 14, 30, tzinfo=UTC)
LATER = T0 + timedelta(days=365)
NVDA_EARNINGS = (
    "NVDA gapped up 8% after an earnings beat; RSI 78 overbought; semiconductor momentum "
    "strong; volume 3x average"
)
OTHERS = (
    "AAPL drifting sideways near the 200-day SMA; low volume; iPhone demand worries in China; "
    "market calm",
    "TSLA sold off 12% on a delivery miss; RSI 25 oversold; EV price war; high short interest",
    "XOM rallied with crude oil above 90; OPEC cuts; energy sector leadership; market rotation",
    "JPM steady after the stress test; yield curve steepening; bank results next week",
)
_runs = iter(range(1_000_000))


def _lesson(**overrides: Any) -> Lesson:
    """A valid lesson from a fresh run; any field can be overridden."""
    fields: dict[str, Any] = {
        "role": MemoryRole.BULL,
        "symbol": "NVDA",
        "as_of": T0,
        "situation": NVDA_EARNINGS,
        "decision": "Buy, 5% position",
        "outcome": Outcome(realised_return=-0.042, alpha=-0.031, horizon_days=10),
        "lesson": "Do not chase a gap above RSI 75; wait for the first pullback.",
        "source": SourceRun(workflow_id=f"analysis-{next(_runs)}", run_id="run-1"),
    }
    return Lesson(**(fields | overrides))


@pytest.fixture
def store() -> MemoryStore:
    return MemoryStore("sqlite://")


def test_lessons_persist_across_store_instances(tmp_path: Path) -> None:
    url = f"sqlite:///{tmp_path / 'not' / 'yet' / 'there' / 'memory.db'}"
    first = MemoryStore(url)
    assert first.record_lesson(_lesson())
    first.close()

    recalled = MemoryStore(url).recall(MemoryRole.BULL, NVDA_EARNINGS, as_of=LATER)

    assert [r.lesson for r in recalled] == [_lesson().lesson]
    assert recalled[0].as_of == T0 and recalled[0].as_of.tzinfo is not None


def test_recording_the_same_run_and_role_twice_keeps_the_first(tmp_path: Path) -> None:
    url = f"sqlite:///{tmp_path / 'memory.db'}"
    store = MemoryStore(url)
    lesson = _lesson()
    retried = lesson.model_copy(update={"lesson": "A different answer on the retry."})
    other_role = lesson.model_copy(update={"role": MemoryRole.BEAR})

    assert store.record_lesson(lesson) is True
    assert store.record_lesson(retried) is False
    assert store.record_lesson(other_role) is True

    assert count_rows(url, memories) == 2
    bull = store.recall(MemoryRole.BULL, NVDA_EARNINGS, as_of=LATER)
    assert [r.lesson for r in bull] == [lesson.lesson]


def test_recall_is_bounded_by_decision_date_and_learned_at(store: MemoryStore) -> None:
    lesson = _lesson(learned_at=T0 + timedelta(days=12))
    store.record_lesson(lesson)

    def recall(as_of: datetime) -> list[Recollection]:
        return store.recall(MemoryRole.BULL, NVDA_EARNINGS, as_of=as_of)

    assert recall(T0) == []  # decided at the query's time: not before it
    assert recall(T0 + timedelta(days=11)) == []  # outcome not yet known
    assert len(recall(lesson.learned_at)) == 1  # known at exactly that time


_ZONES = st.sampled_from([UTC, timezone(timedelta(hours=9)), timezone(timedelta(hours=-5))])
_TIMES = st.datetimes(
    min_value=datetime(2020, 1, 1), max_value=datetime(2021, 1, 1), timezones=_ZONES
)
_SPECS = st.lists(st.tuples(_TIMES, st.integers(1, 60), st.integers(0, 30)), min_size=1, max_size=8)


@settings(max_examples=60, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(specs=_SPECS, query_as_of=_TIMES)
def test_recall_returns_exactly_the_lessons_known_by_as_of(
    specs: list[tuple[datetime, int, int]], query_as_of: datetime
) -> None:
    store = MemoryStore("sqlite://")
    lessons = [
        _lesson(
            as_of=as_of,
            outcome=Outcome(realised_return=0.01, alpha=0.0, horizon_days=horizon),
            learned_at=as_of + timedelta(days=horizon + late),
        )
        for as_of, horizon, late in specs
    ]
    for lesson in lessons:
        store.record_lesson(lesson)

    recalled = store.recall(MemoryRole.BULL, NVDA_EARNINGS, as_of=query_as_of, top_k=len(specs))

    assert all(r.learned_at <= query_as_of and r.as_of < query_as_of for r in recalled)
    known = {lesson.source for lesson in lessons if lesson.learned_at <= query_as_of}
    assert {r.source for r in recalled} == known and len(recalled) == len(known)


def test_situation_sharing_the_salient_terms_ranks_first(store: MemoryStore) -> None:
    for situation in (*OTHERS, NVDA_EARNINGS):
        store.record_lesson(_lesson(situation=situation))

    recalled = store.recall(
        MemoryRole.BULL,
        "AMD gapped up after earnings beat, RSI overbought, semiconductor momentum, heavy volume",
        as_of=LATER,
    )

    assert recalled[0].situation == NVDA_EARNINGS
    assert all(0.0 <= r.score <= 1.0 for r in recalled)
    assert all(r.score < recalled[0].score for r in recalled[1:])


def test_query_sharing_only_one_common_word_is_below_the_threshold(store: MemoryStore) -> None:
    situations = (*OTHERS, NVDA_EARNINGS)
    for situation in situations:
        store.record_lesson(_lesson(situation=situation))
    query = "Bitcoin halving narrative; crypto miners surge; market"

    scores = SituationIndex([tokenise(s) for s in situations]).scores(tokenise(query))

    assert 0.0 < max(scores) < MIN_RELEVANCE  # "market" is shared, and only that
    assert store.recall(MemoryRole.BULL, query, as_of=LATER) == []


def test_an_identical_situation_scores_one_even_alone(store: MemoryStore) -> None:
    store.record_lesson(_lesson())

    (recalled,) = store.recall(MemoryRole.BULL, NVDA_EARNINGS, as_of=LATER)

    assert recalled.score == pytest.approx(1.0)


def test_top_k_limits_the_number_recalled(store: MemoryStore) -> None:
    for day in range(5):
        store.record_lesson(_lesson(as_of=T0 + timedelta(days=day)))

    assert len(store.recall(MemoryRole.BULL, NVDA_EARNINGS, as_of=LATER)) == 2
    assert len(store.recall(MemoryRole.BULL, NVDA_EARNINGS, as_of=LATER, top_k=4)) == 4
    with pytest.raises(InvalidInput, match="top_k"):
        store.recall(MemoryRole.BULL, NVDA_EARNINGS, as_of=LATER, top_k=0)


def test_each_role_recalls_only_its_own_lessons(store: MemoryStore) -> None:
    store.record_lesson(_lesson(role=MemoryRole.BEAR, lesson="bear's lesson"))
    store.record_lesson(_lesson(role=MemoryRole.TRADER, lesson="trader's lesson"))

    bear = store.recall(MemoryRole.BEAR, NVDA_EARNINGS, as_of=LATER)

    assert [r.lesson for r in bear] == ["bear's lesson"]
    assert store.recall(MemoryRole.BULL, NVDA_EARNINGS, as_of=LATER) == []


def test_symbol_limits_recall_to_one_ticker(store: MemoryStore) -> None:
    store.record_lesson(_lesson(symbol="amd", lesson="amd's lesson"))
    store.record_lesson(_lesson(symbol="NVDA"))

    amd = store.recall(MemoryRole.BULL, NVDA_EARNINGS, as_of=LATER, symbol=" AMD ")

    assert [(r.symbol, r.lesson) for r in amd] == [("AMD", "amd's lesson")]


def test_equal_scores_put_the_newer_decision_first_every_time(tmp_path: Path) -> None:
    url = f"sqlite:///{tmp_path / 'memory.db'}"
    store = MemoryStore(url)
    # Recorded out of date order; the last two share a date, so the later row wins.
    for day, label in ((3, "day 3"), (9, "day 9"), (1, "day 1"), (9, "day 9, second")):
        store.record_lesson(_lesson(as_of=T0 + timedelta(days=day), lesson=label))

    def order(on: MemoryStore) -> list[str]:
        return [r.lesson for r in on.recall(MemoryRole.BULL, NVDA_EARNINGS, as_of=LATER, top_k=4)]

    expected = ["day 9, second", "day 9", "day 3", "day 1"]
    assert order(store) == order(store) == order(MemoryStore(url)) == expected


def test_new_lessons_reach_a_store_that_already_recalled(tmp_path: Path) -> None:
    url = f"sqlite:///{tmp_path / 'memory.db'}"
    reader, writer = MemoryStore(url), MemoryStore(url)
    writer.record_lesson(_lesson(lesson="first"))
    assert len(reader.recall(MemoryRole.BULL, NVDA_EARNINGS, as_of=LATER)) == 1

    writer.record_lesson(_lesson(as_of=T0 + timedelta(days=1), lesson="second"))

    recalled = reader.recall(MemoryRole.BULL, NVDA_EARNINGS, as_of=LATER)
    assert [r.lesson for r in recalled] == ["second", "first"]


def _start_together(url: str, starters: int = 8) -> None:
    """Open ``starters`` stores on one database at once, as workers do on first start."""
    with ThreadPoolExecutor(starters) as pool:
        stores = list(pool.map(lambda _: MemoryStore(url), range(starters)))
    for store in stores:
        store.close()


def test_stores_started_together_on_a_fresh_file_agree(tmp_path: Path) -> None:
    for attempt in range(3):
        url = f"sqlite:///{tmp_path / f'memory-{attempt}.db'}"
        _start_together(url)
        assert count_rows(url, memories) == 0


def test_a_newer_schema_version_is_refused(tmp_path: Path) -> None:
    url = f"sqlite:///{tmp_path / 'memory.db'}"
    MemoryStore(url).close()
    with create_engine(url).begin() as conn:
        conn.execute(update(schema_versions).values(version=SCHEMA_VERSION + 1))

    with pytest.raises(SchemaVersionError, match="newer than") as raised:
        MemoryStore(url)

    assert "QUANTDESK_DATABASE_URL" in str(raised.value)
    assert isinstance(raised.value, ConfigError) and not raised.value.retryable


def test_an_unversioned_memories_table_is_refused(tmp_path: Path) -> None:
    path = tmp_path / "memory.db"
    with sqlite3.connect(path) as conn:
        conn.execute("CREATE TABLE memories (id INTEGER PRIMARY KEY, text TEXT)")

    with pytest.raises(SchemaVersionError, match="no recorded version"):
        MemoryStore(f"sqlite:///{path}")


def test_unsupported_database_urls_are_refused() -> None:
    with pytest.raises(ConfigError, match="supports sqlite and postgresql, not mysql"):
        MemoryStore("mysql://user@localhost/db")
    with pytest.raises(ConfigError, match="not a database URL"):
        MemoryStore("not a url")


def test_a_naive_as_of_is_refused(store: MemoryStore) -> None:
    with pytest.raises(InvalidInput, match="as_of"):
        store.recall(MemoryRole.BULL, NVDA_EARNINGS, as_of=datetime(2025, 1, 1))


def test_learned_at_defaults_to_the_horizon_and_never_precedes_it() -> None:
    tokyo = timezone(timedelta(hours=9))
    lesson = _lesson(as_of=datetime(2024, 3, 1, 9, 0, tzinfo=tokyo))

    assert lesson.as_of == datetime(2024, 3, 1, 0, 0, tzinfo=UTC)
    assert lesson.learned_at == lesson.as_of + timedelta(days=10)
    with pytest.raises(ValidationError, match="could not be known yet"):
        _lesson(learned_at=T0 + timedelta(days=9))


def test_tokens_are_lower_case_words_numbers_and_tickers_without_stop_words() -> None:
    assert tokenise("The BRK.B price is above the 200-day SMA at 3.5%, not below.") == [
        "brk.b",
        "price",
        "above",
        "200",
        "day",
        "sma",
        "3.5",
        "not",
        "below",
    ]


def test_render_gives_date_symbol_outcome_and_lesson(store: MemoryStore) -> None:
    store.record_lesson(_lesson())
    recalled = store.recall(MemoryRole.BULL, NVDA_EARNINGS, as_of=LATER)

    text = render_recollections(recalled)

    assert text == (
        "Reflections from similar situations:\n"
        "1. 2024-03-01 NVDA (similarity 1.00). Decision: Buy, 5% position. "
        "Outcome after 10 days: return -4.2%, alpha -3.1%. "
        "Lesson: Do not chase a gap above RSI 75; wait for the first pullback."
    )


def test_render_says_when_nothing_is_comparable() -> None:
    assert render_recollections([]) == "No comparable past situations."


@pytest.fixture
def postgres_url(postgres_server: str) -> str:
    return fresh_database(postgres_server)


def test_postgres_stores_and_recalls_like_sqlite(postgres_url: str) -> None:
    first = MemoryStore(postgres_url)
    lesson = _lesson(as_of=datetime(2024, 3, 1, 9, 0, tzinfo=timezone(timedelta(hours=9))))
    assert first.record_lesson(lesson) is True
    assert first.record_lesson(lesson) is False
    first.record_lesson(_lesson(as_of=lesson.as_of + timedelta(days=1), lesson="newer"))
    first.close()

    store = MemoryStore(postgres_url)  # a second start verifies instead of creating
    recalled = store.recall(MemoryRole.BULL, NVDA_EARNINGS, as_of=LATER)

    assert [r.lesson for r in recalled] == ["newer", lesson.lesson]
    assert recalled[1].as_of == lesson.as_of and recalled[1].as_of.tzinfo == UTC
    assert store.recall(MemoryRole.BULL, NVDA_EARNINGS, as_of=lesson.learned_at) == recalled[1:]
    assert count_rows(postgres_url, memories) == 2


def test_postgres_stores_started_together_agree(postgres_server: str) -> None:
    for _ in range(3):
        url = fresh_database(postgres_server)
        _start_together(url)
        assert count_rows(url, memories) == 0


def test_postgres_refuses_a_newer_schema_version(postgres_url: str) -> None:
    MemoryStore(postgres_url).close()
    with create_engine(postgres_url).begin() as conn:
        conn.execute(update(schema_versions).values(version=SCHEMA_VERSION + 1))

    with pytest.raises(SchemaVersionError, match="newer than"):
        MemoryStore(postgres_url)
