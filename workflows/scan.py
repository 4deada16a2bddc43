"""The ``Scan`` workflow: the fork's macro scanner with a correct fan-in and a checked shortlist.

resolve the scan time → geopolitical ∥ market movers ∥ (sector → smart money), each its
own tool loop → the industry deep dive, once, on the three sectors with the largest
absolute 21-day move (picked here from the sector scanner's tool results) → the
macro synthesis (a ``ScanSummary``) → the shortlist checked against the data
universe as of the scan, one repair turn if it fails, then a clear failure → the
summary stored as JSON and Markdown.

The fork started the deep dive from each branch's edge and so ran it twice; here
it is one awaited step after ``gather_all`` of the three branches. What the graph
depends on (the sector moves, the smart-money screens, the chosen sectors'
leaders, the macro series) is read through calls the workflow makes before the
agent's first turn (``prefetch``), so no routing rests on whether a model chose
to call a tool; a model may ask for more through its tools. Each report is stored under the run's
keys as soon as its agent finishes, so a failed synthesis still leaves them.

A scanner (or the deep dive) whose reply stays invalid after its repair turns is
recorded as missing and the scan goes on: what the workflow read for it (the sector
moves, the screens, the leading companies) still counts, and every later prompt, the
stored summary and the result name the missing report and why. The synthesis cannot
be done without: a reply of its that stays invalid parks the call until ``resume``.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from datetime import datetime, timedelta
from typing import Any

from pydantic import AwareDatetime, BaseModel, Field, ValidationError
from temporalio import workflow
from temporalio.exceptions import ApplicationError

with workflow.unsafe.imports_passed_through():
    from activities.research import (
        ResearchActivities,
        ResolveAsOfRequest,
        ResolvedAsOf,
        StoredReport,
        StoreReportRequest,
    )
    from activities.scan import (
        ShortlistCheck,
        ShortlistVerdict,
        StoreJsonRequest,
        check_shortlist,
        store_json,
    )
    from shared.agents.missing import MissingStep
    from shared.agents.scan import industry_deep_dive, macro_synthesis
    from shared.agents.scan.facts import (
        Candidate,
        answers_of_results,
        candidates,
        flagged,
        index_levels,
        sector_moves,
        top_sectors,
    )
    from shared.agents.scan.inputs import (
        MAX_TICKERS,
        DeepDiveInputs,
        ScannerInputs,
        ScanReports,
        SynthesisInputs,
        scanner_prefetch,
    )
    from shared.agents.scan.prompts import (
        prefetched_turns,
        render_summary,
    )
    from shared.agents.scan.roles import (
        AGENTS,
        INDUSTRY_DEEP_DIVE,
        MACRO_SYNTHESIS,
        SCANNER_SPECS,
        ScannerKind,
    )
    from shared.agents.scan.schemas import ScannerReport, ScanSummary
    from shared.agents.spec import AgentSpec
    from shared.data.contracts import SECTOR_ETFS, Sector, SectorPerformance
    from shared.llm.contracts import (
        ChatResponse,
        LlmChoice,
        ToolCall,
        ToolResult,
        UsageReport,
    )
    from shared.llm.structured import repair_messages
    from shared.queues import TOOLS_QUEUE
    from workflows.activity_calls import run_activity
    from workflows.concurrency import gather_all
    from workflows.inputs import RunInput, scheduled_time
    from workflows.llm_calls import (
        ToolLoopResult,
        ToolUse,
        agent_request,
        answer_tool_calls,
        call_agent_tools,
        call_agent_tools_or_missing,
        chat,
    )
    from workflows.progress import RunProgress, StepState, mark_missing
    from workflows.provider_check import check_provider
    from workflows.retries import durable
    from workflows.run_keys import run_key_prefix, run_report
    from workflows.tracked import TrackedRun
    from workflows.visibility import tag_run


SCAN_START_TO_CLOSE = timedelta(minutes=1)

CLOCK_SYMBOL = SECTOR_ETFS[Sector.INFORMATION_TECHNOLOGY]
"""Without ``as_of`` the scan runs as of this sector ETF's latest daily bar: the sector
scanner's data decide how recent a scan the data allow."""

RESOLVE_AS_OF = "resolve_as_of"
CHECK_SHORTLIST = "check_shortlist"
SHORTLIST_REPAIR = "shortlist_repair"
STORE_SUMMARY = "store_summary"
FLOW = "scan"


