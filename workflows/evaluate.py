"""The ``Evaluate`` workflow: QuantAgent over many benchmark windows → accuracy vs baselines.

load the windows (a snapshot in S3, a manifest back) → one ``QuantAgent`` child per
window, at most ``concurrency`` at once → score the calls against the held-out bars
and the baselines → Markdown, CSV, JSON and PNG in the reports bucket.

No look-ahead by construction: a child's input is built from the window's
*visible* bars only (``read_visible_windows`` cuts the held-out bars off before
they reach this workflow), inline, so a child's history shows exactly what its
agents saw. Only the window's truth comes back with them, for the running
accuracy of the ``progress`` query; it never goes into a child. A window whose
analysis fails is recorded with its error and left out of the scores, and so is a
window the loader found invalid (bad rows), without a child; if the first windows
analysed all fail, the cause is systematic (an unknown model, a refused request) and
the evaluation stops. Invalid windows do not count towards that
stop: their cause is their own rows. Every ``windows_per_run`` windows the run
continues as new, carrying the calls so far, so the benchmark's 1,600 windows
never make one history too long.

With ``variants`` (``--anonymise``, ``quantdesk eval probes``) each window also gets
one child per changed copy of its visible bars (``shared.evaluation.probes``), built
here from the seed and the window, so the history shows what each child was shown;
their calls feed the probe tables and the anonymised gap, never the window's score.
"""

from __future__ import annotations

import asyncio
from datetime import datetime, timedelta

from pydantic import BaseModel, Field
from temporalio import workflow
from temporalio.exceptions import ApplicationError, ChildWorkflowError

with workflow.unsafe.imports_passed_through():
    from activities.evaluation import (
        EvaluationActivities,
        LoadWindowsRequest,
        PlotRequest,
        ScoredEvaluation,
        ScoreRequest,
        VisiblePage,
        WindowInfo,
        WindowManifest,
    )
    from activities.services import StoredReport
    from shared.agents.quantagent import Direction
    from shared.evaluation.probes import ProbeCall, ProbeReport, Variant, variant_window
    from shared.evaluation.scoring import AgentCall, EvaluationSummary, majority_call
    from shared.evaluation.sources import WindowSpec
    from shared.evaluation.windows import VisibleWindow
    from shared.llm.contracts import LlmChoice, UsageReport
    from workflows.activity_calls import run_activity
    from workflows.concurrency import gather_all, root_message, run_bounded
    from workflows.inputs import RunInput
    from workflows.progress import RunProgress
    from workflows.provider_check import check_provider
    from workflows.quantagent import QuantAgentInput, QuantAgentResult, QuantAgentWorkflow
    from workflows.resume import BAD_REPLY, Resumable
    from workflows.retries import HEARTBEAT, durable
    from workflows.run_keys import run_key_prefix
    from workflows.visibility import tag_run

LOAD_START_TO_CLOSE = timedelta(minutes=5)
"""Reading and validating 1,600 window files and storing their pages takes well under this."""
PAGE_START_TO_CLOSE = timedelta(minutes=1)
SCORE_START_TO_CLOSE = timedelta(minutes=5)
PLOT_START_TO_CLOSE = timedelta(minutes=2)
FAIL_FAST_AFTER = 3
"""This many failures before any success stop the evaluation: the cause is not the windows."""
MAX_CONCURRENCY = 64
DEFAULT_CONCURRENCY = 4
MAX_REPEATS = 10
DEFAULT_WINDOWS_PER_RUN = 200
"""~30 KB of history a window (its bars, the child's input and result): ~6 MB a run."""

LOADING, ANALYSING, SCORING, DONE = "loading", "analysing", "scoring", "done"


