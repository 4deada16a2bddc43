"""Evaluations and backtests as every door lists them: the recent runs of each, with the result
of those completed and the address of their plot."""

from __future__ import annotations

from datetime import datetime
from typing import Any

from pydantic import BaseModel
from temporalio.client import WorkflowExecutionStatus
from temporalio.service import RPCError

from client.desk import Desk, rpc_problem
from client.links import object_url
from client.runs import visibility_query

STUDIES_SHOWN = 50


class Study(BaseModel):
    """One evaluation or backtest run."""

    workflow_id: str
    status: str
    started: datetime
    result: dict[str, Any] | None
    """Its result once it completed (JSON, as its flow's contract holds it)."""
    plot: str | None
    """The console's address of its plot, when it made one."""


async def studies(desk: Desk, flow: str) -> list[Study]:
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
                Study(
                    workflow_id=run.id,
                    status=run.status.name.lower() if run.status else "unknown",
                    started=run.start_time,
                    result=result,
                    plot=object_url((plot or {}).get("report")),
                )
            )
    except RPCError as error:
        raise rpc_problem(error, f"no {flow} runs") from None
    return rows