class ScanInput(RunInput):
    """What to scan. ``{}`` is enough: the latest data, ten stocks, offline."""

    as_of: AwareDatetime | None = Field(
        None, description="scan time (UTC offset required); default: the latest daily bar"
    )
    not_after: AwareDatetime | None = Field(
        None, description="without as_of: the latest data at or before this (a schedule's time)"
    )
    max_tickers: int = Field(10, ge=1, le=MAX_TICKERS, description="most stocks to shortlist")
    llm: LlmChoice = Field(
        default_factory=LlmChoice,
        description="model: the scanners' (quick); deep_model: the deep dive's and synthesis'",
    )


class ScanProgress(RunProgress):
    """The answer of the ``progress`` query: the common progress of every workflow."""


class ScanResult(BaseModel):
    """The validated summary, where everything was stored, and what it cost per agent."""

    workflow_id: str
    as_of: datetime
    max_tickers: int
    deep_dive_sectors: list[Sector] = Field(description="chosen by absolute 21-day move")
    summary: ScanSummary
    reports: dict[str, StoredReport] = Field(description="agent -> its stored Markdown report")
    missing: list[MissingStep] = Field(
        default_factory=list, description="agents whose report the scan went on without, and why"
    )
    summary_json: StoredReport
    summary_markdown: StoredReport
    repaired: bool = Field(description="whether the shortlist needed the repair turn")
    corrections: list[str] = Field(
        default_factory=list,
        description="what the data corrected in a shortlist still wrong after the repair",
    )
    usage: UsageReport


@dataclass(frozen=True)
class AgentRun:
    """One agent's outcome: its tool loop, every tool result (prefetched ones first), or,
    for a step the scan can do without, why its reply was unusable."""

    loop: ToolLoopResult | None
    results: list[ToolResult]
    missing: MissingStep | None = None


@dataclass(frozen=True)
class Scanned:
    """A scanner's (or the deep dive's) report, the tool answers behind it, where it is stored;
    or, with no report, why it is missing (the answers the workflow read for it still count)."""

    agent: str
    report: ScannerReport | None
    answers: list[tuple[str, Any]]
    stored: StoredReport | None = None
    missing: MissingStep | None = None

    def missing_list(self) -> list[MissingStep]:
        """``[missing]`` if the report is missing, else ``[]``: what a reader is told."""
        return [self.missing] if self.missing else []


def _invalid_reply(agent: str, problem: str) -> ApplicationError:
    return ApplicationError(f"{agent} {problem}", type="InvalidReply", non_retryable=True)


def _stored(*scanned: Scanned) -> dict[str, StoredReport]:
    """Each stored report by its agent."""
    return {s.agent: s.stored for s in scanned if s.stored is not None}


