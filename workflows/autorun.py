"""The ``AutoRun`` workflow: the whole desk in one durable run.

(the names given: a ``watchlist`` or ``symbols``, every one checked against the data) →
open the book → ``Scan`` (by default only without names given; otherwise the analysis
time is resolved on the first name) → candidates = the names given, then the shortlist
at or above ``min_conviction``, then the holdings, each once → one ``Pipeline`` per
candidate (at most ``concurrency`` at once,
each reading the Scan's summary as its macro context, each drawing its ticker's chart for
the report beside its analysts and starting the ``Reflect`` on its decision, left running
after the AutoRun ends to wait out its horizon) → the
decisions gathered into one stored list → ``Portfolio`` with every decision that came
back → the run report (Markdown and HTML with charts).

The history stays small at many names: a Pipeline returns a ``PipelineDigest`` (its
decision in a line, its usage, the key of the whole decision it stored), and the
Portfolio and the report read the gathered decisions by key. Runs from before
(patch ``slim-pipeline-results``) kept whole results and started the Reflects last.
More than ``DIRECT_MAX`` names, and more than two rounds of ``concurrency`` (of at most
``DIRECT_LANES``), are
analysed through ``PipelineBatch`` children (patch ``pipeline-batches``,
``workflows.pipeline_batch``): the history grows with the batches, at most
``MAX_BATCHES``, not with the names; a name's step shows running while its batch runs,
and the batch's own progress shows each of its Pipelines. Every payload of
``inline_max_bytes`` or more (a batch's outcome, the Portfolio's result, the report's
request) is kept in S3 with a reference in the history (``workers.payload_storage``).

Child ids derive from the AutoRun's id and the ticker, so the Web UI lists a run's
children by prefix and a re-run under the same id finds the same names. A ticker
whose Pipeline fails is recorded with its reason and the Portfolio goes on without
it. A provider failure only a person can fix parks the call, in whichever child it
happens, until ``resume`` (forwarded to the running children).
"""

from __future__ import annotations

from datetime import datetime, timedelta
from typing import Any, TypeVar

from temporalio import workflow
from temporalio.exceptions import ApplicationError, ChildWorkflowError
from temporalio.types import MethodAsyncSingleParam

with workflow.unsafe.imports_passed_through():
    from activities.autorun import (
        AutoRunActivities,
        GatherDecisionsRequest,
        GatheredDecisions,
        ListCandidatesRequest,
        ListedCandidates,
        OpenBookRequest,
        OpenedBook,
        RunReportFiles,
        RunReportRequest,
    )
    from activities.research import ResearchActivities, ResolveAsOfRequest, ResolvedAsOf
    from shared.agents.portfolio.inputs import DecisionLine, TickerDecision
    from shared.agents.scan.schemas import Conviction
    from shared.llm.contracts import Usage, UsageReport
    from shared.portfolio.limits import CASH_EQUIVALENTS
    from shared.reports.autorun import AutoRunReport, TickerFailure
    from shared.storage.objects import ObjectRef
    from workflows.activity_calls import run_activity

    # The input's defaults and limits are imported from here too (starters, the benches).
    from workflows.autorun_contracts import DEFAULT_CASH as DEFAULT_CASH
    from workflows.autorun_contracts import MAX_CONCURRENCY as MAX_CONCURRENCY
    from workflows.autorun_contracts import AutoRunInput, AutoRunProgress, AutoRunResult
    from workflows.children import flow_of, usage_report
    from workflows.concurrency import root_message, run_bounded
    from workflows.inputs import scheduled_time
    from workflows.pipeline import PipelineWorkflow, start_reflect
    from workflows.pipeline_batch import (
        BATCH_CHILD,
        BATCHES_AT_ONCE,
        PIPELINE_CHILD,
        BatchOutcome,
        PipelineBatchInput,
        PipelineBatchWorkflow,
        PipelinePlan,
        batch_concurrency,
        batches_of,
        pipeline_id,
        pipeline_step,
        reflect_id,
    )
    from workflows.pipeline_contracts import PipelineDigest, PipelineResult, ReflectPlan
    from workflows.portfolio import (
        MAX_DECISIONS,
        PortfolioInput,
        PortfolioResult,
        PortfolioWorkflow,
    )
    from workflows.progress import StepState, track
    from workflows.provider_check import check_provider
    from workflows.resume import BAD_REPLY
    from workflows.retries import HEARTBEAT, durable
    from workflows.run_keys import run_key_prefix, run_report
    from workflows.scan import ScanInput, ScanResult, ScanWorkflow
    from workflows.tracked import TrackedRun
    from workflows.visibility import tag_run

