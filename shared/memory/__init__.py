"""quantdesk: agent memory, persisted in SQL and recalled by BM25 strictly as of a date."""

from shared.database import SchemaVersionError
from shared.memory.models import Lesson, MemoryRole, Outcome, Recollection, SourceRun
from shared.memory.render import render_recollections
from shared.memory.retrieval import MIN_RELEVANCE, tokenise
from shared.memory.schema import SCHEMA_VERSION
from shared.memory.store import MemoryStore

__all__ = [
    "MIN_RELEVANCE",
    "SCHEMA_VERSION",
    "Lesson",
    "MemoryRole",
    "MemoryStore",
    "Outcome",
    "Recollection",
    "SchemaVersionError",
    "SourceRun",
    "render_recollections",
    "tokenise",
]
