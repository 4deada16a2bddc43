"""Starting a flow from its input, as every door does: the flows that can be started, each with its
workflow type and input model, the AutoRun's names checked against the data, and the start itself
on the workflows queue under an id that names the flow and its subject."""

from __future__ import annotations

from typing import Any

from pydantic import BaseModel
from temporalio.service import RPCError

from client.desk import Desk, rpc_problem
from client.errors import NotFound
from client.inputs import new_workflow_id
from client.schedules import SCHEDULABLE
from shared.config import Settings
from shared.watchlists.edits import WatchlistEdits
from workflows.backtest import BacktestInput
from workflows.portfolio import PortfolioInput

STARTABLE: dict[str, tuple[str, type[BaseModel]]] = {
    **SCHEDULABLE,
    "portfolio": ("Portfolio", PortfolioInput),
    "backtest": ("Backtest", BacktestInput),
}
"""Form name → (workflow type, input model): the schedulable flows, a Portfolio run and a
backtest. An evaluation names its windows as structured data: `quantdesk eval` starts it."""


ID_PARTS = ("symbol", "portfolio")
"""Input fields that also name the run (``pipeline-GOOG-<stamp>``, ``autorun-desk-...``)."""


def startable(name: str) -> tuple[str, type[BaseModel]]:
    """The workflow type and input model of a startable flow; ``NotFound`` naming the others."""
    if name not in STARTABLE:
        raise NotFound(f"no flow {name!r} to start: use one of {', '.join(STARTABLE)}")
    return STARTABLE[name]


async def start_flow(desk: Desk, flow: str, payload: dict[str, Any], source: str) -> str:
    """Start ``flow`` (a ``STARTABLE`` name) with ``payload``, already checked by its model,
    under an id like the CLI's; its workflow id. ``source`` says who started it."""
    workflow_type, _ = startable(flow)
    workflow_id = new_workflow_id(flow, *(str(payload[p]) for p in ID_PARTS if p in payload))
    try:
        await (await desk.client()).start_workflow(
            workflow_type,
            payload,
            id=workflow_id,
            task_queue=desk.settings.queues.workflows,
            static_summary=f"{workflow_type} from {source}",
        )
    except RPCError as error:
        raise rpc_problem(error, f"cannot start {workflow_type}") from None
    return workflow_id


def check_autorun_names(settings: Settings, payload: dict[str, Any]) -> None:
    """Refuse an unknown watchlist, or an unknown symbol (each named), before a run starts."""
    WatchlistEdits(settings).check_autorun_names(payload)
