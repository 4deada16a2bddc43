"""The ``PipelineBatch`` workflow: a slice of an AutoRun's names, each through its ``Pipeline``.

An AutoRun that started every Pipeline itself wrote about 1.9 KB of history per name (the
child's start, started and completed events and the workflow tasks between them), so 500
names took close to a megabyte. It starts batches instead (patch ``pipeline-batches``): at
most ``MAX_BATCHES`` of them whatever the watchlist's size, each running its names at most
``concurrency`` at once and returning one ``BatchOutcome`` (a digest per decided name, the
reason of each failed one), which the SDK stores in S3 when it is large. The AutoRun's
history then grows with its batches, not its names.

Pipelines keep the ids the AutoRun gave them (``<AutoRun id>-pipeline-<TICKER>``), so the
console, the CLI and the Reflects find them by ticker as before. ``resume`` reaches them
through the batch; a Pipeline whose reply stays off-schema is given up on and recorded as
failed, as the AutoRun did; the batch's ``progress`` shows each of its names.
"""

from __future__ import annotations

from typing import Any

from pydantic import AwareDatetime, BaseModel, Field
from temporalio import workflow
from temporalio.exceptions import ChildWorkflowError

with workflow.unsafe.imports_passed_through():
    from shared.agents.pipeline.schemas import AnalystKind
    from shared.llm.contracts import LlmChoice
    from shared.reports.autorun import TickerFailure, chart_name
    from shared.storage.buckets import REPORTS_BUCKET
    from shared.storage.objects import ObjectRef
    from workflows.children import flow_of
    from workflows.concurrency import root_message, run_bounded
    from workflows.inputs import RunInput
    from workflows.pipeline import PipelineWorkflow
    from workflows.pipeline_contracts import PipelineDigest, PipelineInput, ReflectPlan
    from workflows.progress import RunProgress, StepState
    from workflows.resume import BAD_REPLY
    from workflows.tracked import TrackedRun

PIPELINE_CHILD = "pipeline"
"""Pipeline children are ``<AutoRun id>-pipeline-<TICKER>``."""
BATCH_CHILD = "batch"
"""Batches are ``<AutoRun id>-batch-<N>``."""
MAX_BATCHES = 32
"""Batches per AutoRun at most: past that, batches grow with the watchlist."""
BATCHES_AT_ONCE = 2
"""Batches running side by side, each with half the concurrency: while one finishes its last
Pipelines, the other keeps its lanes busy."""
NAMES_PER_LANE = 4
"""Names per lane of a batch, about: fewer, larger batches keep the AutoRun's history shorter;
smaller ones shorten the tail in which a batch's last Pipelines leave lanes idle."""


def pipeline_step(symbol: str) -> str:
    """A ticker's step name in the progress, e.g. ``pipeline GOOG``."""
    return f"pipeline {symbol}"


def pipeline_id(autorun_id: str, symbol: str) -> str:
    """The id of the AutoRun's Pipeline on ``symbol``."""
    return f"{autorun_id}-{PIPELINE_CHILD}-{symbol}"


def reflect_id(autorun_id: str, symbol: str) -> str:
    """The id of the Reflect on the AutoRun's decision on ``symbol``."""
    return f"{autorun_id}-reflect-{symbol}"


class PipelinePlan(BaseModel):
    """What every Pipeline of an AutoRun shares; ``input_for`` makes one name's input."""

    autorun_id: str
    as_of: AwareDatetime
    analysts: list[AnalystKind]
    debate_rounds: int
    risk_rounds: int
    llm: LlmChoice
    macro_context_key: ObjectRef | None = None
    slim_result: bool = True
    reflect_horizon_bars: int | None = Field(None, description="None: start no Reflect")
    charts_prefix: str | None = Field(
        None,
        description="the AutoRun's report keys: each Pipeline draws its ticker's chart there "
        "beside its analysts, for the run report (None: the report draws them all at the end)",
    )

    def input_for(self, symbol: str, position: dict[str, Any] | None) -> PipelineInput:
        """The input of ``symbol``'s Pipeline (``position``: the book's holding of it)."""
        horizon = self.reflect_horizon_bars
        return PipelineInput(
            symbol=symbol,
            as_of=self.as_of,
            analysts=self.analysts,
            debate_rounds=self.debate_rounds,
            risk_rounds=self.risk_rounds,
            llm=self.llm,
            macro_context_key=self.macro_context_key,
            position=position,
            slim_result=self.slim_result,
            reflect=(
                ReflectPlan(workflow_id=reflect_id(self.autorun_id, symbol), horizon_bars=horizon)
                if horizon is not None
                else None
            ),
            chart=(
                ObjectRef(bucket=REPORTS_BUCKET, key=f"{self.charts_prefix}/{chart_name(symbol)}")
                if self.charts_prefix is not None
                else None
            ),
        )


