"""`quantdesk run ... --estimate`: what a run should cost, from the desk's past runs like it.

"Like it" is the same flow, the same provider and models, and the same size: the input's
fields less those that name *what* is analysed or *when* (the ticker, the as-of time, the
book, the limits, the language), so a Pipeline of four analysts and two debate rounds is
compared with others of four and two. Each past run's calls, tokens and dollars are its
whole tree's, read from the spending ledger (``shared.spending``); the estimate is their
mean, with the range they spanned and two standard deviations around the mean, whichever is
wider, as its spread.
"""

from __future__ import annotations

import logging
import statistics
from typing import Any

from pydantic import BaseModel, ValidationError
from rich.table import Table
from temporalio.api.enums.v1 import EventType
from temporalio.client import Client
from temporalio.service import RPCError

from shared.config import Settings
from shared.spending.ledger import RunTotals, SpendLedger
from workflows.catalog import WORKFLOWS
from workflows.inputs import RunInput, run_input_model

log = logging.getLogger(__name__)
NOT_SIZE = frozenset(
    {
        "symbol",
        "symbols",
        "as_of",
        "portfolio",
        "book",
        "budget_usd",
        "budget_tokens",
        "language",
        "scan_summary",
        "decisions",
        "decisions_key",
        "initial_cash",
        "csv_path",
        "bars",
        "macro_context",
        "macro_context_key",
        "watchlist",
    }
)
"""Input fields that say what or when, not how much: left out of a run's size."""
PAST_RUNS = 50
"""Closed runs of the flow looked at, newest first."""
LIKE_RUNS = 10
"""Runs like this one the estimate is made from, at most."""


def input_model(flow: str) -> type[RunInput] | None:
    """The input model of the workflow type ``flow``."""
    for workflow_class in WORKFLOWS:
        definition = workflow_class.__temporal_workflow_definition  # type: ignore[attr-defined]
        if definition.name == flow:
            return run_input_model(definition.run_fn)
    return None


def size_of(flow: str, payload: dict[str, Any]) -> dict[str, Any] | None:
    """The fields of a run's input that make it bigger or smaller, its defaults filled in, the
    model choice with them (and how many names it analyses); None when it is not valid."""
    model = input_model(flow)
    if model is not None:
        try:
            payload = model.model_validate(payload).model_dump(mode="json")
        except ValidationError:
            return None
    size = {key: value for key, value in payload.items() if key not in NOT_SIZE}
    names = payload.get("symbols")
    if isinstance(names, list):
        size["names"] = len(names)
    llm = dict(payload.get("llm") or {})
    llm.pop("sample", None)
    size["llm"] = {key: value for key, value in llm.items() if value is not None}
    return size


class Range(BaseModel):
    """A quantity's mean and its spread."""

    mean: float
    low: float
    high: float

    @classmethod
    def of(cls, values: list[float]) -> Range:
        """Mean, and the wider of the range seen and two standard deviations either side."""
        mean = statistics.fmean(values)
        wide = 2 * statistics.stdev(values) if len(values) > 1 else 0.0
        return cls(
            mean=mean,
            low=max(0.0, min(min(values), mean - wide)),
            high=max(max(values), mean + wide),
        )

    def holds(self, value: float) -> bool:
        """Whether ``value`` is within the spread."""
        return self.low <= value <= self.high


class Estimate(BaseModel):
    """What a run should cost, and from how many runs like it."""

    flow: str
    runs: list[str]
    calls: Range | None = None
    tokens: Range | None = None
    usd: Range | None = None


async def _input_of(client: Client, workflow_id: str) -> dict[str, Any] | None:
    """The JSON input a past run started with (its history's first event)."""
    async for event in client.get_workflow_handle(workflow_id).fetch_history_events():
        if event.event_type != EventType.EVENT_TYPE_WORKFLOW_EXECUTION_STARTED:
            return None
        payloads = event.workflow_execution_started_event_attributes.input.payloads
        if not payloads:
            return {}
        [given] = await client.data_converter.decode(payloads[:1], [dict])
        return given if isinstance(given, dict) else None
    return None


async def estimate(
    client: Client, settings: Settings, flow: str, payload: dict[str, Any]
) -> Estimate:
    """From the newest completed root runs of ``flow`` of the same size as ``payload``."""
    wanted = size_of(flow, payload)
    query = f"WorkflowType = '{flow}' AND ExecutionStatus = 'Completed'"
    like: list[str] = []
    totals: list[RunTotals] = []
    ledger = SpendLedger.from_settings(settings)
    try:
        async for run in client.list_workflows(query, limit=PAST_RUNS):
            if run.parent_id is not None:
                continue
            try:
                given = await _input_of(client, run.id)
            except Exception as error:  # gone, stored or sealed where this client cannot read
                log.debug("estimate: %s's input not read: %s", run.id, error)
                continue
            if given is None or size_of(flow, given) != wanted:
                continue
            spent = ledger.run_totals(run.id)
            if spent.calls:
                like.append(run.id)
                totals.append(spent)
            if len(like) == LIKE_RUNS:
                break
    except RPCError:
        pass  # a server without visibility knows no past runs
    finally:
        ledger.close()
    if not totals:
        return Estimate(flow=flow, runs=[])
    return Estimate(
        flow=flow,
        runs=like,
        calls=Range.of([float(t.calls) for t in totals]),
        tokens=Range.of([float(t.tokens) for t in totals]),
        usd=Range.of([t.usd for t in totals]),
    )


def estimate_table(found: Estimate) -> Table | str:
    """The estimate as a table, or why there is none."""
    if found.calls is None or found.tokens is None or found.usd is None:
        return (
            f"No completed {found.flow} run of this size, provider and models is in the "
            "desk's spending ledger yet: run one, then ask again."
        )
    table = Table(title=f"{found.flow}: expected from {len(found.runs)} past run(s) like it")
    for column in ("", "expected", "spread"):
        table.add_column(column)
    table.add_row(
        "calls", f"{found.calls.mean:,.0f}", f"{found.calls.low:,.0f} to {found.calls.high:,.0f}"
    )
    table.add_row(
        "tokens",
        f"{found.tokens.mean:,.0f}",
        f"{found.tokens.low:,.0f} to {found.tokens.high:,.0f}",
    )
    table.add_row(
        "cost", f"${found.usd.mean:,.2f}", f"${found.usd.low:,.2f} to ${found.usd.high:,.2f}"
    )
    return table
