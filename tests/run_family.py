"""An AutoRun-shaped run tree, small and fast, for the console's pages at scale.

``Family`` is registered as ``AutoRun`` (on its test's own queue) so the Run page shows it as
one: a step ``pipeline <TICKER>`` per ticker, each run by a ``Napper`` child
``<id>-pipeline-<TICKER>``. The first ``napping`` children sleep for hours and are
abandoned, as Reflect runs wait on their timers after their AutoRun has finished; the
rest finish at once, and so does its ``<id>-portfolio`` child (the page reads its outcome).
The parent completes when its quick children have.

With ``batched``, its first tickers are run instead by one ``Batch`` child
``<id>-batch-1`` (step ``batch 1``), as a large AutoRun's ``PipelineBatch`` runs them: the
batch finishes its first ticker at once and holds the others until signalled ``release``,
while the parent shows them all running until the batch returns.
"""

from __future__ import annotations

import asyncio
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
BATCH_STEP = "batch 1"
NAP = timedelta(hours=6)


class FamilyInput(BaseModel):
    """How many tickers, how many of their children keep waiting, and how many (after
    those) a batch child runs."""

    tickers: int
    napping: int
    batched: int = 0


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


class HeldBatchInput(BaseModel):
    """The family the batch belongs to, and its tickers."""

    parent: str
    tickers: list[str]


async def finished_child(parent: str, name: str) -> None:
    """The quick ``Napper`` of ticker ``name``, whose result the Run page reads once the
    ticker is done."""
    await workflow.execute_child_workflow(NapperWorkflow.run, False, id=f"{parent}-pipeline-{name}")


@workflow.defn(name="Batch")
class HeldBatchWorkflow(TrackedRun):
    """Its first ticker done at once, the others running until ``release``."""

    def __init__(self) -> None:
        super().__init__()
        self.released = False

    @workflow.query(name="progress")
    def progress(self) -> RunProgress:
        """A step per ticker, as a ``PipelineBatch`` shows its names."""
        return self.progress_as(RunProgress)

    @workflow.signal(name="release")
    def release(self) -> None:
        """Let the held tickers finish."""
        self.released = True

    @workflow.run
    async def run(self, args: HeldBatchInput) -> dict[str, str]:
        """Finish the first ticker, wait to be released, finish the rest."""
        first, *held = args.tickers
        self.steps = {PIPELINE_STEP + name: StepState.RUNNING for name in args.tickers}
        await finished_child(args.parent, first)
        self.steps[PIPELINE_STEP + first] = StepState.DONE
        await workflow.wait_condition(lambda: self.released)
        for name in held:
            await finished_child(args.parent, name)
            self.steps[PIPELINE_STEP + name] = StepState.DONE
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
        self.open_gate()
        batched = [ticker(n) for n in range(args.napping, args.napping + args.batched)]
        self.steps.update({PIPELINE_STEP + name: StepState.RUNNING for name in batched})
        batch = (
            asyncio.create_task(
                self._child_step(
                    BATCH_STEP,
                    HeldBatchWorkflow.run,
                    HeldBatchInput(parent=parent, tickers=batched),
                    child_id=f"{parent}-batch-1",
                    summary="the held batch",
                )
            )
            if batched
            else None
        )
        quick = []
        for n in range(args.tickers):
            if ticker(n) in batched:
                continue
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
        if batch is not None:
            await batch
            self.steps.update({PIPELINE_STEP + name: StepState.DONE for name in batched})
        await workflow.execute_child_workflow(NapperWorkflow.run, False, id=f"{parent}-portfolio")
        return {"workflow_id": parent}


def family_worker(client: Client, queue: str) -> Worker:
    """A worker of both workflows on ``queue`` (use it as an async context manager)."""
    restrictions = SandboxRestrictions.default.with_passthrough_modules(__name__)
    return Worker(
        client,
        task_queue=queue,
        workflows=[FamilyWorkflow, NapperWorkflow, HeldBatchWorkflow],
        workflow_runner=SandboxedWorkflowRunner(restrictions=restrictions),
    )
