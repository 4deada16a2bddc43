"""A book as every door reads it at one clock, its plans that wait for a person (in a Portfolio run
or an AutoRun's Portfolio child), and the answer to
one of them (bound to the plan's hash, so an answer to a plan that has since changed is refused)."""

from __future__ import annotations

import asyncio
from datetime import datetime
from typing import Any

from temporalio.client import WorkflowUpdateFailedError
from temporalio.exceptions import ApplicationError
from temporalio.service import RPCError

from activities.portfolio import LoadRequest, RiskRequest
from client.desk import Desk, rpc_problem
from client.errors import Conflict, NotFound
from client.runs import visibility_query
from workflows.portfolio import ApprovalAnswer, ApprovalRequest, PendingPlan

ANSWERS = ("approve", "reject")


async def valued_at(desk: Desk, name: str, clock: datetime) -> dict[str, Any]:
    """The book valued at its paper clock's closes, and its risk (or why they are not known).
    Kept by (book, clock): a new trade or snapshot moves the clock."""

    async def value() -> dict[str, Any]:
        loaded = await asyncio.to_thread(
            desk.book_io.load_portfolio, LoadRequest(portfolio=name, as_of=clock)
        )
        risk = await asyncio.to_thread(
            desk.book_io.compute_risk, RiskRequest(valuation=loaded.valuation)
        )
        return {"valuation": loaded.valuation, "risk": risk}

    try:
        return await desk.kept(("valued", name, clock), value)
    except ApplicationError as error:
        return {"problem": error.message}


async def pending_plans(desk: Desk, name: str) -> list[dict[str, Any]]:
    """The book's Portfolio runs that wait for an approval, with their plans."""
    client = await desk.client()
    query = visibility_query("Portfolio", None, name, running=True)
    waiting = []
    try:
        async for run in client.list_workflows(query):
            plan = await desk.query(client.get_workflow_handle(run.id), "plan")
            if plan and plan.get("awaiting_approval"):
                waiting.append({"workflow_id": run.id, "plan": plan})
    except RPCError as error:
        raise rpc_problem(error, f"no runs of {name}") from None
    return waiting


async def answer_plan(
    desk: Desk, workflow_id: str, answer: str, asked: ApprovalRequest
) -> ApprovalAnswer:
    """Send the Portfolio run's ``approve`` or ``reject`` update (the only way a plan is
    answered); ``Conflict`` with the run's reason when it refuses (answered already, another
    plan's hash), or once it has closed."""
    handle = await desk.running(workflow_id, "no approval waits there any more")
    try:
        return await handle.execute_update(answer, asked, result_type=ApprovalAnswer)
    except WorkflowUpdateFailedError as error:
        cause = getattr(error.cause, "message", None) or str(error)
        raise Conflict(f"{answer} refused by {workflow_id}: {cause}") from None
    except RPCError as error:
        raise rpc_problem(error, f"no run with id {workflow_id!r}") from None


async def portfolio_run(desk: Desk, workflow_id: str) -> str:
    """The Portfolio run a plan of ``workflow_id`` waits in: the run itself, or an AutoRun's
    Portfolio child."""
    _, described = await desk.described(workflow_id)
    if described.workflow_type == "Portfolio":
        return workflow_id
    if described.workflow_type == "AutoRun":
        return f"{workflow_id}-portfolio"
    raise NotFound(
        f"{workflow_id} is a {described.workflow_type} run: plans wait in Portfolio and AutoRun runs"
    )


async def read_plan(desk: Desk, workflow_id: str) -> tuple[str, PendingPlan]:
    """The Portfolio run's id and its sized plan; ``NotFound`` before it has one."""
    target = await portfolio_run(desk, workflow_id)
    handle, _ = await desk.described(target)
    raw = await desk.query(handle, "plan")
    if raw is None:
        raise NotFound(
            f"{target} has no plan yet (it is still deciding): read it once the run waits"
        )
    return target, PendingPlan.model_validate(raw)


async def waiting_plan(
    desk: Desk, workflow_id: str, plan_hash: str | None
) -> tuple[str, PendingPlan]:
    """The plan ``plan_hash`` names (None: the plan waiting now, for a door that shows it and
    then binds its answer to it), still waiting; ``Conflict`` when it has been answered or the
    hash is not the waiting plan's."""
    target, pending = await read_plan(desk, workflow_id)
    if not pending.awaiting_approval:
        raise Conflict(f"{target} is not waiting for an approval: it was answered, or has ended")
    if plan_hash is not None and plan_hash != pending.digest():
        raise Conflict(
            f"plan hash {plan_hash!r} does not match the plan waiting in {target} "
            f"({pending.digest()}): read the plan again and show it before answering"
        )
    return target, pending
