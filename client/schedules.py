"""Temporal Schedules of the desk's flows: which flows can be scheduled, a schedule's request
checked before it is created (cron, time zone, input), the listed schedules, and pause, unpause
and trigger."""

from __future__ import annotations

from datetime import timedelta
from typing import Any
from zoneinfo import ZoneInfo, ZoneInfoNotFoundError

from pydantic import BaseModel, ValidationError
from temporalio.client import (
    Client,
    Schedule,
    ScheduleActionStartWorkflow,
    ScheduleOverlapPolicy,
    SchedulePolicy,
    ScheduleSpec,
    ScheduleState,
)
from temporalio.service import RPCError

from client.desk import Desk, rpc_problem
from client.errors import NotFound
from shared.config import Settings
from shared.errors import InvalidInput
from shared.validation_errors import describe_validation_error
from workflows.autorun import AutoRunInput
from workflows.pipeline_contracts import PipelineInput
from workflows.quantagent import QuantAgentInput
from workflows.reconcile import ReconcileInput
from workflows.record_social import RecordSocialInput
from workflows.scan import ScanInput
from workflows.watch import WatchInput

SCHEDULABLE: dict[str, tuple[str, type[BaseModel]]] = {
    "autorun": ("AutoRun", AutoRunInput),
    "quantagent": ("QuantAgent", QuantAgentInput),
    "pipeline": ("Pipeline", PipelineInput),
    "scan": ("Scan", ScanInput),
    "reconcile": ("Reconcile", ReconcileInput),
    "record-social": ("RecordSocial", RecordSocialInput),
    "watch": ("Watch", WatchInput),
}
"""``--flow`` name → (workflow type, input model checked at creation)."""


DEFAULT_CATCHUP = timedelta(hours=1)


class ScheduleRequest(BaseModel):
    """Everything ``schedule create`` needs, checked before anything reaches the server."""

    name: str
    flow: str
    cron: str
    tz: str
    workflow_input: dict[str, Any]
    catchup: timedelta = DEFAULT_CATCHUP
    paused: bool = False


def _checked(request: ScheduleRequest) -> tuple[str, dict[str, Any]]:
    """The workflow type and the validated input; bad options fail naming the option."""
    if request.flow not in SCHEDULABLE:
        raise InvalidInput(
            "--flow", f"unknown flow {request.flow!r}", fix=f"Use one of: {', '.join(SCHEDULABLE)}."
        )
    if len(request.cron.split()) != 5:
        raise InvalidInput(
            "--cron",
            f"{request.cron!r} is not a 5-field cron expression",
            fix='Give minute hour day-of-month month day-of-week, e.g. "30 15 * * 1-5".',
        )
    try:
        ZoneInfo(request.tz)
    except (ZoneInfoNotFoundError, ValueError):
        raise InvalidInput(
            "--tz",
            f"unknown time zone {request.tz!r}",
            fix="Use an IANA name, e.g. America/New_York.",
        ) from None
    workflow_type, model = SCHEDULABLE[request.flow]
    try:
        model.model_validate(request.workflow_input)
    except ValidationError as error:
        problems = describe_validation_error(error)
        raise InvalidInput("--input", f"not a valid {workflow_type} input ({problems})") from None
    return workflow_type, request.workflow_input


async def create_schedule(client: Client, settings: Settings, request: ScheduleRequest) -> str:
    """Create the schedule; its runs get ids ``<name>-<scheduled time>``."""
    workflow_type, workflow_input = _checked(request)
    await client.create_schedule(
        request.name,
        Schedule(
            action=ScheduleActionStartWorkflow(
                workflow_type,
                workflow_input,
                id=request.name,
                task_queue=settings.queues.workflows,
                static_summary=f"{workflow_type} from schedule {request.name}",
            ),
            spec=ScheduleSpec(cron_expressions=[request.cron], time_zone_name=request.tz),
            policy=SchedulePolicy(
                overlap=ScheduleOverlapPolicy.SKIP, catchup_window=request.catchup
            ),
            state=ScheduleState(
                paused=request.paused, note=f"quantdesk schedule create {request.flow}"
            ),
        ),
        # The server turns cron into calendar specs; the memo keeps what the user wrote.
        memo={"cron": request.cron, "flow": request.flow},
    )
    return workflow_type


SCHEDULE_VERBS = ("pause", "unpause", "trigger")


class ScheduleRow(BaseModel, frozen=True):
    """One schedule: its flow, cron, whether paused, next run and runs so far."""

    name: str
    flow: str
    cron: str
    time_zone: str
    paused: bool
    next_run: str
    runs: int


async def schedule_rows(desk: Desk) -> list[ScheduleRow]:
    """Every schedule of the namespace (the cron as written at creation, else the spec's)."""
    client = await desk.client()
    rows = []
    try:
        async for listed in await client.list_schedules():
            described = await client.get_schedule_handle(listed.id).describe()
            schedule = described.schedule
            action = schedule.action
            spec = schedule.spec
            nexts = described.info.next_action_times
            written = ", ".join(spec.cron_expressions) or "?"
            rows.append(
                ScheduleRow(
                    name=listed.id,
                    flow=action.workflow
                    if isinstance(action, ScheduleActionStartWorkflow)
                    else "?",
                    cron=str(await described.memo_value("cron", written)),
                    time_zone=spec.time_zone_name or "UTC",
                    paused=schedule.state.paused,
                    next_run=nexts[0].isoformat() if nexts else "",
                    runs=described.info.num_actions,
                )
            )
    except RPCError as error:
        raise rpc_problem(error, "no schedules") from None
    return rows


async def act_on_schedule(desk: Desk, name: str, verb: str) -> None:
    """Pause, unpause or trigger schedule ``name``; ``NotFound`` for another verb or name."""
    if verb not in SCHEDULE_VERBS:
        raise NotFound(f"no schedule action {verb!r}: use {', '.join(SCHEDULE_VERBS)}")
    handle = (await desk.client()).get_schedule_handle(name)
    try:
        act: Any = getattr(handle, verb)
        await act()
    except RPCError as error:
        raise rpc_problem(error, f"no schedule called {name!r}") from None


async def delete_schedule(desk: Desk, name: str) -> None:
    """Delete schedule ``name`` (runs it started go on); ``NotFound`` for an unknown name. Only
    the CLI offers it: a page or an assistant cannot delete what a person set up."""
    try:
        await (await desk.client()).get_schedule_handle(name).delete()
    except RPCError as error:
        raise rpc_problem(error, f"no schedule called {name!r}") from None
