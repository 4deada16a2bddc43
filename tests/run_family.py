"""An AutoRun-shaped run tree, small and fast, for the console's pages at scale.

``Family`` is registered as ``AutoRun`` (on its test's own queue) so the Run page shows it as
one: a step ``pipeline <TICKER>`` per ticker, each run by a ``Napper`` child
``<id>-pipeline-<TICKER>``. The first ``napping`` children sleep for hours and are
abandoned, as Reflect runs wait on their timers after their AutoRun has finished; the
rest finish at once, and so does its ``<id>-portfolio`` child (the page reads its outcome).
The parent completes when its quick children have.
"""

from __future__ import annotations

from datetime import timedelta

from pydantic import BaseModel
from temporalio import workflow
from temporalio.client import Client
from temporalio.worker import Worker
from temporalio.worker.workflow_sandbox import SandboxedWorkflowRunner, SandboxRestrictions

with workflow.unsafe.imports_passed_through():
    from workflows.progress import RunProgress, StepState
    from workflows.tracked import TrackedRun

PIPELINE_STEP = "pipeline "
NAP = timedelta(hours=6)


class FamilyInput(BaseModel):
    """How many tickers, and how many of their children keep waiting."""

    tickers: int
    napping: int


def ticker(n: int) -> str:
    """The n-th ticker's symbol (``T000``...), in the order the family starts them."""
    return f"T{n:03d}"


@workflow.defn(name="Napper")
class NapperWorkflow:
    """A child that finishes at once, or sleeps for hours first."""

    @workflow.run
    async def run(self, nap: bool) -> dict[str, str]:
        """Sleep if asked, then finish with no decision."""
        if nap:
            await workflow.sleep(NAP)
        return {}


@workflow.defn(name="AutoRun")
class FamilyWorkflow(TrackedRun):
    """A parent with a ``Napper`` per ticker, shown as the steps ``pipeline <TICKER>``."""

    @workflow.query(name="progress")
    def progress(self) -> RunProgress:
        """The common progress: a step per ticker."""
        return self.progress_as(RunProgress)

    @workflow.run
    async def run(self, args: FamilyInput) -> dict[str, str]:
        """Start every child, wait for the quick ones, leave the napping ones behind; a JSON
        object, as every flow's result is."""
        parent = workflow.info().workflow_id
        quick = []
        for n in range(args.tickers):
            step = PIPELINE_STEP + ticker(n)
            napping = n < args.napping
            child = await workflow.start_child_workflow(
                NapperWorkflow.run,
                napping,
                id=f"{parent}-pipeline-{ticker(n)}",
                parent_close_policy=workflow.ParentClosePolicy.ABANDON,
            )
            self.steps[step] = StepState.RUNNING
            if not napping:
                quick.append((step, child))
        for step, child in quick:
            await child
            self.steps[step] = StepState.DONE
        await workflow.execute_child_workflow(NapperWorkflow.run, False, id=f"{parent}-portfolio")
        return {"workflow_id": parent}


def family_worker(client: Client, queue: str) -> Worker:
    """A worker of both workflows on ``queue`` (use it as an async context manager)."""
    restrictions = SandboxRestrictions.default.with_passthrough_modules(__name__)
    return Worker(
        client,
        task_queue=queue,
        workflows=[FamilyWorkflow, NapperWorkflow],
        workflow_runner=SandboxedWorkflowRunner(restrictions=restrictions),
    )
