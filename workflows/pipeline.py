"""The ``Pipeline`` workflow: TradingAgents' per-ticker graph as one durable run.

resolve the analysis time (and read a stored Scan summary, if given as the macro
context) → the analysts in parallel (each its own tool loop, tools read as of that
time) → recall every role's lessons (one activity) → a critical abort goes
straight to the portfolio manager → else the bull/bear ``Debate`` child (with the
research manager's plan) → the trader → the ``Risk`` child → the portfolio
manager → a Markdown report of the whole run in S3. Given a ``chart`` target (an AutoRun
gives each of its Pipelines one beside its run report), the ticker's chart is drawn there
beside the analysts, off the run's critical path, and waited for before the report.

Each analyst's conversation stays its own: its request carries its
``AnalystInputs`` and its tool results feed only its report (and, for the
market analyst, the trader's price facts). Later agents read reports by name
through their typed inputs. The ``state`` query returns everything produced so
far, which is what ``Debate`` and ``Risk`` can be restarted from.

An analyst whose reply stays invalid after its repair turns is recorded as missing
(``AnalystReports.missing``, the step shows ``missing``) and the run goes on with the
other reports: every later prompt and the report say which is missing and why, with
its raw reply's key. The later agents cannot be done without: a reply of theirs that
stays invalid parks the call until ``resume`` (``workflows.resume``).
"""

from __future__ import annotations

import asyncio
from collections.abc import Awaitable
from dataclasses import dataclass
from datetime import timedelta
from typing import Any, TypeVar

from temporalio import workflow
from temporalio.exceptions import ActivityError, ApplicationError
from temporalio.types import MethodAsyncSingleParam
from temporalio.workflow import ParentClosePolicy

with workflow.unsafe.imports_passed_through():
    from activities.autorun import AutoRunActivities, TickerChartRequest
    from activities.research import (
        JSON,
        MARKDOWN,
        LoadTextRequest,
        RecallRequest,
        ResearchActivities,
        ResolveAsOfRequest,
        StoredDecision,
        StoreReportRequest,
    )
    from shared.agents.missing import MissingStep
    from shared.agents.pipeline import portfolio_manager
    from shared.agents.pipeline import trader as trader_agent
    from shared.agents.pipeline.facts import (
        PriceFacts,
        payloads_of_results,
        positive,
        price_facts,
    )
    from shared.agents.pipeline.inputs import (
        AnalystInputs,
        AnalystReports,
        ManagerInputs,
        TraderInputs,
    )
    from shared.agents.pipeline.prompts import (
        REPORT_HEADINGS,
        render_plan,
        render_proposal,
        report_or_absence,
    )
    from shared.agents.pipeline.roles import (
        ANALYST_AGENTS,
        ANALYST_SPECS,
        PORTFOLIO_MANAGER,
        TRADER,
    )
    from shared.agents.pipeline.schemas import (
        AnalystKind,
        AnalystReport,
        DebateTurn,
    )
    from shared.agents.portfolio.inputs import DecisionLine, TickerDecision
    from shared.agents.spec import AgentSpec
    from shared.llm.contracts import LlmChoice, UsageReport
    from shared.memory import MemoryRole
    from shared.observability.metrics import decided
    from shared.queues import TOOLS_QUEUE
    from shared.storage.objects import ObjectRef
    from workflows.activity_calls import GroupActivity, Request, Result
    from workflows.children import Counted, flow_of, usage_report
    from workflows.concurrency import gather_all
    from workflows.debate_contracts import DebateInput
    from workflows.debates import DebateWorkflow, RiskWorkflow
    from workflows.inputs import scheduled_time
    from workflows.llm_calls import (
        InputsT,
        OutputT,
        ToolUse,
        call_agent,
        call_agent_tools_or_missing,
    )
    from workflows.pipeline_contracts import (
        MACRO_CONTEXT_MAX,
        DataSource,
        PipelineDigest,
        PipelineInput,
        PipelineProgress,
        PipelineResult,
        PipelineState,
        ReflectPlan,
        situation_of,
    )
    from workflows.progress import StepState, mark_missing
    from workflows.provider_check import check_provider
    from workflows.reflect import ReflectWorkflow
    from workflows.run_keys import run_key_prefix, run_report
    from workflows.tracked import TrackedRun
    from workflows.visibility import tag_run

