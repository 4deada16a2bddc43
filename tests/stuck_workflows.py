"""A run tree whose child's workflow task keeps failing, for the tests of every place that shows it.

``Poisoned`` raises a plain ``RuntimeError`` in its workflow code (no Temporal failure), so
its workflow task fails on every attempt and the run stays Running; an id in ``HEALED``
stops failing, as if the fix had been deployed, and ends at the ``finish`` signal. ``StuckParent`` runs it as its step
``poisoned`` and answers the common ``progress`` query (``TrackedRun``). The child's
workflow task timeout is 1 s: the Python SDK reports only a task's first failure and lets
later attempts time out, so the server marks the child (after
``TASK_PROBLEMS_BEFORE_REPORTED`` problems) within about a second instead of ten.

This module is passed through the sandbox (``stuck_worker``), so ``HEALED`` is the test's own.
"""

from __future__ import annotations

import asyncio
import uuid
from datetime import timedelta

from temporalio import workflow
from temporalio.client import Client
from temporalio.worker import Worker
from temporalio.worker.workflow_sandbox import SandboxedWorkflowRunner, SandboxRestrictions

with workflow.unsafe.imports_passed_through():
    from activities.stuck_runs import StuckRun, stuck_runs
    from workflows.progress import RunProgress
    from workflows.tracked import TrackedRun

POISON_MESSAGE = "poisoned: the workflow cannot read its input"
POISONED_STEP = "poisoned"
CHILD_TASK_TIMEOUT = timedelta(seconds=1)
MARKED_WITHIN = 30.0
"""Seconds the server may take to mark the child (about 1 here)."""
HEALED: set[str] = set()


@workflow.defn(name="Poisoned")
class PoisonedWorkflow:
    """A run whose workflow code raises on every attempt until its id is healed; then it goes
    on, and ends at the ``finish`` signal."""

    def __init__(self) -> None:
        self.finishing = False

    @workflow.signal
    def finish(self) -> None:
        """End the healed run."""
        self.finishing = True

    @workflow.run
    async def run(self) -> str:
        """Fail the workflow task (a bug), or once healed wait for ``finish``."""
        if workflow.info().workflow_id not in HEALED:
            raise RuntimeError(POISON_MESSAGE)
        await workflow.wait_condition(lambda: self.finishing)
        return "healed"


@workflow.defn(name="StuckParent")
class StuckParentWorkflow(TrackedRun):
    """A parent waiting on its ``Poisoned`` child ``<id>-poisoned`` at the step ``poisoned``."""

    def __init__(self) -> None:
        super().__init__(POISONED_STEP)

    @workflow.query(name="progress")
    def progress(self) -> RunProgress:
        """The common progress: the step, and the child it runs."""
        return self.progress_as(RunProgress)

    @workflow.run
    async def run(self) -> str:
        """Run the poisoned child and return what it returns."""
        self.open_gate()
        child_id = f"{workflow.info().workflow_id}-{POISONED_STEP}"
        self.child_started(child_id, POISONED_STEP)
        return await self._step(
            POISONED_STEP,
            workflow.execute_child_workflow(
                PoisonedWorkflow.run, id=child_id, task_timeout=CHILD_TASK_TIMEOUT
            ),
        )


def stuck_worker(client: Client, queue: str) -> Worker:
    """A worker of both workflows on ``queue`` (use it as an async context manager)."""
    restrictions = SandboxRestrictions.default.with_passthrough_modules(__name__)
    return Worker(
        client,
        task_queue=queue,
        workflows=[StuckParentWorkflow, PoisonedWorkflow],
        workflow_runner=SandboxedWorkflowRunner(restrictions=restrictions),
    )


async def start_stuck_tree(client: Client, queue: str, prefix: str) -> tuple[str, str]:
    """Start a ``StuckParent``; its workflow id and its poisoned child's."""
    parent_id = f"{prefix}-{uuid.uuid4().hex[:6]}"
    await client.start_workflow(StuckParentWorkflow.run, id=parent_id, task_queue=queue)
    return parent_id, f"{parent_id}-{POISONED_STEP}"


async def until_marked(client: Client, root_id: str, workflow_id: str) -> dict[str, StuckRun]:
    """Poll ``stuck_runs`` of ``root_id``'s tree until it holds ``workflow_id`` (bounded)."""
    loop = asyncio.get_running_loop()
    deadline = loop.time() + MARKED_WITHIN
    while workflow_id not in (found := await stuck_runs(client, root_id)):
        assert loop.time() < deadline, f"{workflow_id} not marked within {MARKED_WITHIN}s"
        await asyncio.sleep(0.2)
    return found