Arg = TypeVar("Arg")
Result = TypeVar("Result")

STEP_START_TO_CLOSE = timedelta(minutes=2)
REPORT_START_TO_CLOSE = timedelta(minutes=30)
"""The run report draws a chart per name: 500 names took more than 2 minutes on a loaded
machine, and every attempt timed out. It heartbeats, so a dead worker is still found soon."""
CONVICTION_RANK = {Conviction.LOW: 1, Conviction.MEDIUM: 2, Conviction.HIGH: 3}

OPEN_BOOK, SCAN, PORTFOLIO, REPORT, REFLECT = "open_book", "scan", "portfolio", "report", "reflect"
LIST_CANDIDATES, RESOLVE_AS_OF = "list_candidates", "resolve_as_of"
GATHER_DECISIONS = "gather_decisions"
SLIM_RESULTS_PATCH = "slim-pipeline-results"
"""Pipelines return digests, their decisions travel by key and they start their own Reflect;
AutoRun histories from before replay the whole results they recorded."""
BATCHES_PATCH = "pipeline-batches"
"""More names than ``DIRECT_MAX`` and than two rounds of ``concurrency`` go through
``PipelineBatch`` children, two at once; runs from before started every Pipeline themselves."""
DIRECT_MAX = 16
"""Names an AutoRun analyses itself, at most (about 2 KB of its history each): a desk of a
Scan's shortlist needs no batches, nor the extra hop they take."""
DIRECT_LANES = 32
"""Past two rounds of this many lanes, names go through batches however many lanes there are:
100 names at 64 lanes took the AutoRun's own history to 230 KB. (The limit on lanes was 32,
so runs from before took the same path.)"""


def shortlist_of(scan: ScanResult, min_conviction: Conviction) -> tuple[list[str], list[str]]:
    """The Scan's shortlist, and the part of it at or above the conviction bar."""
    shortlist = [s.ticker for s in scan.summary.stocks_to_investigate]
    bar = CONVICTION_RANK[min_conviction]
    chosen = [
        s.ticker for s in scan.summary.stocks_to_investigate if CONVICTION_RANK[s.conviction] >= bar
    ]
    return shortlist, chosen


def line_of(result: PipelineResult | PipelineDigest) -> DecisionLine:
    """A Pipeline's decision in a line, from its digest or (before digests) its whole result."""
    if isinstance(result, PipelineDigest):
        return result.decision
    return DecisionLine.of(TickerDecision.of(result))


def candidates_of(listed: list[str], chosen: list[str], holdings: list[str]) -> list[str]:
    """The names given, then the Scan's chosen, then the holdings (the cash-equivalent ETF of
    the sweep is not analysed), each once, in that order."""
    held = [h for h in holdings if h not in CASH_EQUIVALENTS]
    return list(dict.fromkeys([*listed, *chosen, *held]))


