"""``Watch``: tell people what went wrong on the desk while nobody looked.

Put on a schedule (`quantdesk schedule create watch --flow watch --cron "*/5 * * * *"`), each
run reads the server once (``activities.watch``): root runs that failed or timed out in the
last ``window_minutes``, runs whose workflow task keeps failing, and schedules that missed or
skipped runs; then tells each finding (``tell``) beside itself. Windows overlap on purpose,
so a run missed by one watch (a worker down) is found by the next; the notice ledger sends
each finding once.
"""

from __future__ import annotations

from datetime import timedelta

from pydantic import Field
from temporalio import workflow

with workflow.unsafe.imports_passed_through():
    from activities.watch import Findings, WatchActivities, WatchRequest
    from workflows.activity_calls import run_activity
    from workflows.inputs import RunInput
    from workflows.notify import tell
    from workflows.retries import durable

WATCH_START_TO_CLOSE = timedelta(minutes=2)


class WatchInput(RunInput):
    """How far back failed runs are looked for."""

    window_minutes: int = Field(
        15, ge=1, le=7 * 24 * 60, description="failed runs closed this long ago at most"
    )


@workflow.defn(name="Watch")
class WatchWorkflow:
    """Read the server, tell each finding; the result is what was found."""

    @workflow.run
    async def run(self, args: WatchInput) -> Findings:
        """One look at the desk."""
        since = workflow.now() - timedelta(minutes=args.window_minutes)
        found: Findings = await run_activity(
            WatchActivities.watch_desk,
            WatchRequest(since=since),
            **durable(WATCH_START_TO_CLOSE),
            summary="failed and stuck runs, missed schedules",
        )
        for notice in found.notices:
            await tell(notice)
        workflow.set_current_details(f"{len(found.notices)} finding(s) told")
        return found
