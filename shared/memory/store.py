"""Persistent agent memory: record each lesson once, recall the closest ones strictly as of a date.

Only lessons whose outcome was known by the query's date are candidates
(``as_of`` before it, ``learned_at`` at or before it), and the BM25 statistics
are computed over those candidates alone, so a backtest walking forward never
sees, or is ranked by, its own future. Tokenised situations are cached per role
and refreshed when the role's row count or largest id changes.
"""

from __future__ import annotations

import threading
from dataclasses import dataclass, field
from datetime import UTC, datetime
from typing import Any

from sqlalchemy import Connection, Row, func, select

from shared.database import SqlStore, row_values
from shared.errors import InvalidInput
from shared.memory.models import Lesson, MemoryRole, Outcome, Recollection, SourceRun
from shared.memory.retrieval import MIN_RELEVANCE, SituationIndex, tokenise
from shared.memory.schema import ensure_schema, memories

# Scores are rounded before ranking so that float noise never outranks "newer first".
SCORE_DECIMALS = 6


@dataclass(frozen=True)
class _Entry:
    """What ranking needs of one stored situation."""

    id: int
    symbol: str
    as_of: datetime
    learned_at: datetime
    tokens: tuple[str, ...]


@dataclass
class _Corpus:
    """One role's tokenised situations in id order, plus the index last built from them."""

    entries: list[_Entry]
    index_ids: tuple[int, ...] = ()
    index: SituationIndex | None = field(default=None, repr=False)

    @property
    def fingerprint(self) -> tuple[int, int]:
        """Row count and largest id: rows are only appended, so a change means new lessons."""
        return len(self.entries), self.entries[-1].id if self.entries else 0

    def index_for(self, candidates: list[_Entry]) -> SituationIndex:
        """The index over these candidates, reused while they stay the same."""
        ids = tuple(entry.id for entry in candidates)
        if self.index is None or ids != self.index_ids:
            self.index = SituationIndex([entry.tokens for entry in candidates])
            self.index_ids = ids
        return self.index


class MemoryStore(SqlStore):
    """Lessons in SQL, recalled by BM25 per role. Safe to share between threads."""

    ensure_schema = staticmethod(ensure_schema)

    def __init__(self, url: str) -> None:
        super().__init__(url)
        self._corpora: dict[MemoryRole, _Corpus] = {}
        self._lock = threading.Lock()

    def record_lesson(self, lesson: Lesson) -> bool:
        """Store a lesson; False if this run already taught this role one (the first one stays).

        A retried or replayed reflection therefore writes nothing new, whatever
        the model answered the second time."""
        statement = (
            self._insert(memories)
            .values(
                row_values(
                    memories,
                    lesson,
                    **lesson.outcome.model_dump(),
                    source_workflow_id=lesson.source.workflow_id,
                    source_run_id=lesson.source.run_id,
                    created_at=datetime.now(UTC),
                )
            )
            .on_conflict_do_nothing(index_elements=["source_workflow_id", "source_run_id", "role"])
            # The new id comes back only if a row went in: rowcount is not reliable with
            # RETURNING on every driver, and SQLAlchemy adds RETURNING for the primary key.
            .returning(memories.c.id)
        )
        with self._engine.begin() as conn:
            return conn.execute(statement).first() is not None

    def recall(
        self,
        role: MemoryRole,
        situation_text: str,
        *,
        as_of: datetime,
        top_k: int = 2,
        symbol: str | None = None,
    ) -> list[Recollection]:
        """Up to ``top_k`` lessons of ``role`` from situations like this one, best first.

        Candidates were decided before ``as_of`` and had their outcome known by
        it; ``symbol`` limits them to one ticker. Only scores of at least
        ``MIN_RELEVANCE`` count; equal scores put the newer decision first."""
        if as_of.tzinfo is None:
            raise InvalidInput(
                "as_of", f"{as_of.isoformat()} has no timezone", fix="Give a timezone-aware time."
            )
        if top_k < 1:
            raise InvalidInput("top_k", f"{top_k} is below 1")
        query = tokenise(situation_text)
        if not query:
            return []
        wanted = symbol.strip().upper() if symbol is not None else None
        with self._lock:
            corpus = self._refreshed(role)
            candidates = [
                entry
                for entry in corpus.entries
                if entry.tokens
                and entry.as_of < as_of
                and entry.learned_at <= as_of
                and (wanted is None or entry.symbol == wanted)
            ]
            if not candidates:
                return []
            index = corpus.index_for(candidates)
        scored = [
            (round(score, SCORE_DECIMALS), entry)
            for score, entry in zip(index.scores(query), candidates, strict=True)
            if score >= MIN_RELEVANCE
        ]
        scored.sort(key=lambda pair: (pair[0], pair[1].as_of, pair[1].id), reverse=True)
        return self._recollections(scored[:top_k])

    def _refreshed(self, role: MemoryRole) -> _Corpus:
        """The role's corpus, reading only rows added since the cached one was built."""
        with self._engine.connect() as conn:
            count, largest = conn.execute(
                select(func.count(), func.coalesce(func.max(memories.c.id), 0)).where(
                    memories.c.role == role
                )
            ).one()
            cached = self._corpora.get(role)
            if cached is not None and cached.fingerprint == (count, largest):
                return cached
            known = cached.entries if cached is not None else []
            entries = known + _entries_after(conn, role, known[-1].id if known else 0)
            if len(entries) != count:
                # Rows were deleted, or added while reading: read them all again.
                entries = _entries_after(conn, role, 0)
        corpus = _Corpus(entries)
        self._corpora[role] = corpus
        return corpus

    def _recollections(self, ranked: list[tuple[float, _Entry]]) -> list[Recollection]:
        """The full rows of the ranked entries, in rank order."""
        if not ranked:
            return []
        ids = [entry.id for _, entry in ranked]
        with self._engine.connect() as conn:
            rows = {
                row.id: row for row in conn.execute(memories.select().where(memories.c.id.in_(ids)))
            }
        return [_recollection(rows[entry.id], score) for score, entry in ranked]


def _entries_after(conn: Connection, role: MemoryRole, after_id: int) -> list[_Entry]:
    """The role's rows with an id above ``after_id``, tokenised, in id order."""
    query = (
        select(memories.c.id, memories.c.symbol, memories.c.as_of, memories.c.learned_at)
        .add_columns(memories.c.situation)
        .where(memories.c.role == role, memories.c.id > after_id)
        .order_by(memories.c.id)
    )
    return [
        _Entry(row.id, row.symbol, row.as_of, row.learned_at, tuple(tokenise(row.situation)))
        for row in conn.execute(query)
    ]


def _recollection(row: Row[Any], score: float) -> Recollection:
    return Recollection(
        symbol=row.symbol,
        as_of=row.as_of,
        learned_at=row.learned_at,
        situation=row.situation,
        decision=row.decision,
        outcome=Outcome(
            realised_return=row.realised_return, alpha=row.alpha, horizon_days=row.horizon_days
        ),
        lesson=row.lesson,
        source=SourceRun(workflow_id=row.source_workflow_id, run_id=row.source_run_id),
        score=score,
    )
