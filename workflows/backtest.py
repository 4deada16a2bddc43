"""The ``Backtest`` workflow: a flow walked forward over past dates, strictly as of each.

plan (the trading dates and closes, on ``tools``) → for each step, in order:
the flow as a child workflow with ``as_of`` = that date → the position its
signal asks for (``shared.backtest.positions``) → for the Pipeline with memory,
a ``Reflect`` child that grades the decision over the next ``every`` bars and
records one lesson per role, before the next step starts → the metrics, the
Markdown report and the equity CSV (``tools``) ∥ the equity PNG (``charts``).

Order is what makes the memory honest: step k's lessons are written before
step k+1 starts, and memory recalls a lesson only once its outcome was known
as of the recalling step (its horizon bar has closed), so with a horizon of
``every`` bars a step learns from the steps two or more before it, never from
its own future. ``Reflect`` measures at once, since a past horizon's bars exist.
The last step is not reflected: no later step could learn from it.

Lessons are filed under the walk-forward's question (flow, symbol, start, every,
analysts, rounds, models) and the step's date, not under the Pipeline child's
run id: re-running the same backtest then adds no second copy of a lesson, so
every step recalls exactly what it recalled the first time, and with the reply
cache on (``QUANTDESK_LLM_CACHE``) a re-run sends the same prompts and is
answered from the cache, free and identical.
"""

from __future__ import annotations

import hashlib
import json
from datetime import date, datetime, timedelta
from typing import Any, TypeVar

from pydantic import AwareDatetime, BaseModel, Field, ValidationInfo, field_validator
from temporalio import workflow
from temporalio.types import MethodAsyncSingleParam

with workflow.unsafe.imports_passed_through():
    from activities.backtest import (
        BacktestActivities,
        BacktestPlan,
        BacktestScore,
        EquityChartRequest,
        PlanRequest,
        ScoreRequest,
    )
    from activities.failures import as_temporal_failures
    from activities.reflection import MAX_HORIZON_BARS
    from activities.services import StoredReport
    from shared.agents.pipeline.schemas import AnalystKind
    from shared.backtest import Book, Flow, Performance, Position, StepRecord, position_for
    from shared.backtest.claims import BacktestClaims
    from shared.llm.contracts import LlmChoice, UsageReport
    from shared.market.bars import Timeframe
    from shared.memory import SourceRun
    from shared.memory.render import NOTHING
    from workflows.activity_calls import run_activity
    from workflows.children import Counted, flow_of, usage_report
    from workflows.concurrency import gather_all
    from workflows.debate_contracts import MAX_ROUNDS
    from workflows.inputs import RunInput
    from workflows.pipeline import PipelineWorkflow
    from workflows.pipeline_contracts import PipelineInput, whole
    from workflows.progress import RunProgress, StepState, track
    from workflows.provider_check import check_provider
    from workflows.quantagent import QuantAgentInput, QuantAgentResult, QuantAgentWorkflow
    from workflows.reflect import ReflectResult, ReflectWorkflow
    from workflows.retries import HEARTBEAT, durable
    from workflows.run_keys import run_report
    from workflows.tracked import TrackedRun
    from workflows.visibility import tag_run


Arg = TypeVar("Arg")
Child = TypeVar("Child", bound=Counted)

PLAN_START_TO_CLOSE = timedelta(minutes=2)
SCORE_START_TO_CLOSE = timedelta(minutes=2)
PLAN = "plan_backtest"
SCORE = "score_backtest"
CHART = "render_equity_chart"
DEFAULT_STEPS_PER_RUN = 50
"""Steps one run takes before it continues as new: each step adds ~50 KB of history (the
Pipeline's and Reflect's results), so a run stays near 2.5 MB whatever the walk's length."""
LESSON_RUN = "walk-forward"
"""The run id of every backtest lesson's source; the workflow id says which question and date."""


class BacktestCarry(BaseModel):
    """What the earlier runs of a walk planned and decided, handed to the next run."""

    plan: BacktestPlan
    records: list[StepRecord] = Field(default_factory=list)
    usage: UsageReport = UsageReport()
    runs: int = Field(1, ge=1, description="runs so far, this one included")
    started_at: AwareDatetime = Field(description="when the walk's first run started")


