"""The clients activities share, built from the worker's settings on first use.

Building lazily lets a worker import and register its activities without a
reachable data vendor, database or S3, and lets tests inject settings or ready
clients. Two threads racing to build one client build two equal clients, and
one is dropped: harmless, so there is no lock on the hot path.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from pydantic import BaseModel, Field

from activities.group import ActivityGroup
from shared.config import Settings, load_settings
from shared.data.router import DataRouter
from shared.storage.objects import ObjectRef, ObjectStore

if TYPE_CHECKING:
    from shared.memory import MemoryStore
    from shared.portfolio.store import PortfolioStore


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
        self._settings = settings
        self._router = router
        self._store = store
        self._memory = memory
        self._books = books

    @property
    def settings(self) -> Settings:
        """The injected settings, else the worker's own."""
        if self._settings is None:
            self._settings = load_settings()
        return self._settings

    @property
    def router(self) -> DataRouter:
        """The data router of the settings' routes."""
        if self._router is None:
            from shared.data.factory import build_router

            self._router = build_router(self.settings)
        return self._router

    @property
    def store(self) -> ObjectStore:
        """The S3 object store."""
        if self._store is None:
            self._store = ObjectStore.from_settings(self.settings)
        return self._store

    @property
    def memory(self) -> MemoryStore:
        """The memory store (creates its schema on first use)."""
        if self._memory is None:
            from shared.memory import MemoryStore

            self._memory = MemoryStore.from_settings(self.settings)
        return self._memory

    @property
    def books(self) -> PortfolioStore:
        """The portfolio store (creates its schema on first use)."""
        if self._books is None:
            from shared.portfolio.store import PortfolioStore

            self._books = PortfolioStore.from_settings(self.settings)
        return self._books

    def put_report(self, ref: ObjectRef, data: bytes) -> StoredReport:
        """Store ``data`` at ``ref`` (a retry overwrites it) and hand back a link."""
        stored = self.store.put_bytes(ref, data)
        return StoredReport(
            report=stored, url=self.store.presigned_url(stored), size_bytes=len(data)
        )