@workflow.defn(name="Scan")
class ScanWorkflow(TrackedRun):
    """Three scanners ∥ (smart money after sector) → deep dive once → synthesis → checked list."""

    def __init__(self) -> None:
        super().__init__()
        self.corrections: list[str] = []

    @workflow.query(name="progress")
    def progress(self) -> ScanProgress:
        """The phase, each step's state and the tokens spent so far."""
        return self.progress_as(ScanProgress)

    @workflow.run
    async def run(self, args: ScanInput) -> ScanResult:
        """Scan in two phases, dig in once, synthesise, check, store."""
        self.open_gate()
        check_provider(args.llm)
        self.steps = {
            name: StepState.PENDING
            for name in [RESOLVE_AS_OF, *AGENTS, CHECK_SHORTLIST, SHORTLIST_REPAIR, STORE_SUMMARY]
        }
        self.phase = RESOLVE_AS_OF
        resolved: ResolvedAsOf = await self._step(
            RESOLVE_AS_OF,
            run_activity(
                ResearchActivities.resolve_as_of,
                ResolveAsOfRequest(
                    symbol=CLOCK_SYMBOL,
                    as_of=args.as_of,
                    not_after=args.not_after or scheduled_time(),
                ),
                **durable(SCAN_START_TO_CLOSE),
                summary=RESOLVE_AS_OF,
            ),
        )
        as_of = resolved.as_of
        tag_run("Scan", as_of=as_of)
        self.phase = "scanners"
        opening = ScannerInputs(as_of=as_of)
        geopolitical, movers, (sector, smart_money) = await gather_all(
            self._scanner(args, ScannerKind.GEOPOLITICAL, opening),
            self._scanner(args, ScannerKind.MARKET_MOVERS, opening),
            self._sector_then_smart_money(args, opening),
        )
        self.phase = INDUSTRY_DEEP_DIVE
        moves = sector_moves(sector.answers)
        chosen = top_sectors(moves)
        deep = await self._deep_dive(args, as_of, chosen, smart_money)
        self.phase = MACRO_SYNTHESIS
        pool = candidates([*movers.answers, *smart_money.answers, *deep.answers])
        scanned = (geopolitical, movers, sector, smart_money, deep)
        missing = [step for s in scanned for step in s.missing_list()]
        inputs = SynthesisInputs(
            as_of=as_of,
            max_tickers=args.max_tickers,
            reports=ScanReports(
                geopolitical=geopolitical.report,
                market_movers=movers.report,
                sector=sector.report,
                smart_money=smart_money.report,
                industry_deep_dive=deep.report,
                missing=missing,
            ),
            sectors=moves,
            deep_dive_sectors=[move.sector for move in chosen],
            indices=index_levels(movers.answers),
            candidates=pool,
        )
        summary, repaired = await self._synthesis(args, inputs, flagged(pool))
        self.phase = STORE_SUMMARY
        summary_json, summary_markdown = await self._step(
            STORE_SUMMARY, self._store_summary(summary, as_of, missing, self.corrections)
        )
        self.phase = "done"
        return ScanResult(
            workflow_id=workflow.info().workflow_id,
            as_of=as_of,
            max_tickers=args.max_tickers,
            deep_dive_sectors=inputs.deep_dive_sectors,
            summary=summary,
            reports=_stored(*scanned),
            missing=missing,
            summary_json=summary_json,
            summary_markdown=summary_markdown,
            repaired=repaired,
            corrections=self.corrections,
            usage=self.usage,
        )

    async def _run_agent(
        self,
        args: ScanInput,
        spec: AgentSpec[Any, Any],
        inputs: ScannerInputs | DeepDiveInputs | SynthesisInputs,
        prefetch: Sequence[ToolCall] = (),
        *,
        optional: bool = False,
    ) -> AgentRun:
        """The workflow's own calls first (if any), then the agent's tool loop, as one step.

        The tool context fixes the scan time, so no tool reads past it whatever the
        model asks for; the request carries the agent's typed inputs. An ``optional``
        agent whose reply stays invalid comes back with the reason and its step shows
        as missing.
        """
        agent = spec.name
        prefix = run_key_prefix(FLOW)
        context = {"as_of": inputs.as_of.isoformat(), "result_key_prefix": f"{prefix}/{agent}"}

        async def work() -> AgentRun:
            fetched = await answer_tool_calls(
                list(prefetch), context, queue=TOOLS_QUEUE, agent=agent
            )
            turns = prefetched_turns(prefetch, fetched) if prefetch else []
            call = call_agent_tools_or_missing if optional else call_agent_tools
            ran = await call(
                spec,
                inputs,
                llm=args.llm,
                raw_key=f"{prefix}/{agent}.raw.txt",
                usage=self.usage,
                tools=ToolUse(queue=TOOLS_QUEUE, context=context, prefetched=turns),
            )
            if isinstance(ran, MissingStep):
                return AgentRun(None, fetched, ran)
            return AgentRun(ran.loop, [*fetched, *ran.loop.tool_results])

        run: AgentRun = await self._step(agent, work())
        if run.missing is not None:
            mark_missing(self.steps, run.missing)
        return run

    async def _reported(self, agent: str, run: AgentRun) -> Scanned:
        """The agent's validated report, stored under the run's keys; or why it is missing."""
        answers = answers_of_results(run.results)
        if run.loop is None:
            return Scanned(agent, None, answers, missing=run.missing)
        try:
            report = ScannerReport.model_validate(run.loop.response.structured)
        except ValidationError:
            missing = MissingStep(
                step=agent, reason="it ended its tool loop without a valid ScannerReport"
            )
            mark_missing(self.steps, missing)
            return Scanned(agent, None, answers, missing=missing)
        stored = await run_activity(
            ResearchActivities.store_report,
            StoreReportRequest(
                markdown=report.report_markdown,
                target=run_report(FLOW, f"reports/{agent}.md"),
            ),
            **durable(SCAN_START_TO_CLOSE),
            summary="store_report",
        )
        return Scanned(agent, report, answers, stored)

    async def _scanner(self, args: ScanInput, kind: ScannerKind, inputs: ScannerInputs) -> Scanned:
        """One scanner's tool loop and its stored report."""
        spec = SCANNER_SPECS[kind]
        run = await self._run_agent(args, spec, inputs, scanner_prefetch(kind), optional=True)
        return await self._reported(spec.name, run)

    async def _sector_then_smart_money(
        self, args: ScanInput, opening: ScannerInputs
    ) -> tuple[Scanned, Scanned]:
        """The sector scanner, then the smart-money scanner with its report and numbers."""
        sector = await self._scanner(args, ScannerKind.SECTOR, opening)
        inputs = opening.model_copy(
            update={
                "sector_report": sector.report,
                "sectors": sector_moves(sector.answers),
                "missing": sector.missing_list(),
            }
        )
        return sector, await self._scanner(args, ScannerKind.SMART_MONEY, inputs)

    async def _deep_dive(
        self,
        args: ScanInput,
        as_of: datetime,
        chosen: list[SectorPerformance],
        smart_money: Scanned,
    ) -> Scanned:
        """The deep dive, once, on the sectors that moved most (chosen in code, not by a model)."""
        if not chosen:
            raise ApplicationError(
                f"the sector scanner read no 21-day sector returns as of {as_of.isoformat()}, so "
                "the deep dive has no sectors: check the sector data for that date",
                type="NoData",
                non_retryable=True,
            )
        pool: list[Candidate] = candidates(smart_money.answers)
        inputs = DeepDiveInputs(
            as_of=as_of,
            sectors=chosen,
            smart_money_report=smart_money.report,
            smart_money=[c for c in pool if c.smart_money],
            missing=smart_money.missing_list(),
        )
        run = await self._run_agent(
            args, industry_deep_dive.SPEC, inputs, inputs.prefetch(), optional=True
        )
        return await self._reported(INDUSTRY_DEEP_DIVE, run)

    def _summary(self, response: ChatResponse) -> ScanSummary:
        try:
            return ScanSummary.model_validate(response.structured)
        except ValidationError:
            raise _invalid_reply(MACRO_SYNTHESIS, "ended without a valid ScanSummary") from None

    async def _check(
        self, inputs: SynthesisInputs, summary: ScanSummary, smart: list[str]
    ) -> ShortlistVerdict:
        verdict: ShortlistVerdict = await self._step(
            CHECK_SHORTLIST,
            run_activity(
                check_shortlist,
                ShortlistCheck(
                    as_of=inputs.as_of,
                    summary=summary,
                    max_tickers=inputs.max_tickers,
                    flagged=smart,
                ),
                **durable(SCAN_START_TO_CLOSE),
                summary=CHECK_SHORTLIST,
            ),
        )
        return verdict

    async def _synthesis(
        self, args: ScanInput, inputs: SynthesisInputs, smart: list[str]
    ) -> tuple[ScanSummary, bool]:
        """The summary, its shortlist checked; one repair turn quoting the problems, then the
        shortlist corrected by the data, each correction recorded (never a failed scan)."""
        run = await self._run_agent(args, macro_synthesis.SPEC, inputs, inputs.prefetch())
        assert run.loop is not None  # not optional: a bad reply parked instead
        summary = self._summary(run.loop.response)
        self.phase = CHECK_SHORTLIST
        problems = (await self._check(inputs, summary, smart)).problems
        if not problems:
            self.steps[SHORTLIST_REPAIR] = StepState.SKIPPED
            return summary, False
        self.phase = SHORTLIST_REPAIR
        workflow.logger.warning("shortlist needs a repair: %s", "; ".join(problems))
        raw_key = f"{run_key_prefix(FLOW)}/{SHORTLIST_REPAIR}.raw.txt"
        repair = [*run.loop.messages, *repair_messages(run.loop.response.text, "; ".join(problems))]
        request = agent_request(macro_synthesis.SPEC, inputs, args.llm, raw_key).model_copy(
            update={"messages": repair}
        )
        response = await self._step(SHORTLIST_REPAIR, chat(request, summary=SHORTLIST_REPAIR))
        self.usage.add(MACRO_SYNTHESIS, response.usage)
        summary = self._summary(response)
        verdict = await self._check(inputs, summary, smart)
        if verdict.corrected is not None:
            workflow.logger.warning(
                "shortlist still invalid after the repair, corrected by the data: %s",
                "; ".join(verdict.corrections),
            )
            self.corrections = verdict.corrections
            summary = verdict.corrected
        return summary, True

    async def _store_summary(
        self,
        summary: ScanSummary,
        as_of: datetime,
        missing: list[MissingStep],
        corrections: list[str],
    ) -> tuple[StoredReport, StoredReport]:
        """The summary as JSON (what other flows read back) and as Markdown (for people, and
        the Pipelines' macro context), which names the reports the synthesis went without and
        what the data corrected in the shortlist."""
        markdown = render_summary(summary, as_of, workflow.info().workflow_id, missing, corrections)
        stored = await gather_all(
            run_activity(
                store_json,
                StoreJsonRequest(
                    value=summary.model_dump(mode="json"),
                    target=run_report(FLOW, "summary.json"),
                ),
                **durable(SCAN_START_TO_CLOSE),
                summary="store_json",
            ),
            run_activity(
                ResearchActivities.store_report,
                StoreReportRequest(
                    markdown=markdown,
                    target=run_report(FLOW, "summary.md"),
                ),
                **durable(SCAN_START_TO_CLOSE),
                summary="store_report",
            ),
        )
        return stored[0], stored[1]
