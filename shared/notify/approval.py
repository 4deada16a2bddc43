"""What people are told while a plan waits for them: the plan, how to answer, and the end.

A Portfolio run with ``approval: required`` tells its approvers four things at most, each
once (``workflows.portfolio``): the plan waits (what it would trade, in which book, and the
commands that answer it), a reminder after ``QUANTDESK_NOTIFY__REMIND_AFTER``, an
escalation to ``QUANTDESK_NOTIFY__ESCALATE_URLS`` before the approval times out, and the
outcome. The console link is added by the sending step, which knows where the console is.
"""

from __future__ import annotations

from datetime import timedelta

from pydantic import BaseModel

from shared.notify.notices import Notice, NoticeKind
from shared.portfolio.orders import OrderPlan

ORDERS_LISTED = 20
"""Orders spelled out in a notice at most; the rest are counted (the console lists all)."""


class Mark(BaseModel):
    """Tell people again (``kind``) this long after the wait began, if still unanswered."""

    after: timedelta
    kind: NoticeKind


def approval_marks(
    timeout: timedelta, remind_after: timedelta, escalate_before: timedelta
) -> list[Mark]:
    """The moments after the wait begins at which to tell people again, in order: the
    escalation ``escalate_before`` the timeout (at half of it when the timeout is shorter),
    the reminder ``remind_after`` the start if that comes before the escalation."""
    escalation = max(timeout - escalate_before, timeout / 2)
    marks = [Mark(after=escalation, kind=NoticeKind.APPROVAL_ESCALATION)]
    if remind_after < escalation:
        marks.insert(0, Mark(after=remind_after, kind=NoticeKind.APPROVAL_REMINDER))
    return marks


def _orders(plan: OrderPlan) -> list[str]:
    lines = [
        f"{order.side.value} {order.shares} {order.symbol} at about ${order.fill_price:,.2f} "
        f"(${order.est_value:,.2f})"
        for order in plan.orders[:ORDERS_LISTED]
    ]
    if len(plan.orders) > ORDERS_LISTED:
        lines.append(f"... and {len(plan.orders) - ORDERS_LISTED} more orders")
    return lines


def _answer(run: str) -> str:
    return (
        f"Answer with `quantdesk approve {run}` or `quantdesk reject {run}` "
        "(or the console's buttons, or the MCP tool approve_plan)."
    )


def waiting_notice(
    run: str, portfolio: str, plan: OrderPlan, timeout: timedelta, kind: NoticeKind
) -> Notice:
    """The plan waits (``APPROVAL_WAITING``), still waits (``APPROVAL_REMINDER``) or is
    about to expire (``APPROVAL_ESCALATION``): the orders and how to answer."""
    minutes = int(timeout.total_seconds() // 60)
    heading = {
        NoticeKind.APPROVAL_WAITING: f"{portfolio}: a plan of {len(plan.orders)} orders waits "
        "for approval",
        NoticeKind.APPROVAL_REMINDER: f"Reminder: {portfolio}'s plan still waits for approval",
        NoticeKind.APPROVAL_ESCALATION: f"Escalation: {portfolio}'s plan expires unanswered soon",
    }[kind]
    lines = [
        f"Run {run} proposes, for book {portfolio}:",
        *_orders(plan),
        "",
        f"Unanswered within {minutes} minutes of the first notice, nothing is traded.",
        _answer(run),
    ]
    return Notice(kind=kind, run=run, title=heading, body="\n".join(lines))


def outcome_notice(run: str, portfolio: str, status: str, note: str | None) -> Notice:
    """How the wait ended: approved, rejected or expired, and by whom or why."""
    said = f": {note}" if note else ""
    return Notice(
        kind=NoticeKind.APPROVAL_OUTCOME,
        run=run,
        title=f"{portfolio}: the plan was {status}",
        body=f"Run {run}'s plan for book {portfolio} was {status}{said}.",
    )