@workflow.defn(name="AutoRun")
class AutoRunWorkflow(TrackedRun):
    """Scan → Pipelines ∥ (bounded) → Portfolio → report → Reflects."""

    def __init__(self) -> None:
        super().__init__()
        self.by_part: dict[str, Usage] = {}
        self.tickers: list[str] = []
        self.failed: list[TickerFailure] = []
        self.results: dict[str, PipelineResult | PipelineDigest] = {}

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

    def _count(self, part: str, child: UsageReport | Usage) -> None:
        usage = usage_report(child, part)
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
        first = [LIST_CANDIDATES] if args.names_given else []
        clock = SCAN if args.scans else RESOLVE_AS_OF
        self.steps = {name: StepState.PENDING for name in (*first, OPEN_BOOK, clock)}
        tag_run("AutoRun", portfolio=args.portfolio)
        listed = await self._list_candidates(args) if args.names_given else []

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

        scan: ScanResult | None = None
        shortlist: list[str] = []
        chosen: list[str] = []
        if args.scans:
            self._phase(SCAN, f"scanning the market for up to {args.max_tickers} stocks")
            scan = await self._child(
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
            shortlist, chosen = shortlist_of(scan, args.min_conviction)
        else:
            as_of = await self._resolve_as_of(args, listed[0])
        tag_run("AutoRun", portfolio=args.portfolio, as_of=as_of)
        self.tickers = candidates_of(listed, chosen, list(book.holdings))
        if len(self.tickers) > MAX_DECISIONS:
            raise ApplicationError(
                f"watchlist/symbols: {len(self.tickers)} candidates with the holdings, more than "
                f"the Portfolio decides on at once ({MAX_DECISIONS}): split the watchlist",
                type="InvalidInput",
                non_retryable=True,
            )
        for symbol in self.tickers:
            self.steps[pipeline_step(symbol)] = StepState.PENDING
        for name in (PORTFOLIO, REPORT, *([REFLECT] if args.reflect else [])):
            self.steps[name] = StepState.PENDING

        self._phase(
            "pipelines",
            f"analysing {', '.join(self.tickers) or 'nothing'}, {args.concurrency} at once",
        )

        slim = workflow.patched(SLIM_RESULTS_PATCH)
        if slim:
            self.steps = {**self.steps, GATHER_DECISIONS: StepState.PENDING}
        plan = PipelinePlan(
            autorun_id=wf_id,
            as_of=as_of,
            analysts=args.analysts,
            debate_rounds=args.debate_rounds,
            risk_rounds=args.risk_rounds,
            llm=args.llm,
            macro_context_key=scan.summary_markdown.report if scan else None,
            slim_result=slim,
            reflect_horizon_bars=args.reflect_horizon_bars if slim and args.reflect else None,
            charts_prefix=run_key_prefix("autorun"),
        )
        positions = {s: p.model_dump() for s, p in book.holdings.items() if s in self.tickers}

        async def analyse(symbol: str) -> None:
            child_id = pipeline_id(wf_id, symbol)
            try:
                result = await self._child(
                    pipeline_step(symbol),
                    PipelineWorkflow.run,
                    child_id,
                    plan.input_for(symbol, positions.get(symbol)),
                )
            except ChildWorkflowError as error:
                reason = self.given_up_reason(child_id) or root_message(error)
                self.failed.append(TickerFailure(symbol=symbol, reason=reason))
                workflow.logger.warning("%s failed, the run goes on: %s", symbol, error)
                return
            self._decided(symbol, result)

        many = len(self.tickers) > max(2 * min(args.concurrency, DIRECT_LANES), DIRECT_MAX)
        if slim and many and workflow.patched(BATCHES_PATCH):
            await self._batches(args, plan, positions)
        else:
            await run_bounded(self.tickers, args.concurrency, analyse)
        done = [self.results[s] for s in self.tickers if s in self.results]
        lines = [line_of(result) for result in done]
        stored = await self._gather(done) if slim else None
        # Before digests, the whole decisions travelled inline to the Portfolio and the report.
        decisions = (
            [] if slim else [TickerDecision.of(r) for r in done if isinstance(r, PipelineResult)]
        )

        self._phase(PORTFOLIO, f"deciding on {len(lines)} decision(s) for {args.portfolio}")
        outcome: PortfolioResult = await self._child(
            PORTFOLIO,
            PortfolioWorkflow.run,
            f"{wf_id}-portfolio",
            PortfolioInput(
                portfolio=args.portfolio,
                as_of=as_of,
                scan_summary=scan.summary_json.report if scan else None,
                decisions=decisions,
                decisions_key=stored,
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
                        scan=scan.summary if scan else None,
                        candidates=self.tickers,
                        decisions=decisions,
                        report_urls={
                            s: r.report.url
                            for s, r in self.results.items()
                            if isinstance(r, PipelineResult)
                        },
                        failures=self.failed,
                        portfolio_outcome=outcome,
                        portfolio_report_url=outcome.report.url,
                        usage=self.by_part,
                    ),
                    prefix=run_key_prefix("autorun"),
                    decisions=stored,
                ),
                **durable(REPORT_START_TO_CLOSE, heartbeat=HEARTBEAT),
            ),
        )

        reflections = await self._reflect(args) if args.reflect else []
        self._phase(
            "done",
            f"{len(lines)} decision(s), {len(outcome.executed)} trade(s); report: "
            f"{report.html.report.key}",
        )
        return AutoRunResult(
            workflow_id=wf_id,
            portfolio=args.portfolio,
            as_of=as_of,
            shortlist=shortlist,
            candidates=self.tickers,
            decisions=lines,
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

    def _decided(self, symbol: str, result: PipelineResult | PipelineDigest) -> None:
        """A Pipeline's result, counted."""
        self.results[symbol] = result
        self._count("pipelines", result.usage)

    async def _batches(
        self, args: AutoRunInput, plan: PipelinePlan, positions: dict[str, dict[str, Any]]
    ) -> None:
        """The candidates through ``PipelineBatch`` children, ``BATCHES_AT_ONCE`` at once, each
        with its share of ``concurrency``; each name's step runs while its batch does."""
        lanes = batch_concurrency(args.concurrency)
        batches = batches_of(self.tickers, args.concurrency)
        wf_id = workflow.info().workflow_id

        async def run_batch(numbered: tuple[int, list[str]]) -> None:
            number, symbols = numbered
            for symbol in symbols:
                self.steps[pipeline_step(symbol)] = StepState.RUNNING
            outcome: BatchOutcome = await self._child(
                f"{BATCH_CHILD} {number}",
                PipelineBatchWorkflow.run,
                f"{wf_id}-{BATCH_CHILD}-{number}",
                PipelineBatchInput(
                    plan=plan,
                    symbols=symbols,
                    positions={s: positions[s] for s in symbols if s in positions},
                    concurrency=lanes,
                ),
            )
            for symbol in symbols:
                digest = outcome.digests.get(symbol)
                if digest is not None:
                    self._decided(symbol, digest)
                self.steps[pipeline_step(symbol)] = (
                    StepState.DONE if digest is not None else StepState.FAILED
                )
            self.failed += outcome.failures

        await run_bounded(enumerate(batches, 1), BATCHES_AT_ONCE, run_batch)

    async def _list_candidates(self, args: AutoRunInput) -> list[str]:
        """The names given, every one known to the data: an unknown watchlist or symbol
        fails the run here, before the book is opened or anything is started."""
        given = args.watchlist or f"{len(args.symbols or [])} symbol(s)"
        self._phase(LIST_CANDIDATES, f"checking {given} against the data")
        listed: ListedCandidates = await track(
            self.steps,
            LIST_CANDIDATES,
            run_activity(
                AutoRunActivities.list_candidates,
                ListCandidatesRequest(
                    watchlist=args.watchlist, symbols=args.symbols, as_of=args.as_of
                ),
                **durable(STEP_START_TO_CLOSE),
            ),
        )
        return listed.symbols

    async def _resolve_as_of(self, args: AutoRunInput, symbol: str) -> datetime:
        """Without a Scan, the analysis time as a Pipeline of the first name resolves it, so
        every Pipeline and the Portfolio share one."""
        self._phase(RESOLVE_AS_OF, f"resolving the analysis time on {symbol}")
        resolved: ResolvedAsOf = await track(
            self.steps,
            RESOLVE_AS_OF,
            run_activity(
                ResearchActivities.resolve_as_of,
                ResolveAsOfRequest(symbol=symbol, as_of=args.as_of, not_after=scheduled_time()),
                **durable(STEP_START_TO_CLOSE),
            ),
        )
        return resolved.as_of

    async def _gather(self, done: list[PipelineResult | PipelineDigest]) -> ObjectRef:
        """The decisions the Pipelines stored, gathered into one object beside the report."""
        self._phase(GATHER_DECISIONS, f"gathering {len(done)} stored decision(s)")
        gathered: GatheredDecisions = await track(
            self.steps,
            GATHER_DECISIONS,
            run_activity(
                AutoRunActivities.gather_decisions,
                GatherDecisionsRequest(
                    sources=[r.stored_decision for r in done if isinstance(r, PipelineDigest)],
                    target=run_report("autorun", "decisions.json"),
                ),
                **durable(STEP_START_TO_CLOSE),
            ),
        )
        return gathered.decisions

    async def _reflect(self, args: AutoRunInput) -> list[str]:
        """One ``Reflect`` per decision, left to wait out its horizon: each Pipeline started
        its own; before digests, the AutoRun starts them here from the whole results."""
        self._phase(REFLECT, f"starting {len(self.results)} Reflect run(s)")
        self.steps[REFLECT] = StepState.RUNNING
        started = []
        for symbol, result in self.results.items():
            if isinstance(result, PipelineDigest):
                started += [result.reflection] if result.reflection else []
                continue
            plan = ReflectPlan(
                workflow_id=reflect_id(workflow.info().workflow_id, symbol),
                horizon_bars=args.reflect_horizon_bars,
            )
            started.append(await start_reflect(result, plan, args.llm))
        self.steps[REFLECT] = StepState.DONE
        return started
