"""The ``AutoRun`` workflow: the whole desk in one durable run.

open the book → ``Scan`` → candidates = the shortlist at or above ``min_conviction``
∪ the holdings → one ``Pipeline`` per candidate (at most ``concurrency`` at once,
each reading the Scan's summary as its macro context) → ``Portfolio`` with every
decision that came back → the run report (Markdown and HTML with charts) → one
``Reflect`` per decision, left running after the AutoRun ends (each waits on a
durable timer until its horizon has passed).

Child ids derive from the AutoRun's id and the ticker, so the Web UI lists a run's
children by prefix and a re-run under the same id finds the same names. A ticker
whose Pipeline fails is recorded with its reason and the Portfolio goes on without
it. A provider failure only a person can fix parks the call, in whichever child it
happens, until ``resume`` (forwarded to the running children).
"""

from __future__ import annotations

from datetime import timedelta
from decimal import Decimal
from typing import Any, TypeVar

from pydantic import AwareDatetime, BaseModel, Field, field_validator
from temporalio import workflow
from temporalio.exceptions import ChildWorkflowError
from temporalio.types import MethodAsyncSingleParam
from temporalio.workflow import ParentClosePolicy

with workflow.unsafe.imports_passed_through():
    from activities.autorun import (
        AutoRunActivities,
        OpenBookRequest,
        OpenedBook,
        RunReportFiles,
        RunReportRequest,
    )
    from shared.agents.pipeline.schemas import AnalystKind
    from shared.agents.portfolio.inputs import TickerDecision
    from shared.agents.scan.schemas import Conviction
    from shared.llm.contracts import LlmChoice, Usage, UsageReport
    from shared.portfolio.limits import CASH_EQUIVALENTS
    from shared.portfolio.models import NAME_PATTERN, BrokerKind
    from shared.reports.autorun import AutoRunReport, TickerFailure
    from workflows.activity_calls import run_activity
    from workflows.broker_orders import ExecutionPolicy
    from workflows.children import flow_of
    from workflows.concurrency import root_message, run_bounded
    from workflows.debates import MAX_ROUNDS
    from workflows.inputs import RunInput, scheduled_time
    from workflows.pipeline import PipelineInput, PipelineResult, PipelineWorkflow
    from workflows.portfolio import Approval, PortfolioInput, PortfolioResult, PortfolioWorkflow
    from workflows.progress import RunProgress, StepState, track
    from workflows.provider_check import check_provider
    from workflows.reflect import ReflectWorkflow
    from workflows.resume import BAD_REPLY
    from workflows.retries import HEARTBEAT, durable
    from workflows.run_keys import run_key_prefix
    from workflows.scan import MAX_TICKERS, ScanInput, ScanResult, ScanWorkflow
    from workflows.tracked import TrackedRun
    from workflows.visibility import tag_run

Arg = TypeVar("Arg")
Result = TypeVar("Result")

STEP_START_TO_CLOSE = timedelta(minutes=2)
PIPELINE_CHILD = "pipeline"
"""Pipeline children are ``<AutoRun id>-pipeline-<TICKER>``."""
DEFAULT_CASH = Decimal(100_000)
MAX_CONCURRENCY = 32
CONVICTION_RANK = {Conviction.LOW: 1, Conviction.MEDIUM: 2, Conviction.HIGH: 3}

OPEN_BOOK, SCAN, PORTFOLIO, REPORT, REFLECT = "open_book", "scan", "portfolio", "report", "reflect"


def pipeline_step(symbol: str) -> str:
    """A ticker's step name in the progress, e.g. ``pipeline GOOG``."""
    return f"pipeline {symbol}"


class AutoRunInput(RunInput):
    """Every field is optional: ``{}`` runs the desk offline on the latest data."""

    portfolio: str = Field("desk", pattern=NAME_PATTERN, description="created if missing")
    initial_cash: Decimal = Field(DEFAULT_CASH, gt=0, description="cash of a new portfolio")
    as_of: AwareDatetime | None = Field(
        None, description="analysis time; default: a schedule's time, else the latest data"
    )
    max_tickers: int = Field(10, ge=1, le=MAX_TICKERS)
    min_conviction: Conviction = Field(Conviction.MEDIUM, description="of the Scan's shortlist")
    analysts: list[AnalystKind] = Field(default_factory=lambda: list(AnalystKind), min_length=1)
    debate_rounds: int = Field(1, ge=1, le=MAX_ROUNDS)
    risk_rounds: int = Field(1, ge=1, le=MAX_ROUNDS)
    llm: LlmChoice = LlmChoice()
    concurrency: int = Field(4, ge=1, le=MAX_CONCURRENCY, description="Pipelines at once")
    approval: Approval = Approval.AUTO
    broker: BrokerKind | None = Field(
        None,
        description="where the book's orders go: a new book is bound to it (default paper); "
        "an existing one must already be (default: the broker it has)",
    )
    execution: ExecutionPolicy = Field(
        default_factory=ExecutionPolicy, description="how orders are worked at a real broker"
    )
    reflect: bool = Field(True, description="start one Reflect per decision")
    reflect_horizon_bars: int = Field(5, ge=1, le=250)

    @field_validator("analysts")
    @classmethod
    def _once_each(cls, value: list[AnalystKind]) -> list[AnalystKind]:
        if len(set(value)) != len(value):
            raise ValueError("name each analyst once")
        return value