class EvaluateCarry(BaseModel):
    """What a run hands to the next when it continues as new."""

    prefix: str = Field(description="object keys of this evaluation start with it")
    manifest: WindowManifest
    calls: list[AgentCall] = Field(default_factory=list, description="one per window done")
    correct: int = 0
    runs: int = 1
    usage: UsageReport = Field(default_factory=UsageReport)
    probe_calls: list[ProbeCall] = Field(
        default_factory=list, description="with variants: every agent's calls, each way shown"
    )


class EvaluateInput(RunInput):
    """Which windows, which LLM, how many analyses at once."""

    windows: WindowSpec
    llm: LlmChoice = LlmChoice()
    concurrency: int = Field(DEFAULT_CONCURRENCY, ge=1, le=MAX_CONCURRENCY)
    seed: int = Field(0, description="the random baseline's seed")
    windows_per_run: int = Field(DEFAULT_WINDOWS_PER_RUN, ge=1, le=1000)
    repeats: int = Field(
        1,
        ge=1,
        le=MAX_REPEATS,
        description="analyses of each window, for models that answer differently each time; "
        "the window counts once, by the majority call, and the report shows the spread",
    )
    variants: list[Variant] = Field(
        default_factory=list,
        description="changed copies of each window analysed once each besides it "
        "(anonymised, probes)",
    )
    carry: EvaluateCarry | None = Field(None, description="set by the workflow itself")


class EvaluateProgress(RunProgress):
    """The answer of the ``progress`` query: ``done``/``total`` count windows (failed ones
    included; total is 0 until they are loaded)."""

    failed: int
    running: int
    accuracy: float | None = Field(description="correct calls / successful analyses so far")


class EvaluationReports(BaseModel):
    """Where the four renderings of the table are stored."""

    markdown: StoredReport
    csv: StoredReport
    json_table: StoredReport
    plot: StoredReport


class EvaluateResult(BaseModel):
    """The table, its stored renderings and what the analyses cost."""

    summary: EvaluationSummary
    reports: EvaluationReports
    usage: UsageReport
    runs: int = Field(description="runs of this workflow id (it continues as new)")
    probes: ProbeReport | None = Field(None, description="with variants: probes and the gap")


def _probe_call(
    window_id: str, variant: Variant | None, result: QuantAgentResult | str
) -> ProbeCall:
    """What the directional agents said on one way of showing the window (or its error)."""
    if isinstance(result, str):
        return ProbeCall(window_id=window_id, variant=variant, error=result)
    return ProbeCall(
        window_id=window_id,
        variant=variant,
        decision=result.decision.decision,
        pattern=result.pattern_report.bias,
        trend=result.trend_report.prediction,
    )


def _agent_call(window_id: str, result: QuantAgentResult | str) -> AgentCall:
    """The window's call from one child's result, or the child's error."""
    if isinstance(result, str):
        return AgentCall(window_id=window_id, error=result)
    return AgentCall(
        window_id=window_id,
        decision=result.decision.decision,
        risk_reward=result.decision.risk_reward_ratio,
    )


def child_id(window_id: str, sample: int = 0) -> str:
    """The child's workflow id: the Evaluate id and the window (and the repeat after the
    first), stable across runs."""
    repeat = f"-r{sample + 1}" if sample else ""
    return f"{workflow.info().workflow_id}-{window_id}{repeat}"