class PipelineBatchInput(RunInput):
    """A slice of an AutoRun's names and how to analyse them."""

    plan: PipelinePlan
    symbols: list[str] = Field(min_length=1)
    positions: dict[str, dict[str, Any]] = Field(
        default_factory=dict, description="the book's holdings among ``symbols``"
    )
    concurrency: int = Field(ge=1, description="Pipelines at once")


class BatchOutcome(BaseModel):
    """Each name's Pipeline: its digest, or why it failed."""

    digests: dict[str, PipelineDigest] = Field(default_factory=dict)
    failures: list[TickerFailure] = Field(default_factory=list)


def batches_of(symbols: list[str], concurrency: int) -> list[list[str]]:
    """``symbols`` in order, cut into batches of about equal size, a multiple of
    ``BATCHES_AT_ONCE`` of them (so none runs alone at the end), each with at least
    ``NAMES_PER_LANE`` names per lane of ``batch_concurrency``, and at most ``MAX_BATCHES``."""
    per_round = batch_concurrency(concurrency) * NAMES_PER_LANE * BATCHES_AT_ONCE
    rounds = max(1, round(len(symbols) / per_round))
    count = min(MAX_BATCHES, BATCHES_AT_ONCE * rounds, len(symbols))
    size = -(-len(symbols) // count)
    return [symbols[i : i + size] for i in range(0, len(symbols), size)]


def batch_concurrency(concurrency: int) -> int:
    """Pipelines at once in each of the ``BATCHES_AT_ONCE`` batches that run side by side."""
    return max(1, concurrency // BATCHES_AT_ONCE)


@workflow.defn(name="PipelineBatch")
class PipelineBatchWorkflow(TrackedRun):
    """Pipelines ∥ (bounded) over a slice of an AutoRun's names."""

    def __init__(self) -> None:
        super().__init__()
        self.outcome = BatchOutcome()
        self.pipeline_prefix = ""

    @workflow.query(name="progress")
    def progress(self) -> RunProgress:
        """Each name's Pipeline as a step."""
        return self.progress_as(RunProgress)

    def gives_up_on(self, child: str, failure: str) -> bool:
        """A Pipeline whose reply stays off-schema is recorded as failed, and the rest go on."""
        return child.startswith(self.pipeline_prefix) and failure == BAD_REPLY

    @workflow.run
    async def run(self, args: PipelineBatchInput) -> BatchOutcome:
        """Every name's Pipeline, at most ``concurrency`` at once."""
        self.open_gate()
        autorun_id = args.plan.autorun_id
        self.pipeline_prefix = pipeline_id(autorun_id, "")
        self.steps = {pipeline_step(symbol): StepState.PENDING for symbol in args.symbols}
        self.phase = "pipelines"
        self.gate.show(f"**pipelines**: {', '.join(args.symbols)}, {args.concurrency} at once")

        async def analyse(symbol: str) -> None:
            child_id = pipeline_id(autorun_id, symbol)
            try:
                digest = await self._child_step(
                    pipeline_step(symbol),
                    PipelineWorkflow.run,
                    args.plan.input_for(symbol, args.positions.get(symbol)),
                    child_id=child_id,
                    summary=f"{flow_of(PipelineWorkflow.run)} for AutoRun {autorun_id}",
                )
            except ChildWorkflowError as error:
                reason = self.given_up_reason(child_id) or root_message(error)
                self.outcome.failures.append(TickerFailure(symbol=symbol, reason=reason))
                workflow.logger.warning("%s failed, the batch goes on: %s", symbol, error)
                return
            if not isinstance(digest, PipelineDigest):
                raise TypeError(f"{child_id} returned a whole result: start it with slim_result")
            self.outcome.digests[symbol] = digest
            self.usage.add(symbol, digest.usage)

        await run_bounded(args.symbols, args.concurrency, analyse)
        self.phase = "done"
        return self.outcome