class AutoRunProgress(RunProgress):
    """The ``progress`` answer, with the tickers' count."""

    tickers_total: int = 0
    tickers_done: int = 0
    tickers_failed: int = 0


class AutoRunResult(BaseModel):
    """What the run decided and did, and where its report is."""

    workflow_id: str
    portfolio: str
    as_of: AwareDatetime
    shortlist: list[str]
    candidates: list[str]
    decisions: list[TickerDecision]
    failures: list[TickerFailure]
    portfolio_status: str
    trades: int
    refused: int
    report: RunReportFiles
    report_url: str = Field(description="presigned URL of the HTML report")
    reflections: list[str] = Field(description="ids of the Reflect runs left waiting")
    usage: UsageReport
    usage_by_part: dict[str, Usage]


def candidates_of(
    scan: ScanResult, holdings: list[str], min_conviction: Conviction
) -> tuple[list[str], list[str]]:
    """The shortlist, and the candidates: the shortlist at the bar, then the holdings
    (the cash-equivalent ETF of the sweep is not analysed)."""
    shortlist = [s.ticker for s in scan.summary.stocks_to_investigate]
    bar = CONVICTION_RANK[min_conviction]
    chosen = [
        s.ticker for s in scan.summary.stocks_to_investigate if CONVICTION_RANK[s.conviction] >= bar
    ]
    held = [h for h in holdings if h not in chosen and h not in CASH_EQUIVALENTS]
    return shortlist, chosen + held