class BacktestInput(RunInput):
    """What to walk forward. ``{"symbol": "GOOG", "start": ..., "end": ...}`` is enough."""

    flow: Flow = Flow.PIPELINE
    symbol: str = Field(min_length=1, max_length=32)
    start: date = Field(description="first trading date of the range (inclusive)")
    end: date = Field(description="last trading date of the range (inclusive)")
    every: int = Field(5, ge=1, le=MAX_HORIZON_BARS, description="bars from one step to the next")
    llm: LlmChoice = LlmChoice()
    analysts: list[AnalystKind] = Field(
        default_factory=lambda: list(AnalystKind), min_length=1, description="Pipeline only"
    )
    debate_rounds: int = Field(1, ge=1, le=MAX_ROUNDS, description="Pipeline only")
    risk_rounds: int = Field(1, ge=1, le=MAX_ROUNDS, description="Pipeline only")
    allow_short: bool = Field(True, description="false: SELL/SHORT go flat instead of short")
    reflect: bool = Field(
        None,
        validate_default=True,
        description="record lessons after each step; default true for the Pipeline "
        "(QuantAgent has no memory)",
    )
    steps_per_run: int = Field(
        DEFAULT_STEPS_PER_RUN, ge=1, le=1000, description="steps before continuing as new"
    )
    carry: BacktestCarry | None = Field(None, description="set by the workflow itself")

    @field_validator("symbol")
    @classmethod
    def _canonical(cls, value: str) -> str:
        return value.strip().upper()

    @field_validator("reflect", mode="before")
    @classmethod
    def _memory_only_for_the_pipeline(cls, value: Any, info: ValidationInfo) -> Any:
        flow = info.data.get("flow")
        if value is None:
            return flow is Flow.PIPELINE
        if value is True and flow is Flow.QUANTAGENT:
            raise ValueError("QuantAgent keeps no memory; reflect only with flow pipeline")
        return value


class BacktestProgress(RunProgress):
    """The answer of the ``progress`` query: the common steps view, and the walk so far."""

    decided: int = Field(description="steps whose signal is in")
    scheduled: int = Field(description="steps of the walk; 0 until planned")
    as_of: datetime | None = Field(None, description="the date of the step running")
    equity: float | None = Field(None, description="strategy equity at the last decided step")
    buy_and_hold: float | None = Field(None, description="buy-and-hold over the same closes")
    records: list[StepRecord] = Field(default_factory=list)


class BacktestResult(BaseModel):
    """Every step's signal, the metrics against buy-and-hold, and the stored files."""

    symbol: str
    flow: Flow
    vendor: str = Field(description="the data vendor of the closes")
    start: date = Field(description="the first trading date used")
    end: date = Field(description="the last trading date used")
    every: int
    allow_short: bool
    reflect: bool
    steps: list[StepRecord]
    strategy: Performance
    buy_and_hold: Performance
    report: StoredReport
    csv: StoredReport
    chart: StoredReport
    runs: int = Field(description="workflow runs the walk took (it continues as new)")
    usage: UsageReport
    claims: BacktestClaims | None = Field(
        None, description="training-cutoff periods, leaderboard and Sharpe tests"
    )


def lesson_source(args: BacktestInput, as_of: datetime) -> SourceRun:
    """The source a step's lessons are filed under: its question and date (module docstring)."""
    question = args.model_dump(
        mode="json",
        include={"flow", "symbol", "start", "every", "analysts", "debate_rounds", "risk_rounds"},
    ) | {"llm": args.llm.model_dump(mode="json", exclude={"sample"})}
    digest = hashlib.sha256(json.dumps(question, sort_keys=True).encode()).hexdigest()[:16]
    return SourceRun(
        workflow_id=f"backtest/{args.symbol}/{digest}/{as_of.date().isoformat()}",
        run_id=LESSON_RUN,
    )


def trial_config(args: BacktestInput) -> dict[str, Any]:
    """The walk's configuration as the trials ledger records it: everything that changes its
    decisions, not how the run is split into runs."""
    return args.model_dump(mode="json", exclude={"carry", "steps_per_run"})


def step_name(k: int, as_of: datetime, what: str) -> str:
    """A step's name in the progress view, e.g. ``pipeline 003 2010-01-18``."""
    return f"{what} {k + 1:03d} {as_of.date().isoformat()}"


def child_workflow_id(k: int, kind: str) -> str:
    """Step ``k``'s child of ``kind`` (pipeline, reflect, quantagent): fixed by this run's id, so
    a replayed or retried step finds the same child."""
    return f"{workflow.info().workflow_id}-{k + 1:03d}-{kind}"


