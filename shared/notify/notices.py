"""What the desk tells people: one ``Notice`` per event of a run, and who gets each kind.

A notice is keyed by its run and its event (``key``): the ledger (``shared.notify.ledger``)
sends each key once, however often the activity that sends it is retried.
"""

from __future__ import annotations

from enum import StrEnum

from pydantic import BaseModel, Field


class NoticeKind(StrEnum):
    """The events a desk reports; ``QUANTDESK_NOTIFY__ROUTES`` may send each to its own URLs."""

    APPROVAL_WAITING = "approval_waiting"
    APPROVAL_REMINDER = "approval_reminder"
    APPROVAL_ESCALATION = "approval_escalation"
    APPROVAL_OUTCOME = "approval_outcome"
    RUN_FAILED = "run_failed"
    RUN_STUCK = "run_stuck"
    DRIFT = "drift"
    SPENDING_LIMIT = "spending_limit"
    SCHEDULE_MISSED = "schedule_missed"
    TEST = "test"


class Notice(BaseModel):
    """One message about one run's event."""

    kind: NoticeKind
    run: str = Field(min_length=1, description="the workflow id the event is about")
    event: str = Field(
        "", description="tells apart two notices of one kind in one run (a second reminder)"
    )
    title: str = Field(min_length=1, max_length=250)
    body: str = Field(min_length=1, max_length=10_000)
    link: str | None = Field(None, description="the run's console page, when there is one")
    about_run: bool = Field(
        True, description="``run`` is a workflow id: the sender links its console page"
    )

    @property
    def key(self) -> str:
        """The run's event: sent once."""
        return f"{self.kind.value}:{self.event}" if self.event else self.kind.value

    def text(self) -> str:
        """The body, with the link on a line of its own."""
        return f"{self.body}\n\n{self.link}" if self.link else self.body


class Delivery(BaseModel):
    """One URL's outcome of a notice."""

    target: str = Field(description="the URL with its secrets starred")
    ok: bool
    why: str = Field("", description="what the service said, when it failed")
