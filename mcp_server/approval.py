"""A plan that waits for a person, as an assistant may see and answer it.

The plan is the Portfolio run's own ``plan`` query, with its digest
(``PendingPlan.digest``). An answer goes only through the run's ``approve`` or ``reject``
update carrying that digest, so the workflow itself refuses an answer to a plan that is
no longer the one waiting. Approving is off unless ``QUANTDESK_MCP__ALLOW_APPROVE`` is
true, and even then a person must confirm it where the host can ask (elicitation); a
declined, cancelled or impossible question never approves.
"""

from __future__ import annotations

from decimal import Decimal

from pydantic import BaseModel, Field

from client.books import answer_plan, read_plan, waiting_plan
from client.desk import Desk
from client.errors import Conflict
from mcp_server.contracts import ApprovalOutcome, PlanView
from shared.config import MCP_APPROVE_SETTING
from workflows.portfolio import ApprovalRequest, PendingPlan

VIA = "via an MCP host"
"""Added to who answered, so the book's record says where the answer came from."""


class Confirmation(BaseModel):
    """The form a person fills to approve (flat fields only: what hosts render)."""

    approve: bool = Field(description="Trade these orders now?")
    by: str = Field("", max_length=100, description="Your name, recorded with the approval")


class HostCannotAsk(BaseModel):
    """Stands for the person's answer when the host declared no elicitation: nobody was
    asked, so nothing is approved."""


async def plan_view(desk: Desk, workflow_id: str) -> PlanView:
    """The plan of ``workflow_id`` (a Portfolio or AutoRun run) with its hash."""
    target, pending = await read_plan(desk, workflow_id)
    return PlanView(
        workflow_id=target,
        portfolio=pending.portfolio,
        awaiting_approval=pending.awaiting_approval,
        plan_hash=pending.digest(),
        orders=[order.model_dump(mode="json") for order in pending.plan.orders],
        rejected=[order.model_dump(mode="json") for order in pending.plan.rejected],
        decision=pending.decision.model_dump(mode="json"),
    )


def approvals_allowed(allowed: bool, tool: str = "approve_plan") -> None:
    """Refuse a tool that spends (approve_plan, raise_budget) unless the setting allows it,
    naming the setting."""
    if not allowed:
        raise Conflict(
            f"{tool} is off on this server: a person does it with the `quantdesk` command or "
            f"in the console, or sets {MCP_APPROVE_SETTING}=true to allow this host"
        )


def question(target: str, pending: PendingPlan) -> str:
    """What the person is asked: every order, its value, and the plan's hash."""
    orders = pending.plan.orders
    spent = sum((order.est_cash_change for order in orders), Decimal(0))
    lines = [
        f"Approve {len(orders)} order(s) for book {pending.portfolio} "
        f"(run {target}, plan {pending.digest()})?",
        *(
            f"- {order.side.value} {order.shares} {order.symbol} at ~{order.fill_price} "
            f"(~{order.est_value})"
            for order in orders
        ),
        f"Cash change: {spent:+,.2f}",
    ]
    return "\n".join(lines)


async def answer(
    desk: Desk,
    workflow_id: str,
    plan_hash: str,
    verb: str,
    by: str,
    note: str,
) -> ApprovalOutcome:
    """Send ``approve`` or ``reject`` (``verb``) for the plan of ``plan_hash``, through the run's
    update that checks the hash again."""
    target, _ = await waiting_plan(desk, workflow_id, plan_hash)
    who = f"{by or 'a person'} {VIA}"
    asked = ApprovalRequest(by=who, note=note, plan_hash=plan_hash)
    done = await answer_plan(desk, target, verb, asked)
    return ApprovalOutcome(
        workflow_id=target, answered=True, status=done.status.value, message=done.message
    )


def not_confirmed(target: str, why: str) -> ApprovalOutcome:
    """The outcome of an approval nobody confirmed: the plan still waits."""
    return ApprovalOutcome(
        workflow_id=target,
        answered=False,
        status="not_confirmed",
        message=f"not approved: {why}; the plan still waits for a person",
    )