Arg = TypeVar("Arg", bound=DebateInput)
Child = TypeVar("Child", bound=Counted)

RESEARCH_START_TO_CLOSE = timedelta(minutes=1)

RESOLVE_AS_OF = "resolve_as_of"
LOAD_MACRO_CONTEXT = "load_macro_context"
RECALL_MEMORIES = "recall_memories"
CHART = "chart"
DEBATE = "debate"
RISK = "risk"
REPORT = "report"


async def start_reflect(result: PipelineResult, plan: ReflectPlan, llm: LlmChoice) -> str:
    """Start ``plan``'s Reflect on ``result`` and leave it running (it outlives its parent,
    waiting out the horizon); returns its id."""
    await workflow.start_child_workflow(
        ReflectWorkflow.run,
        result.reflect_input(horizon_bars=plan.horizon_bars, llm=llm),
        id=plan.workflow_id,
        parent_close_policy=ParentClosePolicy.ABANDON,
        static_summary=f"Reflect on {result.symbol} {result.as_of:%Y-%m-%d}",
    )
    return plan.workflow_id


def render_run_report(state: PipelineState) -> str:
    """The whole run as Markdown, in graph order: reports, debate, plan, order, risk, decision."""
    decision = state.decision
    assert decision is not None and state.as_of is not None
    without = ", ".join(m.step for m in state.missing)
    parts = [
        f"# {state.symbol}: {decision.rating.value} ({decision.signal.value})",
        f"Analysis as of {state.as_of.isoformat()} · run `{state.workflow_id}`",
        f"## Executive summary\n{decision.executive_summary}",
        *([f"> Decided without the report of: {without} (see below)."] if without else []),
        "# Analyst reports",
    ]
    parts += [
        f"## {REPORT_HEADINGS[kind]}\n{report_or_absence(state.reports, kind)}"
        for kind in state.analysts
    ]
    if state.abort_reason:
        parts.append(
            f"# Critical abort\n{state.abort_reason}\n\nThe debates and trader were skipped."
        )
    if state.research_transcript:
        parts.append("# Bull/bear debate\n" + _turns(state.research_transcript))
    if state.research_plan:
        parts.append(f"# Research plan\n{render_plan(state.research_plan)}")
    if state.proposal:
        parts.append(f"# Trader's proposal\n{render_proposal(state.proposal)}")
    if state.risk_transcript:
        parts.append("# Risk debate\n" + _turns(state.risk_transcript))
    target = f"{decision.price_target:.6g}" if decision.price_target else "none"
    parts.append(
        f"# Portfolio manager's decision\n**{decision.rating.value}** ({decision.signal.value}), "
        f"price target {target}, horizon {decision.time_horizon}\n\n{decision.investment_thesis}"
    )
    if state.data:
        parts.append(render_data_sources(state.data))
    usage = state.usage.total
    parts.append(f"---\nLLM calls {usage.calls}, tokens {usage.total_tokens}")
    return "\n\n".join(parts) + "\n"


def render_data_sources(sources: list[DataSource]) -> str:
    """The Data section: per analyst and tool, the vendor that answered and those passed over
    for the run's time (each with why), once per distinct row."""
    rows = dict.fromkeys(
        (s.analyst.value, s.tool, s.vendor or "no data", "; ".join(s.passed_over) or "-")
        for s in sources
    )
    table = [
        "| analyst | tool | vendor | passed over for this time |",
        "|---|---|---|---|",
    ]
    table += [f"| {' | '.join(cell.replace('|', '/') for cell in row)} |" for row in rows]
    return "# Data\n" + "\n".join(table)


def _turns(turns: list[DebateTurn]) -> str:
    return "\n\n".join(
        f"**{t.speaker.value}, round {t.round}**: {t.argument}"
        + "".join(f"\n- {point}" for point in t.key_points)
        for t in turns
    )