@workflow.defn(name="Evaluate")
class EvaluateWorkflow(Resumable):
    """QuantAgent on benchmark windows, scored against baselines."""

    def __init__(self) -> None:
        self.phase = LOADING
        self.total = 0
        self.failed = 0
        self.running = 0
        self.carry: EvaluateCarry | None = None
        self.invalid: set[str] = set()
        self._pages: dict[int, asyncio.Future[VisiblePage]] = {}

    @workflow.query(name="progress")
    def progress(self) -> EvaluateProgress:
        """Windows done, failed and running, and the accuracy so far."""
        carry = self.carry
        done = len(carry.calls) if carry else 0
        scored = done - self.failed
        return EvaluateProgress.of(
            {},
            carry.usage if carry else UsageReport(),
            phase=self.phase,
            waiting=self.waiting_steps(),
            children=self.running_children(),
            total=self.total,
            done=done,
            failed=self.failed,
            running=self.running,
            accuracy=carry.correct / scored if carry and scored else None,
        )

    @workflow.run
    async def run(self, args: EvaluateInput) -> EvaluateResult:
        """Load (first run only), analyse the next windows, then continue as new or score."""
        self.open_gate()
        tag_run("Evaluate")
        check_provider(args.llm)
        carry = args.carry or await self._load(args)
        self.carry = carry
        self.total = len(carry.manifest.windows)
        self.invalid = {w.window_id for w in carry.manifest.windows if w.error is not None}
        self.failed = sum(1 for call in carry.calls if call.error is not None)
        start = len(carry.calls)
        batch = carry.manifest.windows[start : start + args.windows_per_run]
        self.phase = ANALYSING
        await run_bounded(batch, args.concurrency, lambda info: self._analyse(args, carry, info))
        if len(carry.calls) < self.total:
            carry.runs += 1
            workflow.continue_as_new(args.model_copy(update={"carry": carry}))
        return await self._score(args, carry)

    async def _load(self, args: EvaluateInput) -> EvaluateCarry:
        prefix = run_key_prefix("evaluate")
        manifest: WindowManifest = await run_activity(
            EvaluationActivities.load_eval_windows,
            LoadWindowsRequest(windows=args.windows, prefix=prefix),
            **durable(LOAD_START_TO_CLOSE, heartbeat=HEARTBEAT),
        )
        return EvaluateCarry(prefix=prefix, manifest=manifest)

    def _visible_page(self, carry: EvaluateCarry, page: int) -> asyncio.Future[VisiblePage]:
        """The page's visible bars, fetched once per run however many lanes ask."""
        if page not in self._pages:
            self._pages[page] = asyncio.ensure_future(
                run_activity(
                    EvaluationActivities.read_visible_windows,
                    carry.manifest.pages[page],
                    **durable(PAGE_START_TO_CLOSE),
                    summary=f"read_visible_windows page {page}",
                )
            )
        return self._pages[page]

    def gives_up_on(self, child: str, failure: str) -> bool:
        """A window whose reply stays off-schema is scored failed, not waited for: the next
        window may well go right, and a person fixes a model, not one window."""
        return failure == BAD_REPLY

    async def _analyse(self, args: EvaluateInput, carry: EvaluateCarry, info: WindowInfo) -> None:
        """QuantAgent on the window's visible bars, ``repeats`` times one after the other; the
        window's call (or error) is recorded once, the repeats' majority.

        An invalid window is recorded as failed with the loader's reason, without a child.
        With ``variants``, one more child per variant, alongside, on the changed bars
        (their calls are recorded for the probes, never scored as the window's call).
        """
        if info.error is not None:
            self._record(carry, AgentCall(window_id=info.window_id, error=info.error), None)
            return
        page = await self._visible_page(carry, info.page)
        window = next(w for w in page.windows if w.window_id == info.window_id)
        repeats = self._repeats(args, carry, window)
        # No patch needed: a history without variants issues exactly the commands it did.
        if not args.variants:
            results = await repeats
        else:
            results, changed = await gather_all(
                repeats,
                gather_all(*(self._variant(args, carry, window, v) for v in args.variants)),
            )
            carry.probe_calls += [_probe_call(window.window_id, None, results[0]), *changed]
        calls = [_agent_call(window.window_id, result) for result in results]
        call = calls[0] if args.repeats == 1 else majority_call(window.window_id, calls)
        self._record(carry, call, page.truths[window.window_id])

    async def _repeats(
        self, args: EvaluateInput, carry: EvaluateCarry, window: VisibleWindow
    ) -> list[QuantAgentResult | str]:
        """The window's ``repeats`` analyses, one after the other."""
        return [
            await self._run_child(args, carry, window, window.window_id, sample)
            for sample in range(args.repeats)
        ]

    async def _variant(
        self, args: EvaluateInput, carry: EvaluateCarry, window: VisibleWindow, variant: Variant
    ) -> ProbeCall:
        """The child on ``variant`` of ``window``, analysed as of its own (maybe shifted) last bar."""
        shown = variant_window(window, variant, args.seed)
        label = f"{window.window_id}-{variant.value}"
        result = await self._run_child(args, carry, shown, label, as_of=shown.bars[-1].time)
        return _probe_call(window.window_id, variant, result)

    async def _run_child(
        self,
        args: EvaluateInput,
        carry: EvaluateCarry,
        window: VisibleWindow,
        label: str,
        sample: int = 0,
        as_of: datetime | None = None,
    ) -> QuantAgentResult | str:
        """The QuantAgent child ``label`` on ``window``'s bars (repeat ``sample``, from 0, asks
        again under an id of its own): its result (usage counted) or its error."""
        name = child_id(label, sample)
        self.running += 1
        self.child_started(name)
        try:
            result: QuantAgentResult = await workflow.execute_child_workflow(
                QuantAgentWorkflow.run,
                QuantAgentInput(
                    symbol=window.asset,
                    timeframe=window.timeframe,
                    as_of=as_of,
                    bars=window.bars,
                    lookback=len(window.bars),
                    llm=args.llm.model_copy(update={"sample": sample}) if sample else args.llm,
                ),
                id=name,
                static_summary=f"QuantAgent on window {label}"
                + (f", repeat {sample + 1}" if sample else ""),
            )
        except ChildWorkflowError as error:
            return self.given_up_reason(name) or root_message(error)
        finally:
            self.running -= 1
            self.child_finished(name)
        for agent, usage in result.usage.by_agent.items():
            carry.usage.add(agent, usage)
        return result

    def _record(self, carry: EvaluateCarry, call: AgentCall, truth: Direction | None) -> None:
        """Count the call; stop the evaluation if every window analysed so far failed."""
        carry.calls.append(call)
        if call.error is None:
            if call.decision == truth:
                carry.correct += 1
            return
        self.failed += 1
        if call.window_id in self.invalid:
            return
        analysed = [c for c in carry.calls if c.window_id not in self.invalid]
        if len(analysed) >= FAIL_FAST_AFTER and all(c.error is not None for c in analysed):
            raise ApplicationError(
                f"the first {len(analysed)} windows all failed, "
                "so the cause is not the windows; "
                f"the last error: {call.error}",
                type="EvaluationFailed",
                non_retryable=True,
            )

    async def _score(self, args: EvaluateInput, carry: EvaluateCarry) -> EvaluateResult:
        self.phase = SCORING
        label = " ".join(
            part for part in ("QuantAgent,", args.llm.provider, args.llm.model) if part
        )
        scored: ScoredEvaluation = await run_activity(
            EvaluationActivities.score_evaluation,
            ScoreRequest(
                pages=carry.manifest.pages,
                calls=carry.calls,
                seed=args.seed,
                label=label,
                prefix=carry.prefix,
                llm=args.llm,
                windows=args.windows,
                cost_usd=carry.usage.total.cost_usd,
                variants=args.variants,
                probe_calls=carry.probe_calls,
            ),
            **durable(SCORE_START_TO_CLOSE, heartbeat=HEARTBEAT),
        )
        plot: StoredReport = await run_activity(
            EvaluationActivities.render_evaluation_plot,
            PlotRequest(summary=scored.summary, prefix=carry.prefix),
            **durable(PLOT_START_TO_CLOSE, heartbeat=HEARTBEAT),
        )
        self.phase = DONE
        return EvaluateResult(
            summary=scored.summary,
            reports=EvaluationReports(
                markdown=scored.markdown, csv=scored.csv, json_table=scored.json_table, plot=plot
            ),
            usage=carry.usage,
            runs=carry.runs,
            probes=scored.probes,
        )
