"""Evaluations and backtests: their tables side by side, each linking to its run page (where
the plot and the full Markdown table are)."""

from __future__ import annotations

from typing import Any

from fastapi import APIRouter, Request
from fastapi.responses import HTMLResponse
from temporalio.client import WorkflowExecutionStatus
from temporalio.service import RPCError

from client.desk import Desk, rpc_problem
from client.links import object_url
from client.runs import visibility_query
from console.web import desk_of, page

router = APIRouter()

STUDIES_SHOWN = 50


async def _studies(desk: Desk, flow: str) -> list[dict[str, Any]]:
    """The recent runs of ``flow`` (Evaluate or Backtest), with the result of those completed."""
    client = await desk.client()
    rows = []
    try:
        async for run in client.list_workflows(
            visibility_query(flow, None, None, running=False), limit=STUDIES_SHOWN
        ):
            done = run.status == WorkflowExecutionStatus.COMPLETED
            result = await desk.result(run.id, run.run_id) if done else None
            plot = ((result or {}).get("reports") or {}).get("plot") or (result or {}).get("chart")
            rows.append(
                {
                    "workflow_id": run.id,
                    "status": run.status.name.lower() if run.status else "unknown",
                    "started": run.start_time,
                    "result": result,
                    "plot": object_url((plot or {}).get("report")),
                }
            )
    except RPCError as error:
        raise rpc_problem(error, f"no {flow} runs") from None
    return rows


@router.get("/studies", response_class=HTMLResponse)
async def studies(request: Request) -> HTMLResponse:
    """Every recent evaluation and backtest."""
    desk = desk_of(request)
    return page(
        request,
        "studies.html",
        evaluations=await _studies(desk, "Evaluate"),
        backtests=await _studies(desk, "Backtest"),
    )
