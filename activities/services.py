"""The clients activities share, built from the worker's settings on first use.

Building lazily lets a worker import and register its activities without a
reachable data vendor, database or S3, and lets tests inject settings or ready
clients. Each client is a ``functools.cached_property``: built once per instance,
then read from the instance's attributes with no lock on the hot path.
"""

from __future__ import annotations

from functools import cached_property
from typing import TYPE_CHECKING

from pydantic import BaseModel, Field

from activities.group import ActivityGroup
from shared.config import Settings, load_settings
from shared.data.router import DataRouter
from shared.storage.objects import ObjectRef, ObjectStore

if TYPE_CHECKING:
    from shared.memory import MemoryStore
    from shared.portfolio.store import PortfolioStore
    from shared.stats.ledger import TrialsLedger
    from shared.watchlists.store import WatchlistStore


class StoredReport(BaseModel):
    """Where a stored report (or chart) is and a link for people."""

    report: ObjectRef
    url: str = Field(description="presigned GET URL")
    size_bytes: int


class Services(ActivityGroup):
    """Settings, data router, object store, memory and portfolio stores, each on first use, for
    the activities of a group."""

    def __init__(
        self,
        settings: Settings | None = None,
        *,
        router: DataRouter | None = None,
        store: ObjectStore | None = None,
        memory: MemoryStore | None = None,
        books: PortfolioStore | None = None,
    ) -> None:
        # What is injected stands in the instance's own attributes, where each
        # ``cached_property`` below looks first: only what is missing is built.
        given = {
            "settings": settings,
            "router": router,
            "store": store,
            "memory": memory,
            "books": books,
        }
        vars(self).update({name: client for name, client in given.items() if client is not None})

    @cached_property
    def settings(self) -> Settings:
        """The injected settings, else the worker's own."""
        return load_settings()

    @cached_property
    def router(self) -> DataRouter:
        """The data router of the settings' routes."""
        from shared.data.factory import build_router

        return build_router(self.settings)

    @cached_property
    def store(self) -> ObjectStore:
        """The S3 object store."""
        return ObjectStore.from_settings(self.settings)

    @cached_property
    def memory(self) -> MemoryStore:
        """The memory store (creates its schema on first use)."""
        from shared.memory import MemoryStore

        return MemoryStore.from_settings(self.settings)

    @cached_property
    def books(self) -> PortfolioStore:
        """The portfolio store (creates its schema on first use)."""
        from shared.portfolio.store import PortfolioStore

        return PortfolioStore.from_settings(self.settings)

    @cached_property
    def watchlists(self) -> WatchlistStore:
        """The watchlist store (beside the books, in the same database)."""
        from shared.watchlists.store import WatchlistStore

        return WatchlistStore.from_settings(self.settings)

    @cached_property
    def trials(self) -> TrialsLedger:
        """The trials ledger: every evaluation and backtest configuration run (same database)."""
        from shared.stats.ledger import TrialsLedger

        return TrialsLedger.from_settings(self.settings)

    def put_report(self, ref: ObjectRef, data: bytes) -> StoredReport:
        """Store ``data`` at ``ref`` (a retry overwrites it) and hand back a link."""
        stored = self.store.put_bytes(ref, data)
        return StoredReport(
            report=stored, url=self.store.presigned_url(stored), size_bytes=len(data)
        )
