"""The handle every door holds: Temporal (connected on first use), S3 and the books.

One ``Desk`` per process (the console's app, the MCP server). S3 and SQL come through
``PortfolioActivities``, the same services the Portfolio flow's activities use (its store,
its books, its book valuation and risk), and a book's orders at a broker through
``BrokerBook``, so every door reads exactly what the flows wrote. Results of closed runs
never change, so they are kept once read; the live parts are asked each time.
"""

from __future__ import annotations

import asyncio
from collections.abc import Awaitable, Callable
from datetime import timedelta
from functools import cached_property
from typing import Any, TypeVar

from temporalio.client import (
    Client,
    WorkflowExecutionDescription,
    WorkflowExecutionStatus,
    WorkflowHandle,
)
from temporalio.converter import PayloadCodec
from temporalio.service import RPCError, RPCStatusCode

from activities.portfolio import PortfolioActivities
from activities.stuck_runs import StuckRun, stuck_below, stuck_run
from client.errors import Conflict, DeskError, NotFound, Unavailable
from shared.broker.book import BrokerBook
from shared.config import Settings
from shared.errors import ConfigError
from shared.spending.ledger import SpendLedger
from shared.watchlists.edits import WatchlistEdits
from workers.converter import data_converter
from workers.payload_storage import ClaimCheckDriver

T = TypeVar("T")
QUERY_TIMEOUT = timedelta(seconds=3)
"""A query to a run whose worker is away is not waited for: the page shows what it has."""
CACHE_SIZE = 512
"""What never changes (closed runs' results and answers, a book at one paper clock) is kept,
oldest dropped first."""


class Desk:
    """What every door's reads and actions go through."""

    def __init__(self, settings: Settings) -> None:
        self.settings = settings
        self.book_io = PortfolioActivities(settings)
        self._client: Client | None = None
        self._connecting = asyncio.Lock()
        self._kept: dict[tuple[Any, ...], Any] = {}

    @cached_property
    def broker_book(self) -> BrokerBook:
        """The books' intents, fills and halts (the same database as ``book_io``'s)."""
        return BrokerBook.from_settings(self.settings)

    @cached_property
    def spending(self) -> SpendLedger:
        """What runs and books spent on models, against their limits (``shared.spending``)."""
        return SpendLedger.from_settings(self.settings)

    @cached_property
    def watchlists(self) -> WatchlistEdits:
        """The watchlists, edited by the rules `quantdesk watchlist` applies (same database)."""
        return WatchlistEdits(self.settings)

    @cached_property
    def codec(self) -> PayloadCodec | None:
        """The payload codec of this console's own client, for the codec endpoint; None when
        payloads travel in plain text. A ``ConfigError`` (on without keys) is not kept."""
        return data_converter(self.settings).payload_codec

    @cached_property
    def payload_storage(self) -> ClaimCheckDriver:
        """Where this console's client keeps large payloads, for the codec endpoint."""
        return ClaimCheckDriver(self.settings)

    async def client(self) -> Client:
        """The Temporal client, connected on first use (the console may start before Temporal)."""
        async with self._connecting:
            if self._client is None:
                from workers.client import connect
                from workers.metrics_exporter import metrics_runtime

                try:
                    # The console's and the MCP server's metrics, where a port is set.
                    runtime = metrics_runtime(self.settings.metrics)
                    self._client = await connect(self.settings, runtime)
                except ConfigError as error:
                    raise Unavailable(error.message) from None
            return self._client

    async def described(
        self, workflow_id: str
    ) -> tuple[WorkflowHandle[Any, Any], WorkflowExecutionDescription]:
        """The run's handle and description; ``NotFound`` for an id Temporal does not know."""
        handle = (await self.client()).get_workflow_handle(workflow_id)
        try:
            return handle, await handle.describe()
        except RPCError as error:
            raise rpc_problem(error, f"no run with id {workflow_id!r}") from None

    async def running(self, workflow_id: str, doing: str) -> WorkflowHandle[Any, Any]:
        """The handle of a run that is still going; ``Conflict`` naming its state and what
        cannot be done (``doing``) once it has closed."""
        handle, described = await self.described(workflow_id)
        if described.status != WorkflowExecutionStatus.RUNNING:
            state = described.status.name.lower() if described.status else "closed"
            raise Conflict(f"{workflow_id} is {state}: {doing}")
        return handle

    async def query(
        self, handle: WorkflowHandle[Any, Any], name: str, *, settled: bool = False
    ) -> Any | None:
        """A query's JSON answer, or None when the run cannot answer now (not started yet,
        its worker away, no such query). ``settled``: the run is closed, so its answer is
        final and kept (a closed run answers by replay, which costs a worker time)."""

        async def ask() -> Any:
            return await handle.query(name, result_type=dict[str, Any], rpc_timeout=QUERY_TIMEOUT)

        try:
            if settled:
                return await self.kept(("answer", handle.id, handle.run_id or "", name), ask)
            return await ask()
        except Exception:  # the page shows what it has; the next refresh asks again
            return None

    async def child_query(self, workflow_id: str, name: str) -> Any | None:
        """``query`` on another run by id (a child), None if it cannot answer."""
        handle = (await self.client()).get_workflow_handle(workflow_id)
        return await self.query(handle, name)

    async def stuck(self, workflow_id: str, root_id: str | None) -> dict[str, StuckRun]:
        """The runs at or below ``workflow_id`` (in ``root_id``'s tree) whose workflow task
        keeps failing; none when Temporal cannot say now (the next refresh asks again)."""
        try:
            return await stuck_below(await self.client(), workflow_id, root_id)
        except RPCError:
            return {}

    async def stuck_messages(self, runs: list[tuple[str, str]]) -> dict[str, str]:
        """The failure of each (workflow id, run id) marked stuck, by workflow id."""

        async def read(workflow_id: str, run_id: str) -> StuckRun | None:
            try:
                return await stuck_run(await self.client(), workflow_id, run_id)
            except RPCError:
                return None

        found = await asyncio.gather(*(read(*run) for run in runs))
        return {run.workflow_id: run.message for run in found if run is not None}

    async def result(self, workflow_id: str, run_id: str) -> Any:
        """A completed run's result as JSON (read once, then kept); ``run_id`` "" is the latest."""

        async def read() -> Any:
            client = await self.client()
            handle = client.get_workflow_handle(
                workflow_id, run_id=run_id or None, result_type=dict[str, Any]
            )
            return await handle.result()

        return await self.kept(("result", workflow_id, run_id), read)

    async def kept(self, key: tuple[Any, ...], make: Callable[[], Awaitable[T]]) -> T:
        """``make()``'s value, made once per ``key`` (for what never changes under that key)."""
        if key not in self._kept:
            value = await make()
            if len(self._kept) >= CACHE_SIZE:
                self._kept.pop(next(iter(self._kept)))
            self._kept[key] = value
        answer: T = self._kept[key]
        return answer


def rpc_problem(error: RPCError, not_found: str) -> Exception:
    """The page error for a failed Temporal call: 404 with ``not_found``, else 503."""
    if error.status == RPCStatusCode.NOT_FOUND:
        return NotFound(not_found)
    if error.status == RPCStatusCode.INVALID_ARGUMENT:
        return DeskError(error.message)
    return Unavailable(f"Temporal did not answer: {error.message}")