@workflow.defn(name="Backtest")
class BacktestWorkflow(TrackedRun):
    """A flow walked forward step by step, then scored against buy-and-hold."""

    def __init__(self) -> None:
        super().__init__(PLAN)
        self.book: Book | None = None
        self.as_of: datetime | None = None
        self.started_at: datetime | None = None

    @workflow.query(name="progress")
    def progress(self) -> BacktestProgress:
        """Each step's state, the signals so far and the equity at the last decided step."""
        book = self.book
        records = book.records if book else []
        progress = self.progress_as(
            BacktestProgress,
            decided=len(records),
            scheduled=len(book.schedule.steps) if book else 0,
            as_of=self.as_of,
            equity=book.equity()[-1] if book and records else None,
            buy_and_hold=book.buy_and_hold_equity()[-1] if book and records else None,
            records=records,
        )
        if self.started_at is None:
            return progress
        # The walk spans runs (continue-as-new): time it, and its pace, from the first one.
        elapsed = (workflow.now() - self.started_at).total_seconds()
        left = progress.total - progress.done
        estimate = round(elapsed / progress.done * left, 1) if progress.done else None
        return progress.model_copy(
            update={"elapsed_seconds": round(elapsed, 1), "estimate_seconds": estimate}
        )

    @workflow.run
    async def run(self, args: BacktestInput) -> BacktestResult:
        """Plan (first run only), walk the steps in order, continuing as new every
        ``steps_per_run`` steps, then score and chart."""
        self.open_gate()
        check_provider(args.llm)
        tag_run("Backtest", symbol=args.symbol)
        self.started_at = args.carry.started_at if args.carry else workflow.info().start_time
        carry = args.carry or BacktestCarry(plan=await self._plan(args), started_at=self.started_at)
        plan, self.usage = carry.plan, carry.usage
        book = self.book = Book(
            symbol=plan.symbol,
            flow=args.flow,
            allow_short=args.allow_short,
            schedule=plan.schedule,
            records=carry.records,
        )
        times = plan.schedule.step_times
        self._show_steps(args, times, done=len(book.records))
        step = self._pipeline_step if args.flow is Flow.PIPELINE else self._quantagent_step
        first = len(book.records)
        for k in range(first, len(times)):
            if k - first >= args.steps_per_run or (
                k > first and workflow.info().is_continue_as_new_suggested()
            ):
                carry = carry.model_copy(
                    update={"records": book.records, "usage": self.usage, "runs": carry.runs + 1}
                )
                workflow.continue_as_new(args.model_copy(update={"carry": carry}))
            self.as_of = times[k]
            self.phase = f"{args.flow.value} {k + 1}/{len(times)}"
            book.records.append(await step(args, k, times[k]))
        self.as_of = None
        self.phase = SCORE
        score, chart = await gather_all(
            track(self.steps, SCORE, self._score(args, book)),
            track(self.steps, CHART, self._chart(args, book)),
        )
        self.phase = "done"
        return BacktestResult(
            symbol=book.symbol,
            flow=args.flow,
            vendor=plan.vendor,
            start=plan.schedule.prices[0].time.date(),
            end=plan.schedule.prices[-1].time.date(),
            every=args.every,
            allow_short=args.allow_short,
            reflect=args.reflect,
            steps=book.records,
            strategy=score.strategy,
            buy_and_hold=score.buy_and_hold,
            report=score.report,
            csv=score.csv,
            chart=chart,
            runs=carry.runs,
            usage=self.usage,
            claims=score.claims,
        )

    async def _plan(self, args: BacktestInput) -> BacktestPlan:
        """The trading dates and closes of the range (the first run only)."""
        self.phase = PLAN
        return await track(
            self.steps,
            PLAN,
            run_activity(
                BacktestActivities.plan_backtest,
                PlanRequest(symbol=args.symbol, start=args.start, end=args.end, every=args.every),
                **durable(PLAN_START_TO_CLOSE, heartbeat=HEARTBEAT),
            ),
        )

    def _show_steps(self, args: BacktestInput, times: list[datetime], *, done: int) -> None:
        """Every step of the walk in the progress view; those earlier runs decided are done."""
        self.steps[PLAN] = StepState.DONE
        for k, as_of in enumerate(times):
            state = StepState.DONE if k < done else StepState.PENDING
            self.steps[step_name(k, as_of, args.flow.value)] = state
            if self._reflects(args, k):
                self.steps[step_name(k, as_of, "reflect")] = state
        self.steps |= {SCORE: StepState.PENDING, CHART: StepState.PENDING}

    def _reflects(self, args: BacktestInput, k: int) -> bool:
        """Whether step ``k`` is reflected: with memory, and not the last (no one would learn)."""
        assert self.book is not None
        return args.reflect and k < len(self.book.schedule.steps) - 1

    def _position(self, args: BacktestInput, signal: str) -> Position:
        """The position after ``signal``: the previous step's is what HOLD keeps."""
        assert self.book is not None
        previous = self.book.records[-1].position if self.book.records else Position.FLAT
        with as_temporal_failures():
            return position_for(signal, previous, allow_short=args.allow_short)

    async def _child(
        self, k: int, kind: str, run: MethodAsyncSingleParam[Any, Arg, Child], child_input: Arg
    ) -> Child:
        """Step ``k``'s child run (``kind`` names it in ids and the progress view);
        ``resume`` reaches it while it runs."""
        assert self.book is not None
        as_of = self.book.schedule.step_times[k]
        result = await self._child_step(
            step_name(k, as_of, kind),
            run,
            child_input,
            child_id=child_workflow_id(k, kind),
            summary=f"{flow_of(run)} {self.book.symbol} as of {as_of.date()} "
            f"(backtest step {k + 1})",
        )
        self._count(usage_report(result.usage, kind))
        return result

    async def _pipeline_step(self, args: BacktestInput, k: int, as_of: datetime) -> StepRecord:
        """The Pipeline as of ``as_of`` and its position; then, with memory, its reflection."""
        pipeline = PipelineInput(
            symbol=args.symbol,
            as_of=as_of,
            analysts=args.analysts,
            debate_rounds=args.debate_rounds,
            risk_rounds=args.risk_rounds,
            llm=args.llm,
        )
        result = whole(await self._child(k, Flow.PIPELINE.value, PipelineWorkflow.run, pipeline))
        signal = result.decision.signal.value
        record = StepRecord(
            step=k,
            as_of=as_of,
            signal=signal,
            rating=result.decision.rating.value,
            position=self._position(args, signal),
            workflow_id=result.workflow_id,
            recalled_roles=sum(1 for text in result.memories.values() if text != NOTHING),
        )
        if self._reflects(args, k):
            self.phase = f"reflect {k + 1}"
            lessons = result.reflect_input(horizon_bars=args.every, llm=args.llm).model_copy(
                # The horizon is in the past: waiting could only mean the data stopped.
                update={"source": lesson_source(args, as_of), "max_waits": 0}
            )
            reflected: ReflectResult = await self._child(k, "reflect", ReflectWorkflow.run, lessons)
            record.lessons_recorded = reflected.inserted
        return record

    async def _quantagent_step(self, args: BacktestInput, k: int, as_of: datetime) -> StepRecord:
        """QuantAgent on daily bars as of ``as_of``; LONG/SHORT is its signal."""
        result: QuantAgentResult = await self._child(
            k,
            Flow.QUANTAGENT.value,
            QuantAgentWorkflow.run,
            QuantAgentInput(symbol=args.symbol, timeframe=Timeframe.D1, as_of=as_of, llm=args.llm),
        )
        signal = result.decision.decision.value
        return StepRecord(
            step=k,
            as_of=as_of,
            signal=signal,
            position=self._position(args, signal),
            workflow_id=child_workflow_id(k, Flow.QUANTAGENT.value),
        )

    def _count(self, child: UsageReport) -> None:
        """A child's usage, per agent, into this run's."""
        for agent, usage in child.by_agent.items():
            self.usage.add(agent, usage)

    async def _score(self, args: BacktestInput, book: Book) -> BacktestScore:
        return await run_activity(
            BacktestActivities.score_backtest,
            ScoreRequest(
                book=book,
                report=run_report("backtest", "report.md"),
                csv=run_report("backtest", "equity.csv"),
                llm=args.llm,
                config=trial_config(args),
                cost_usd=self.usage.total.cost_usd,
            ),
            **durable(SCORE_START_TO_CLOSE, heartbeat=HEARTBEAT),
        )

    async def _chart(self, args: BacktestInput, book: Book) -> StoredReport:
        return await run_activity(
            BacktestActivities.render_equity_chart,
            EquityChartRequest(
                book=book, target=run_report("backtest", "equity.png"), llm=args.llm
            ),
            **durable(SCORE_START_TO_CLOSE, heartbeat=HEARTBEAT),
        )
