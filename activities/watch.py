"""What the ``Watch`` flow looks for on the desk's Temporal server: runs that failed, runs whose
workflow task keeps failing (stuck: Temporal retries such a task for ever while the run looks
alive), and schedules that did not start a run they should have. Each finding is a ``Notice``
keyed by the run or schedule it is about, so a finding seen by two Watch runs is sent once
(``shared.notify.ledger``).
"""

from __future__ import annotations

from datetime import UTC, date, datetime

from pydantic import BaseModel, Field
from temporalio import activity
from temporalio.client import Client, WorkflowExecution
from temporalio.service import RPCError

from activities.group import activity_on
from activities.services import Services
from activities.stuck_runs import NOTHING_TO_READ, StuckRun, stuck_runs
from shared.notify.notices import Notice, NoticeKind
from shared.queues import TOOLS_QUEUE

QUIET_FLOWS = ("Notify", "Watch")
"""Flows whose own failures are not reported: a notice about a notice helps nobody."""
ENDED_BADLY = "ExecutionStatus IN ('Failed', 'TimedOut')"


class WatchRequest(BaseModel):
    """Look back this far for failed runs (what stuck runs and schedules show is current)."""

    since: datetime
    limit: int = Field(100, ge=1, le=1000, description="findings of each kind at most")


class Findings(BaseModel):
    """What the watch found, as notices."""

    notices: list[Notice]


def failed_notice(run: WorkflowExecution) -> Notice:
    """A root run that failed or timed out, with where to read why."""
    status = run.status.name.lower().replace("_", " ") if run.status else "failed"
    closed = run.close_time.isoformat(timespec="seconds") if run.close_time else "?"
    return Notice(
        kind=NoticeKind.RUN_FAILED,
        run=run.id,
        title=f"{run.workflow_type} {run.id} {status}",
        body=(
            f"{run.workflow_type} run {run.id} {status} at {closed}. Its failure and history: "
            f"`quantdesk runs --flow {run.workflow_type}` or "
            f"`temporal workflow show -w {run.id}`."
        ),
    )


def stuck_notice(run: StuckRun) -> Notice:
    """A run whose workflow task keeps failing: the error, since when, and the remedy."""
    where = f" (step {run.step} of {run.parent_id})" if run.parent_id else ""
    return Notice(
        kind=NoticeKind.RUN_STUCK,
        run=run.workflow_id,
        title=f"{run.workflow_type} {run.workflow_id} is stuck",
        body=(
            f"{run.workflow_type} run {run.workflow_id}{where}: its workflow task has failed "
            f"{run.attempts} times since {run.since.isoformat(timespec='seconds')}: "
            f"{run.message}\n\n{run.remedy()}"
        ),
    )


def missed_notice(schedule: str, missed: int, skipped: int, day: date) -> Notice:
    """A schedule that let runs go by: past its catch-up window, or skipped on overlap. Its
    counts only grow, so it is told once a day (UTC) while they do, not on every watch."""
    parts = [
        *(
            [
                f"{missed} run(s) not started within its catch-up window (the server or its "
                "workers were down)"
            ]
            if missed
            else []
        ),
        *(
            [f"{skipped} run(s) skipped because the previous one still ran (its overlap policy)"]
            if skipped
            else []
        ),
    ]
    return Notice(
        kind=NoticeKind.SCHEDULE_MISSED,
        run=f"schedule-{schedule}",
        event=day.isoformat(),
        about_run=False,
        title=f"Schedule {schedule} did not start every run",
        body=(
            f"Schedule {schedule}, since it was made: {'; '.join(parts)}. "
            f"`quantdesk schedule describe {schedule}` shows its recent runs; "
            f"`temporal schedule trigger --schedule-id {schedule}` starts one now."
        ),
    )


class WatchActivities(Services):
    """The desk's server, read for what people should be told."""

    @activity_on(TOOLS_QUEUE, "watch_desk")
    async def watch_desk(self, request: WatchRequest) -> Findings:
        """Failed root runs closed since ``request.since``, stuck runs, and schedules that
        missed or skipped runs."""
        from workers.client import connect  # a client of its own, on the tools workers only

        client = await connect(self.settings)
        notices = [
            *await _failed(client, request),
            *[
                stuck_notice(run)
                for run in (await stuck_runs(client, limit=request.limit)).values()
            ],
            *await _schedules(client, request.limit),
        ]
        activity.logger.info("watch: %d finding(s)", len(notices))
        return Findings(notices=notices)


async def _failed(client: Client, request: WatchRequest) -> list[Notice]:
    since = request.since.isoformat().replace("+00:00", "Z")
    quiet = ", ".join(f"'{flow}'" for flow in QUIET_FLOWS)
    query = f"{ENDED_BADLY} AND CloseTime > '{since}' AND WorkflowType NOT IN ({quiet})"
    try:
        ended = [run async for run in client.list_workflows(query, limit=request.limit)]
    except RPCError as error:
        if error.status in NOTHING_TO_READ:
            return []
        raise
    return [failed_notice(run) for run in ended if run.parent_id is None]


async def _schedules(client: Client, limit: int) -> list[Notice]:
    found: list[Notice] = []
    try:
        listed = [entry async for entry in await client.list_schedules()]
    except RPCError as error:
        if error.status in NOTHING_TO_READ:
            return []
        raise
    for entry in listed[:limit]:
        info = (await client.get_schedule_handle(entry.id).describe()).info
        missed, skipped = info.num_actions_missed_catchup_window, info.num_actions_skipped_overlap
        if missed or skipped:
            found.append(missed_notice(entry.id, missed, skipped, datetime.now(UTC).date()))
    return found
