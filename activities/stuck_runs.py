"""Runs whose workflow task keeps failing: which, why, since when, at which step of their parent.

A workflow task that fails on every attempt (an activity result the workflow cannot
decode, workflow code raising an error that is no Temporal failure) does not fail the
run: Temporal retries the task for ever, the run shows as Running, its ``progress``
query is refused ("Workflow Task in failed state") and its parent waits at the child's
step with nothing waiting. The server marks such runs itself: after
``TASK_PROBLEMS_BEFORE_REPORTED`` consecutive problems it sets the search attribute
``TemporalReportedProblems`` (``category=WorkflowTaskFailed``) and clears it once a task
succeeds. This module is the one reader of that mark, for ``quantdesk watch``, ``runs``
and ``status`` and for the console: the run, the message of its history's latest
``WorkflowTaskFailed`` event, the cause, since when, the attempts, and the step it runs
as in its parent.

A parent's own ``progress`` still says "running" for such a child: a workflow cannot read
visibility deterministically, so the readers overlay it client-side (``stuck_steps``).
"""

from __future__ import annotations

import asyncio
from datetime import UTC, datetime, timedelta

from pydantic import BaseModel, Field
from temporalio.api.common.v1 import WorkflowExecution as ExecutionRef
from temporalio.api.enums.v1 import EventType, WorkflowTaskFailedCause
from temporalio.api.history.v1 import HistoryEvent
from temporalio.api.workflowservice.v1 import GetWorkflowExecutionHistoryReverseRequest
from temporalio.client import Client, WorkflowExecution, WorkflowExecutionStatus
from temporalio.common import SearchAttributeKey
from temporalio.service import RPCError, RPCStatusCode

from shared.search_attributes import REPORTED_PROBLEMS, WORKFLOW_TASK_FAILED, quoted
from workflows.progress import RunProgress
from workflows.resume import child_label

STUCK_QUERY = f"ExecutionStatus = 'Running' AND {REPORTED_PROBLEMS} IN ('{WORKFLOW_TASK_FAILED}')"
"""The visibility query of every marked run (the Web UI's "Task Failures" view)."""
PROBLEMS = SearchAttributeKey.for_keyword_list(REPORTED_PROBLEMS)
PARENT_ANSWER_TIMEOUT = timedelta(seconds=3)
"""How long a parent may take to say which step a child is (its worker may be away)."""
MAX_DEPTH = 8
"""Ancestors followed up from a stuck run (quantdesk trees are three deep)."""
HISTORY_PAGE = 100
NOTHING_TO_READ = frozenset({RPCStatusCode.NOT_FOUND, RPCStatusCode.UNIMPLEMENTED})
"""A run gone, or a server without a visibility store (the time-skipping test server)."""
TASK_OUTCOMES = frozenset(
    {EventType.EVENT_TYPE_WORKFLOW_TASK_COMPLETED, EventType.EVENT_TYPE_WORKFLOW_TASK_FAILED}
)
CAUSE_PREFIX = "WORKFLOW_TASK_FAILED_CAUSE_"


class StuckRun(BaseModel):
    """A running run whose workflow task keeps failing, with what a person needs to unblock it."""

    workflow_id: str
    run_id: str
    workflow_type: str
    message: str = Field(description="the failure of the history's latest WorkflowTaskFailed")
    failure_type: str = Field("", description="the error's type, e.g. RuntimeError")
    cause: str = Field(description="the server's cause, e.g. workflow worker unhandled failure")
    since: datetime = Field(description="when the task first failed (retries are not recorded)")
    attempts: int = Field(description="workflow task attempts, the one scheduled now included")
    ancestors: list[str] = Field(
        default_factory=list, description="the run's parent first, up to its root"
    )
    step: str = Field("", description="the step it runs as in its parent ('' for a root)")

    @property
    def parent_id(self) -> str | None:
        """The run's parent, None for a root."""
        return self.ancestors[0] if self.ancestors else None

    def child_of(self, workflow_id: str) -> str | None:
        """The child of ``workflow_id`` that this run is or runs under; None when this run is
        not below ``workflow_id``."""
        path = [self.workflow_id, *self.ancestors]
        if workflow_id not in path[1:]:
            return None
        return path[path.index(workflow_id) - 1]

    def remedy(self) -> str:
        """What a person can do: fix and deploy the code (the run then goes on by itself) or
        end the run."""
        return (
            "Fix the workflow code (or what it cannot decode) and restart the workers that run "
            "it (`quantdesk down --roles workflows && quantdesk up`): the run then goes on by "
            f"itself. Or give it up: `temporal workflow terminate -w {self.workflow_id}` (or "
            "`temporal workflow reset` it to an earlier event)."
        )


def is_marked(run: WorkflowExecution) -> bool:
    """Whether the server marks this listed run as one whose workflow task keeps failing."""
    problems = run.typed_search_attributes.get(PROBLEMS) or []
    return run.status == WorkflowExecutionStatus.RUNNING and WORKFLOW_TASK_FAILED in problems


def listed_status(run: WorkflowExecution) -> str:
    """A listed run's status as people read it: ``stuck`` when marked, else ``running``,
    ``completed``... (``unknown`` without one)."""
    if is_marked(run):
        return "stuck"
    return run.status.name.lower() if run.status else "unknown"