@dataclass(frozen=True)
class AnalystOutcome:
    """One analyst's report (or why it is missing), and the market analyst's price facts."""

    kind: AnalystKind
    report: AnalystReport | None
    missing: MissingStep | None = None
    facts: PriceFacts | None = None
    sources: tuple[DataSource, ...] = ()


@workflow.defn(name="Pipeline")
class PipelineWorkflow(TrackedRun):
    """Analysts ∥ → debate → trader → risk → portfolio manager, for one ticker."""

    def __init__(self) -> None:
        super().__init__()
        self.saved: PipelineState | None = None

    @workflow.query(name="progress")
    def progress(self) -> PipelineProgress:
        """The phase, each step's state and the tokens spent so far."""
        return self.progress_as(PipelineProgress)

    @workflow.query(name="state")
    def state(self) -> PipelineState | None:
        """Everything produced so far; None before the input was read."""
        return self.saved

    def _enter(self, phase: str) -> None:
        """Enter ``phase``; the Web UI's current details name it."""
        self.phase = phase
        symbol = self.saved.symbol if self.saved else ""
        self.gate.show(f"**{phase}** {symbol}".strip())

    def _research(
        self, activity: GroupActivity[Request, Result], request: Request, step: str | None = None
    ) -> Awaitable[Result]:
        """One research activity, shown as ``step`` (default: its name)."""
        return self._activity_step(activity, request, RESEARCH_START_TO_CLOSE, step)

    @workflow.run
    async def run(self, args: PipelineInput) -> PipelineResult | PipelineDigest:
        """Walk the graph; a critical abort skips from the analysts to the PM."""
        self.open_gate()
        check_provider(args.llm)
        info = workflow.info()
        analysts = [ANALYST_AGENTS[kind] for kind in args.analysts]
        later = [RECALL_MEMORIES, DEBATE, TRADER, RISK, PORTFOLIO_MANAGER, REPORT]
        first = [
            RESOLVE_AS_OF,
            *([LOAD_MACRO_CONTEXT] if args.macro_context_key else []),
            *([CHART] if args.chart else []),
        ]
        self.steps = {name: StepState.PENDING for name in [*first, *analysts, *later]}
        state = self.saved = PipelineState(
            workflow_id=info.workflow_id,
            symbol=args.symbol.strip().upper(),
            analysts=args.analysts,
            debate_rounds=args.debate_rounds,
            risk_rounds=args.risk_rounds,
            llm=args.llm,
            macro_context=args.macro_context,
            usage=self.usage,
        )
        self._enter(RESOLVE_AS_OF)
        resolved = await self._research(
            ResearchActivities.resolve_as_of,
            ResolveAsOfRequest(symbol=args.symbol, as_of=args.as_of, not_after=scheduled_time()),
        )
        state.as_of = resolved.as_of
        tag_run("Pipeline", symbol=state.symbol, as_of=state.as_of)
        chart = asyncio.create_task(self._chart(args.chart, state)) if args.chart else None
        if args.macro_context_key is not None:
            self._enter(LOAD_MACRO_CONTEXT)
            loaded = await self._research(
                ResearchActivities.load_text,
                LoadTextRequest(
                    source=args.macro_context_key,
                    field="macro_context_key",
                    max_chars=MACRO_CONTEXT_MAX,
                ),
                LOAD_MACRO_CONTEXT,
            )
            state.macro_context = loaded.text
        self._enter("analysts")
        await self._analysts(args, state)
        await self._recall(state)
        aborted = state.reports.critical_abort()
        if aborted is not None:
            state.abort_reason = f"{aborted.analyst.value}: {aborted.critical_abort.reason}"
            for name in (DEBATE, TRADER, RISK):
                self.steps[name] = StepState.SKIPPED
        else:
            await self._debate_and_trade(args, state)
        self._enter(PORTFOLIO_MANAGER)
        inputs = ManagerInputs(
            symbol=state.symbol,
            reports=state.reports,
            transcript=state.risk_transcript,
            memories=state.memories.get(MemoryRole.PORTFOLIO_MANAGER, ""),
            research_plan=state.research_plan,
            proposal=state.proposal,
            last_price=positive(state.price.last_close) if state.price else None,
            macro_context=state.macro_context,
        )
        state.decision = await self._ask(args, portfolio_manager.SPEC, inputs)
        decided(workflow.metric_meter(), "pipeline", state.decision.rating.value)
        if chart is not None:
            await chart
        self._enter(REPORT)
        # Typed here as the activity stores them, so the decision's link equals the report's.
        target = run_report("pipeline", "report.md").model_copy(update={"content_type": MARKDOWN})
        stored = (
            StoredDecision(
                decision=TickerDecision.made(
                    state.symbol, state.as_of, info.workflow_id, state.decision, target
                ),
                target=run_report("pipeline", "decision.json").model_copy(
                    update={"content_type": JSON}
                ),
            )
            if args.slim_result
            else None
        )
        state.report = await self._research(
            ResearchActivities.store_report,
            StoreReportRequest(markdown=render_run_report(state), target=target, decision=stored),
            REPORT,
        )
        result = PipelineResult.model_validate({**state.model_dump(), "run_id": info.run_id})
        reflection = await start_reflect(result, args.reflect, args.llm) if args.reflect else None
        self._enter("done")
        if stored is None:
            return result
        return PipelineDigest(
            workflow_id=info.workflow_id,
            run_id=info.run_id,
            decision=DecisionLine.of(stored.decision),
            stored_decision=stored.target,
            usage=state.usage.total,
            reflection=reflection,
        )

    async def _chart(self, target: ObjectRef, state: PipelineState) -> None:
        """Draw the ticker's chart at ``target`` beside the analysis. The report that shows it
        draws it itself if it is missing, so a failure here is logged, not the run's."""
        assert state.as_of is not None
        try:
            await self._research(
                AutoRunActivities.store_ticker_chart,
                TickerChartRequest(symbol=state.symbol, as_of=state.as_of, target=target),
                CHART,
            )
        except ActivityError as error:
            mark_missing(self.steps, MissingStep(step=CHART, reason=f"not drawn ahead: {error}"))

    async def _ask(
        self, args: PipelineInput, spec: AgentSpec[InputsT, OutputT], inputs: InputsT
    ) -> OutputT:
        """One single-turn agent of the Pipeline, shown as its own step."""
        answer = call_agent(
            spec, inputs, llm=args.llm, raw_key=self._raw_key(spec.name), usage=self.usage
        )
        output: OutputT = await self._step(spec.name, answer)
        return output

    def _raw_key(self, agent: str) -> str:
        """Where ``agent``'s unusable reply is kept: under this run's keys, by agent."""
        return f"{run_key_prefix('pipeline')}/{agent}.raw.txt"

    async def _analysts(self, args: PipelineInput, state: PipelineState) -> None:
        """Every chosen analyst's tool loop at once; reports land under their own names."""
        assert state.as_of is not None
        inputs = AnalystInputs(
            symbol=state.symbol,
            as_of=state.as_of,
            macro_context=state.macro_context,
            position=args.position,
        )
        done = await gather_all(*(self._analyst(args, kind, inputs) for kind in args.analysts))
        state.reports = AnalystReports.of(
            [o.report for o in done if o.report is not None],
            {o.kind: o.missing for o in done if o.missing is not None},
        )
        if not state.reports.by_kind():
            raise ApplicationError(
                "every analyst's report is missing, so there is nothing to debate: "
                + "; ".join(m.describe() for m in state.missing),
                type="NoReports",
                non_retryable=True,
            )
        state.price = next((o.facts for o in done if o.facts is not None), None)
        state.data = [source for outcome in done for source in outcome.sources]

    async def _analyst(
        self, args: PipelineInput, kind: AnalystKind, inputs: AnalystInputs
    ) -> AnalystOutcome:
        """One analyst's tool loop; the market analyst's tool results also give the price facts.

        The tool context fixes the symbol and the analysis time, so no tool reads another
        ticker or anything after ``as_of`` whatever the model asks for. A reply that stays
        invalid makes the report missing, not the run failed; the step shows as missing.
        """
        spec = ANALYST_SPECS[kind]
        prefix = run_key_prefix("pipeline")
        tools = ToolUse(
            queue=TOOLS_QUEUE,
            context={
                "as_of": inputs.as_of.isoformat(),
                "symbol": inputs.symbol,
                "result_key_prefix": f"{prefix}/{spec.name}",
            },
            hidden=("symbol",),
            # Only the market analyst's answers give the price facts the workflow reads.
            read_results=kind is AnalystKind.MARKET,
        )
        run = await self._step(
            spec.name,
            call_agent_tools_or_missing(
                spec,
                inputs,
                llm=args.llm,
                raw_key=self._raw_key(spec.name),
                usage=self.usage,
                tools=tools,
                # The step, not the model, knows which analyst spoke.
                fixed={"analyst": kind.value},
            ),
        )
        if isinstance(run, MissingStep):
            return self._missing(kind, run)
        if run.output is None:
            return self._missing(kind, MissingStep(step=spec.name, reason=run.problem or ""))
        facts = price_facts(payloads_of_results(run.loop.tool_results))
        sources = tuple(
            DataSource(analyst=kind, tool=r.name, vendor=r.vendor, passed_over=r.passed_over)
            for r in run.loop.tool_results
            if r.ok and (r.vendor or r.passed_over)
        )
        market = kind is AnalystKind.MARKET
        return AnalystOutcome(kind, run.output, facts=facts if market else None, sources=sources)

    def _missing(self, kind: AnalystKind, missing: MissingStep) -> AnalystOutcome:
        """Record an analyst's report as missing; the run goes on without it."""
        mark_missing(self.steps, missing)
        return AnalystOutcome(kind, None, missing)

    async def _recall(self, state: PipelineState) -> None:
        """Every role's closest lessons from before ``as_of``, matched on the reports; the
        portfolio manager reads its own on the abort path too."""
        assert state.as_of is not None
        self._enter(RECALL_MEMORIES)
        situation = situation_of(state.reports)
        recalled = await self._research(
            ResearchActivities.recall_memories,
            RecallRequest(
                roles=list(MemoryRole), situation=situation, symbol=state.symbol, as_of=state.as_of
            ),
        )
        state.memories = recalled.memories

    async def _debate_and_trade(self, args: PipelineInput, state: PipelineState) -> None:
        """Bull/bear debate and plan → trader → risk debate, filling ``state``."""
        assert state.as_of is not None
        debate = await self._debate(DEBATE, DebateWorkflow.run, state.debate_input())
        state.research_transcript = debate.transcript
        state.research_plan = debate.research_plan

        self._enter(TRADER)
        trader = TraderInputs.of(
            state.symbol,
            state.reports,
            debate.research_plan,
            state.price,
            state.memories.get(MemoryRole.TRADER, ""),
        )
        state.proposal = await self._ask(args, trader_agent.SPEC, trader)

        risk = await self._debate(RISK, RiskWorkflow.run, state.risk_input())
        state.risk_transcript = risk.transcript

    async def _debate(
        self, step: str, run: MethodAsyncSingleParam[Any, Arg, Child], arg: Arg
    ) -> Child:
        """The ``step`` debate child (id ``{workflow_id}-{step}``), which ``resume`` reaches
        while it runs; its usage counts as this run's."""
        child_id = f"{workflow.info().workflow_id}-{step}"
        summary = f"{flow_of(run)} {arg.symbol}, {arg.rounds} round(s)"
        self._enter(step)
        result = await self._child_step(step, run, arg, child_id=child_id, summary=summary)
        self._count(usage_report(result.usage, step))
        return result

    def _count(self, child: UsageReport) -> None:
        """A child's usage, per agent, into this run's."""
        for agent, usage in child.by_agent.items():
            self.usage.add(agent, usage)