@workflow.defn(name="AutoRun")
class AutoRunWorkflow(TrackedRun):
    """Scan → Pipelines ∥ (bounded) → Portfolio → report → Reflects."""

    def __init__(self) -> None:
        super().__init__()
        self.by_part: dict[str, Usage] = {}
        self.tickers: list[str] = []
        self.failed: list[TickerFailure] = []
        self.results: dict[str, PipelineResult] = {}

    @workflow.query(name="progress")
    def progress(self) -> AutoRunProgress:
        """The phase, each step, the tickers done and failed, tokens and cost so far."""
        return self.progress_as(
            AutoRunProgress,
            tickers_total=len(self.tickers),
            tickers_done=len(self.results) + len(self.failed),
            tickers_failed=len(self.failed),
        )

    def _phase(self, phase: str, details: str) -> None:
        """Enter ``phase``; the Web UI's current details say what the run does now."""
        self.phase = phase
        self.gate.show(f"**{phase}**: {details}")

    def gives_up_on(self, child: str, failure: str) -> bool:
        """One ticker whose reply stays off-schema is recorded as failed, like a ticker whose
        data is missing, and the desk goes on; the Scan and the Portfolio are waited for."""
        return child.startswith(f"{PIPELINE_CHILD}-") and failure == BAD_REPLY

    def _count(self, part: str, usage: UsageReport) -> None:
        for agent, spent in usage.by_agent.items():
            self.usage.add(agent, spent)
        self.by_part[part] = self.by_part.get(part, Usage()) + usage.total

    async def _child(
        self,
        step: str,
        run: MethodAsyncSingleParam[Any, Arg, Result],
        child_id: str,
        arg: Arg,
    ) -> Result:
        """A child run shown as ``step``; ``resume`` reaches it while it runs."""
        summary = f"{flow_of(run)} for AutoRun {workflow.info().workflow_id}"
        return await self._child_step(step, run, arg, child_id=child_id, summary=summary)

    @workflow.run
    async def run(self, args: AutoRunInput) -> AutoRunResult:
        """Open the book, scan, analyse each candidate, decide, report, reflect."""
        self.open_gate()
        check_provider(args.llm)
        wf_id = workflow.info().workflow_id
        self.steps = {name: StepState.PENDING for name in (OPEN_BOOK, SCAN)}
        tag_run("AutoRun", portfolio=args.portfolio)

        self._phase(OPEN_BOOK, f"opening the book {args.portfolio}")
        book: OpenedBook = await track(
            self.steps,
            OPEN_BOOK,
            run_activity(
                AutoRunActivities.open_book,
                OpenBookRequest(
                    portfolio=args.portfolio, initial_cash=args.initial_cash, broker=args.broker
                ),
                **durable(STEP_START_TO_CLOSE),
            ),
        )

        self._phase(SCAN, f"scanning the market for up to {args.max_tickers} stocks")
        scan: ScanResult = await self._child(
            SCAN,
            ScanWorkflow.run,
            f"{wf_id}-scan",
            ScanInput(
                as_of=args.as_of,
                not_after=scheduled_time(),
                max_tickers=args.max_tickers,
                llm=args.llm,
            ),
        )
        self._count(SCAN, scan.usage)
        as_of = scan.as_of
        tag_run("AutoRun", portfolio=args.portfolio, as_of=as_of)
        shortlist, self.tickers = candidates_of(scan, list(book.holdings), args.min_conviction)
        for symbol in self.tickers:
            self.steps[pipeline_step(symbol)] = StepState.PENDING
        for name in (PORTFOLIO, REPORT, *([REFLECT] if args.reflect else [])):
            self.steps[name] = StepState.PENDING

        self._phase(
            "pipelines",
            f"analysing {', '.join(self.tickers) or 'nothing'}, {args.concurrency} at once",
        )

        async def analyse(symbol: str) -> None:
            position = book.holdings.get(symbol)
            child_id = f"{wf_id}-{PIPELINE_CHILD}-{symbol}"
            try:
                result: PipelineResult = await self._child(
                    pipeline_step(symbol),
                    PipelineWorkflow.run,
                    child_id,
                    PipelineInput(
                        symbol=symbol,
                        as_of=as_of,
                        analysts=args.analysts,
                        debate_rounds=args.debate_rounds,
                        risk_rounds=args.risk_rounds,
                        llm=args.llm,
                        macro_context_key=scan.summary_markdown.report,
                        position=position.model_dump() if position else None,
                    ),
                )
            except ChildWorkflowError as error:
                reason = self.given_up_reason(child_id) or root_message(error)
                self.failed.append(TickerFailure(symbol=symbol, reason=reason))
                workflow.logger.warning("%s failed, the run goes on: %s", symbol, error)
                return
            self.results[symbol] = result
            self._count("pipelines", result.usage)

        await run_bounded(self.tickers, args.concurrency, analyse)
        decisions = [TickerDecision.of(self.results[s]) for s in self.tickers if s in self.results]

        self._phase(PORTFOLIO, f"deciding on {len(decisions)} decision(s) for {args.portfolio}")
        outcome: PortfolioResult = await self._child(
            PORTFOLIO,
            PortfolioWorkflow.run,
            f"{wf_id}-portfolio",
            PortfolioInput(
                portfolio=args.portfolio,
                as_of=as_of,
                scan_summary=scan.summary_json.report,
                decisions=decisions,
                llm=args.llm,
                approval=args.approval,
                broker=args.broker,
                execution=args.execution,
            ),
        )
        self._count(PORTFOLIO, outcome.usage)

        self._phase(REPORT, "writing the run report")
        report: RunReportFiles = await track(
            self.steps,
            REPORT,
            run_activity(
                AutoRunActivities.store_run_report,
                RunReportRequest(
                    report=AutoRunReport(
                        workflow_id=wf_id,
                        portfolio=args.portfolio,
                        as_of=as_of,
                        scan=scan.summary,
                        candidates=self.tickers,
                        decisions=decisions,
                        report_urls={s: r.report.url for s, r in self.results.items()},
                        failures=self.failed,
                        portfolio_outcome=outcome,
                        portfolio_report_url=outcome.report.url,
                        usage=self.by_part,
                    ),
                    prefix=run_key_prefix("autorun"),
                ),
                **durable(STEP_START_TO_CLOSE, heartbeat=HEARTBEAT),
            ),
        )

        reflections = await self._reflect(args) if args.reflect else []
        self._phase(
            "done",
            f"{len(decisions)} decision(s), {len(outcome.executed)} trade(s); report: "
            f"{report.html.report.key}",
        )
        return AutoRunResult(
            workflow_id=wf_id,
            portfolio=args.portfolio,
            as_of=as_of,
            shortlist=shortlist,
            candidates=self.tickers,
            decisions=decisions,
            failures=self.failed,
            portfolio_status=outcome.status.value,
            trades=len(outcome.executed),
            refused=len(outcome.rejected),
            report=report,
            report_url=report.html.url,
            reflections=reflections,
            usage=self.usage,
            usage_by_part=self.by_part,
        )

    async def _reflect(self, args: AutoRunInput) -> list[str]:
        """One ``Reflect`` per decision, started and left to wait out its horizon."""
        self._phase(REFLECT, f"starting {len(self.results)} Reflect run(s)")
        self.steps[REFLECT] = StepState.RUNNING
        started = []
        for symbol, result in self.results.items():
            child_id = f"{workflow.info().workflow_id}-reflect-{symbol}"
            await workflow.start_child_workflow(
                ReflectWorkflow.run,
                result.reflect_input(horizon_bars=args.reflect_horizon_bars, llm=args.llm),
                id=child_id,
                parent_close_policy=ParentClosePolicy.ABANDON,
                static_summary=f"Reflect on {symbol} {result.as_of:%Y-%m-%d}",
            )
            started.append(child_id)
        self.steps[REFLECT] = StepState.DONE
        return started