async def stuck_run(client: Client, workflow_id: str, run_id: str | None = None) -> StuckRun | None:
    """The run if its workflow task keeps failing (running, the task on a later attempt, the
    history's latest task outcome a failure), else None. Read from the run itself, so it is
    seen before the server marks it, and on a server that never does."""
    handle = client.get_workflow_handle(workflow_id, run_id=run_id)
    try:
        described = await handle.describe()
    except RPCError as error:
        if error.status in NOTHING_TO_READ:
            return None
        raise
    attempt = described.raw_description.pending_workflow_task.attempt
    if described.status != WorkflowExecutionStatus.RUNNING or attempt < 2:
        return None
    failed = await _latest_task_failure(
        client, ExecutionRef(workflow_id=workflow_id, run_id=described.run_id)
    )
    if failed is None:
        return None
    details = failed.workflow_task_failed_event_attributes
    ancestors = await _ancestors(client, described.parent_id)
    return StuckRun(
        workflow_id=workflow_id,
        run_id=described.run_id,
        workflow_type=described.workflow_type,
        message=details.failure.message or "(no message)",
        failure_type=details.failure.application_failure_info.type,
        cause=WorkflowTaskFailedCause.Name(details.cause)
        .removeprefix(CAUSE_PREFIX)
        .replace("_", " ")
        .lower(),
        since=failed.event_time.ToDatetime(tzinfo=UTC),
        attempts=attempt,
        ancestors=ancestors,
        step=await _step_in_parent(client, workflow_id, described.parent_id),
    )


async def stuck_runs(
    client: Client, root_id: str | None = None, *, limit: int = 100
) -> dict[str, StuckRun]:
    """The runs the server marks as stuck, by workflow id: those of ``root_id``'s tree
    (``RootWorkflowId``), or all of them. Empty on a server without visibility."""
    query = STUCK_QUERY + (f" AND RootWorkflowId = {quoted(root_id)}" if root_id else "")
    try:
        marked = [run async for run in client.list_workflows(query, limit=limit)]
    except RPCError as error:
        if error.status in NOTHING_TO_READ:
            return {}
        raise
    read = await asyncio.gather(*(stuck_run(client, run.id, run.run_id) for run in marked))
    return {run.workflow_id: run for run in read if run is not None}


async def stuck_below(client: Client, workflow_id: str, root_id: str | None) -> dict[str, StuckRun]:
    """The run itself if it is stuck (read directly), and the marked runs below it in its tree
    (``root_id``, the run's root; None when it is one)."""
    marked = await stuck_runs(client, root_id or workflow_id)
    found = {key: run for key, run in marked.items() if run.child_of(workflow_id) is not None}
    own = marked.get(workflow_id) or await stuck_run(client, workflow_id)
    return {workflow_id: own, **found} if own is not None else found


def stuck_steps(
    workflow_id: str, progress: RunProgress | None, stuck: dict[str, StuckRun]
) -> dict[str, StuckRun]:
    """The steps of ``workflow_id`` held up by a stuck run at or below them: each child's step
    as its ``progress`` names it (its id less the parent's when it does not)."""
    steps: dict[str, StuckRun] = {}
    for run in stuck.values():
        child = run.child_of(workflow_id)
        if child is None:
            continue
        named = progress.children.get(child, "") if progress is not None else ""
        steps.setdefault(named or child_label(workflow_id, child), run)
    return steps


async def _latest_task_failure(client: Client, execution: ExecutionRef) -> HistoryEvent | None:
    """The history's latest WorkflowTaskFailed event, if no task has completed since."""
    token = b""
    while True:
        page = await client.workflow_service.get_workflow_execution_history_reverse(
            GetWorkflowExecutionHistoryReverseRequest(
                namespace=client.namespace,
                execution=execution,
                maximum_page_size=HISTORY_PAGE,
                next_page_token=token,
            )
        )
        for event in page.history.events:
            if event.event_type in TASK_OUTCOMES:
                failed = event.event_type == EventType.EVENT_TYPE_WORKFLOW_TASK_FAILED
                return event if failed else None
        token = page.next_page_token
        if not token:
            return None


async def _ancestors(client: Client, parent_id: str | None) -> list[str]:
    """``parent_id`` and its ancestors, up to the root."""
    chain: list[str] = []
    while parent_id and len(chain) < MAX_DEPTH:
        chain.append(parent_id)
        try:
            parent_id = (await client.get_workflow_handle(parent_id).describe()).parent_id
        except RPCError:
            break
    return chain


async def _step_in_parent(client: Client, workflow_id: str, parent_id: str | None) -> str:
    """The step ``workflow_id`` runs as, as its parent's progress names it; its id less the
    parent's when the parent does not say (or cannot answer now)."""
    if parent_id is None:
        return ""
    try:
        progress = await client.get_workflow_handle(parent_id).query(
            "progress", result_type=RunProgress, rpc_timeout=PARENT_ANSWER_TIMEOUT
        )
        named = progress.children.get(workflow_id, "")
    except Exception:  # its worker away, no progress query: the id still says which child
        named = ""
    return named or child_label(parent_id, workflow_id)
