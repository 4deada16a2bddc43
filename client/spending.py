"""Raising a limit, the one way every door does it (CLI, console, MCP): write the new limit
to the ledger, then send ``resume`` to the runs that may wait on it, so a call stopped by the
old limit is asked again (calls already answered are in the runs' histories: none is asked
twice). A run's limit is its root's: raising it through a child raises the whole tree's.
"""

from __future__ import annotations

from pydantic import BaseModel, Field
from temporalio.client import Client, WorkflowExecutionStatus
from temporalio.service import RPCError

from shared.config import Settings
from shared.errors import InvalidInput
from shared.search_attributes import PORTFOLIO, quoted
from shared.spending.ledger import Limit, SpendLedger, Standing, book_scope, run_scope


class Raised(BaseModel):
    """What a raise did: the scope's standing now, and the runs told to go on."""

    scope: str
    standing: Standing
    resumed: list[str] = Field(default_factory=list)


def _asked(usd: float | None, tokens: int | None) -> Limit:
    if usd is None and tokens is None:
        raise InvalidInput("--to", "give a new limit", fix="e.g. `--to 6` (USD) or `--tokens N`.")
    return Limit(usd=usd, tokens=tokens)


async def root_of(client: Client, workflow_id: str) -> str:
    """The root run of ``workflow_id``, whose limit holds for its whole tree."""
    try:
        described = await client.get_workflow_handle(workflow_id).describe()
    except RPCError as error:
        raise InvalidInput("RUN", f"no run {workflow_id!r}: {error.message}") from None
    return described.root_id or workflow_id


async def raise_run_limit(
    client: Client, settings: Settings, workflow_id: str, usd: float | None, tokens: int | None
) -> Raised:
    """Raise the limit of ``workflow_id``'s tree and resume it."""
    limit = _asked(usd, tokens)
    root = await root_of(client, workflow_id)
    ledger = SpendLedger.from_settings(settings)
    try:
        ledger.raise_limit(run_scope(root), limit, ledger.run_standing(root).spent)
        standing = ledger.run_standing(root)
    finally:
        ledger.close()
    resumed = await _resume(client, [root])
    return Raised(scope=run_scope(root), standing=standing, resumed=resumed)


async def raise_book_limit(
    client: Client, settings: Settings, book: str, usd: float | None, tokens: int | None
) -> Raised:
    """Set ``book``'s own daily limit and resume its running runs: those that spent for it
    today or were stopped by it, and its Portfolios and AutoRuns."""
    limit = _asked(usd, tokens)
    ledger = SpendLedger.from_settings(settings)
    try:
        spent = ledger.book_standing(book, settings.budget).spent
        ledger.raise_limit(book_scope(book), limit, spent)
        standing = ledger.book_standing(book, settings.budget)
        spending = ledger.runs_of_book(book)
    finally:
        ledger.close()
    query = f"ExecutionStatus = 'Running' AND {PORTFOLIO} = {quoted(book)}"
    tagged = [run.id async for run in client.list_workflows(query) if run.parent_id is None]
    resumed = await _resume(client, sorted({*spending, *tagged}))
    return Raised(scope=book_scope(book), standing=standing, resumed=resumed)


async def _resume(client: Client, runs: list[str]) -> list[str]:
    """``resume`` sent to each of ``runs`` still running; the ones that took it."""
    told = []
    for run in runs:
        handle = client.get_workflow_handle(run)
        try:
            if (await handle.describe()).status is not WorkflowExecutionStatus.RUNNING:
                continue
            await handle.signal("resume")
        except RPCError:
            continue  # closed meanwhile: nothing of it waits
        told.append(run)
    return told
