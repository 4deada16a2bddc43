"""Sending a notice: the ``Notify`` flow's one step, on a tools worker.

Each URL is asked of the ledger first and recorded as soon as it took the notice, so a retry
sends only where the notice did not arrive (``shared.notify.ledger``). When some URL failed,
the step fails with their reasons and Temporal retries it; the run the notice is about never
waits for it (``workflows.notify.tell``).
"""

from __future__ import annotations

from datetime import timedelta
from functools import cached_property

from pydantic import BaseModel, Field
from temporalio.exceptions import ApplicationError

from activities.group import activity_on
from activities.services import Services
from shared.notify.approval import Mark, approval_marks
from shared.notify.ledger import NoticeLedger
from shared.notify.notices import Delivery, Notice
from shared.queues import TOOLS_QUEUE


class NoticeSent(BaseModel):
    """Where a notice went this time, and how many URLs had it already."""

    deliveries: list[Delivery]
    had_it: int = Field(0, description="URLs the ledger says took it on an earlier attempt")


class NotifyActivities(Services):
    """Notices to people, each once per run, event and URL."""

    @cached_property
    def ledger(self) -> NoticeLedger:
        """The notices sent, in the desk's database."""
        return NoticeLedger.from_settings(self.settings)

    @activity_on(TOOLS_QUEUE, "send_notice")
    def send_notice(self, notice: Notice) -> NoticeSent:
        """``notice`` to every URL of its kind that did not take it yet."""
        from shared.notify.sender import deliver, target_id  # Apprise: on the tools workers only

        config = self.settings.notify
        if notice.link is None and notice.about_run:
            notice = notice.model_copy(update={"link": self.settings.console.run_page(notice.run)})
        had = self.ledger.sent(notice.run, notice.key)
        deliveries: list[Delivery] = []
        for url in config.urls_of(notice.kind):
            target = target_id(url)
            if target in had:
                continue
            delivery = deliver(notice, url, config.timeout_seconds)
            if delivery.ok:
                self.ledger.record(notice.run, notice.key, target)
            deliveries.append(delivery)
        failed = [d for d in deliveries if not d.ok]
        if failed:
            raise ApplicationError(
                f"{len(failed)} of {len(deliveries)} notifier(s) did not take the notice: "
                + "; ".join(f"{d.target}: {d.why}" for d in failed),
                type="NotifierFailed",
            )
        return NoticeSent(deliveries=deliveries, had_it=len(had))

    @activity_on(TOOLS_QUEUE, "approval_marks")
    def approval_marks(self, timeout: timedelta) -> list[Mark]:
        """When this desk reminds and escalates a plan waiting up to ``timeout``: from its
        settings, read once per wait so the run's timers are in its history."""
        config = self.settings.notify
        return approval_marks(timeout, config.remind_after, config.escalate_before)
