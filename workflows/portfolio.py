"""The ``Portfolio`` workflow: one decision for a whole paper book, as of one date.

(the Pipelines' decisions, when given by key) → load the book → risk → review holdings →
prioritize the candidates (the Scan's shortlist and every other decided name not held) →
macro ∥ micro summaries over a bounded view of them (the top-K in full, the next in one
line each: ``view``) → the book manager's decision → size to the limits →
cash sweep → (approval) → record the decision → execute on the paper broker →
snapshot → Markdown report in S3, with every candidate's fate (planned, or left
out and why).

Everything the PM reads is priced as of the date; sizing and sweep run as
activities so the plan an approver saw is, from the history, the plan that
executes. With ``approval: required`` the run waits for the ``approve`` or
``reject`` update (``quantdesk approve ID``; signals of the same names work
too, e.g. from the Web UI) until the timeout, after which nothing is traded.
Trades are keyed by the workflow id and the order's index: retrying the
execution, or running the same workflow id again, books nothing twice.
"""

from __future__ import annotations

import json
from collections.abc import Awaitable
from datetime import timedelta

from temporalio import workflow
from temporalio.exceptions import ApplicationError

with workflow.unsafe.imports_passed_through():
    from activities.group import declared
    from activities.notify import NotifyActivities
    from activities.portfolio import (
        DecisionRequest,
        ExecuteRequest,
        LoadedBook,
        LoadRequest,
        PortfolioActivities,
        PrioritizeRequest,
        RiskRequest,
        SizeRequest,
        SnapshotRequest,
        SweepRequest,
    )
    from activities.research import LoadTextRequest, ResearchActivities, StoreReportRequest
    from activities.services import StoredReport
    from shared.agents.portfolio import (
        book_manager,
        holdings_reviewer,
        macro_summarizer,
        micro_summarizer,
    )
    from shared.agents.portfolio.fates import candidate_fates
    from shared.agents.portfolio.inputs import (
        BookBrief,
        CandidateSlate,
        candidate_ideas,
    )
    from shared.agents.portfolio.report import PortfolioOutcome, render_portfolio_report
    from shared.agents.portfolio.roles import (
        BOOK_MANAGER,
        HOLDINGS_REVIEWER,
        MACRO_SUMMARIZER,
        MICRO_SUMMARIZER,
    )
    from shared.agents.portfolio.schemas import AllocationDecision, HoldingsReview
    from shared.agents.portfolio.view import ViewSize
    from shared.agents.spec import AgentSpec, InputsT, OutputT
    from shared.broker.models import IntentStatus
    from shared.notify.approval import Mark, outcome_notice, waiting_notice
    from shared.notify.notices import NoticeKind
    from shared.observability.metrics import (
        orders_ended,
        person_still_missing,
        person_waited,
        person_waits,
    )
    from shared.portfolio.models import (
        BrokerKind,
        DecisionRecord,
        DecisionStatus,
        Snapshot,
    )
    from shared.portfolio.orders import ExecutedOrder, Execution, OrderPlan, RejectedOrder
    from shared.portfolio.prioritize import Prioritized
    from shared.portfolio.risk import RiskReport
    from shared.storage.objects import ObjectRef
    from workflows.activity_calls import (
        GroupActivity,
        Request,
        Result,
        run_activity,
    )
    from workflows.broker_orders import (
        BrokerOrdersInput,
        BrokerOrdersResult,
        BrokerOrdersWorkflow,
    )
    from workflows.concurrency import gather_all
    from workflows.llm_calls import call_agent
    from workflows.notify import tell
    from workflows.portfolio_contracts import (
        MAX_DECISIONS,
        Approval,
        ApprovalAnswer,
        ApprovalRequest,
        PendingPlan,
        PortfolioInput,
        PortfolioProgress,
        PortfolioResult,
    )
    from workflows.progress import StepState
    from workflows.provider_check import check_provider
    from workflows.reconcile import ReconcileInput, ReconcileWorkflow
    from workflows.retries import durable
    from workflows.run_keys import run_key_prefix, run_report
    from workflows.tracked import TrackedRun
    from workflows.visibility import tag_run

BOOK_START_TO_CLOSE = timedelta(minutes=2)
"""A data read may build the simulated market first (seconds); SQL and S3 are quick."""
EXECUTE_START_TO_CLOSE = timedelta(minutes=5)
EXECUTE_HEARTBEAT = timedelta(seconds=5)
"""Each fill heartbeats; a worker silent this long is taken for dead and the fills retried."""
APPROVAL_NOTICES_PATCH = "approval-notices"
"""Gates telling people of a waiting plan: older runs waited without a word."""
TIMEOUT = "approval timeout"
WATCHED_NAMES_PATCH = "watched-names-ranked"
"""Gates ranking decided names without a Scan: older histories skipped that step."""
DECISION_CHARS = 6_000
"""Characters of one stored TickerDecision at most: its clipped summary and thesis, and more."""
LOAD_DECISIONS = "load_decisions"

LOAD, RISK, PRIORITIZE = "load_portfolio", "compute_risk", "prioritize_candidates"
SIZE, SWEEP, APPROVAL = "size_orders", "sweep_cash", "approval"
RECORD, EXECUTE, SNAPSHOT, REPORT = "record_decision", "execute_orders", "record_snapshot", "report"
STEPS = (
    LOAD,
    RISK,
    HOLDINGS_REVIEWER,
    PRIORITIZE,
    MACRO_SUMMARIZER,
    MICRO_SUMMARIZER,
    BOOK_MANAGER,
    SIZE,
    SWEEP,
    APPROVAL,
    RECORD,
    EXECUTE,
    SNAPSHOT,
    REPORT,
)


NOT_FILLED = {
    IntentStatus.CANCELED,
    IntentStatus.EXPIRED,
    IntentStatus.REJECTED,
    IntentStatus.REFUSED,
}
"""How an order at a broker ends with shares left unfilled (a partial fill's rest too)."""


def _settled(status: DecisionStatus) -> bool:
    return status in (DecisionStatus.APPROVED, DecisionStatus.APPROVED_AUTO)


@workflow.defn(name="Portfolio")
class PortfolioWorkflow(TrackedRun):
    """Review, decide, size, sweep, approve and trade one paper book."""

    def __init__(self) -> None:
        super().__init__(*STEPS)
        self.pending: PendingPlan | None = None
        self.awaiting = False
        self.verdict: tuple[DecisionStatus, str] | None = None

    @workflow.query(name="progress")
    def progress(self) -> PortfolioProgress:
        """The phase, each step, usage, and whether an approval is awaited."""
        return self.progress_as(
            PortfolioProgress,
            awaiting_approval=self.awaiting,
            status=self.verdict[0] if self.verdict else None,
        )

    @workflow.query(name="plan")
    def plan(self) -> PendingPlan | None:
        """The decision and plan once sized; None before."""
        return self.pending

    def _answer(self, status: DecisionStatus, request: ApprovalRequest) -> ApprovalAnswer:
        who = f" by {request.by}" if request.by else ""
        why = f": {request.note}" if request.note else ""
        self.verdict = (status, f"{status.value}{who}{why}")
        return ApprovalAnswer(status=status, message=self.verdict[1])

    def _check_awaiting(self, request: ApprovalRequest) -> None:
        """Refuse an answer when no plan waits for one (too early, or already answered), or
        when it names another plan than the one waiting."""
        if not self.awaiting or self.verdict is not None:
            state = self.verdict[1] if self.verdict else f"the run is at {self.phase}"
            raise ValueError(f"this run is not waiting for an approval ({state})")
        assert self.pending is not None
        if request.plan_hash is not None and request.plan_hash != self.pending.digest():
            raise ValueError(
                f"plan hash {request.plan_hash} does not match the plan waiting "
                f"({self.pending.digest()}): read the plan again before answering"
            )

    @workflow.update(name="approve")
    def approve(self, request: ApprovalRequest) -> ApprovalAnswer:
        """Trade the plan."""
        return self._answer(DecisionStatus.APPROVED, request)

    @approve.validator
    def _approve_validator(self, request: ApprovalRequest) -> None:
        self._check_awaiting(request)

    @workflow.update(name="reject")
    def reject(self, request: ApprovalRequest) -> ApprovalAnswer:
        """Trade nothing."""
        return self._answer(DecisionStatus.REJECTED, request)

    @reject.validator
    def _reject_validator(self, request: ApprovalRequest) -> None:
        self._check_awaiting(request)

    @workflow.signal(name="approve")
    def approve_signal(self, request: ApprovalRequest | None = None) -> None:
        """The ``approve`` update as a signal (the Web UI sends signals); ignored unless waiting."""
        self._signalled(DecisionStatus.APPROVED, request)

    @workflow.signal(name="reject")
    def reject_signal(self, request: ApprovalRequest | None = None) -> None:
        """The ``reject`` update as a signal; ignored unless waiting."""
        self._signalled(DecisionStatus.REJECTED, request)

    def _signalled(self, status: DecisionStatus, request: ApprovalRequest | None) -> None:
        if self.awaiting and self.verdict is None:
            self._answer(status, request or ApprovalRequest())
        else:
            workflow.logger.warning("%s signal ignored: not waiting for an approval", status)

    def _book(
        self, activity: GroupActivity[Request, Result], request: Request, step: str | None = None
    ) -> Awaitable[Result]:
        """One of the book's activities, shown as ``step`` (default: its name) and as the phase."""
        self.phase = step or declared(activity).name
        return self._activity_step(activity, request, BOOK_START_TO_CLOSE, self.phase)

    async def _load_decisions(self, args: PortfolioInput, key: ObjectRef) -> PortfolioInput:
        """``args`` with the decisions stored at ``key``, checked as if they had been given
        inline; a list that fails the checks fails the run for good (another read would
        read the same list)."""
        self.steps = {LOAD_DECISIONS: StepState.PENDING, **self.steps}
        stored = await self._book(
            ResearchActivities.load_text,
            LoadTextRequest(
                source=key, field="decisions_key", max_chars=MAX_DECISIONS * DECISION_CHARS
            ),
            LOAD_DECISIONS,
        )
        try:
            return PortfolioInput.model_validate(
                {**args.model_dump(exclude={"decisions_key"}), "decisions": json.loads(stored.text)}
            )
        except ValueError as error:
            raise ApplicationError(
                f"decisions_key: {error}", type="InvalidInput", non_retryable=True
            ) from None

    async def _ask(
        self, args: PortfolioInput, spec: AgentSpec[InputsT, OutputT], inputs: InputsT
    ) -> OutputT:
        """One agent's call, from its spec and typed inputs, shown as its own step."""
        raw_key = f"{run_key_prefix('portfolio')}/{spec.name}.raw.txt"
        answer = call_agent(spec, inputs, llm=args.llm, raw_key=raw_key, usage=self.usage)
        output: OutputT = await self._step(spec.name, answer)
        return output

    @workflow.run
    async def run(self, args: PortfolioInput) -> PortfolioResult:
        """Walk the graph; without approval nothing is traded."""
        self.open_gate()
        check_provider(args.llm)
        tag_run("Portfolio", portfolio=args.portfolio, as_of=args.as_of)
        wf_id = workflow.info().workflow_id
        if args.decisions_key is not None:
            args = await self._load_decisions(args, args.decisions_key)
        loaded: LoadedBook = await self._book(
            PortfolioActivities.load_portfolio,
            LoadRequest(
                portfolio=args.portfolio,
                as_of=args.as_of,
                scan_summary=args.scan_summary,
                symbols=[d.symbol for d in args.decisions],
                broker=args.broker,
            ),
        )
        valuation = loaded.valuation
        risk: RiskReport = await self._book(
            PortfolioActivities.compute_risk, RiskRequest(valuation=valuation)
        )
        decisions = {d.symbol: d for d in args.decisions}
        brief = BookBrief.of(args.portfolio, args.as_of, valuation, args.limits, decisions)
        review = await self._review(args, brief)
        candidates = await self._candidates(args, loaded)
        size = ViewSize.for_provider(args.llm.provider)
        slate = CandidateSlate.of(candidates.ranked, loaded.quotes, decisions, size)
        self.phase = "summaries"
        macro, micro = await gather_all(
            self._ask(args, macro_summarizer.SPEC, brief.macro(loaded.scan)),
            self._ask(args, micro_summarizer.SPEC, brief.micro(slate)),
        )
        self.phase = BOOK_MANAGER
        pm = brief.pm(slate, risk, review, macro, micro)
        decision = await self._ask(args, book_manager.SPEC, pm)
        plan = await self._plan(args, loaded, decision)
        status, note = await self._approval(args, plan)
        record = DecisionRecord(
            key=wf_id,
            as_of=args.as_of,
            status=status,
            decision={
                "decision": decision.model_dump(mode="json"),
                "plan": plan.model_dump(mode="json"),
                "approval": note,
            },
            created_at=workflow.now(),
        )
        recorded: DecisionRecord = await self._book(
            PortfolioActivities.record_decision,
            DecisionRequest(portfolio=args.portfolio, record=record),
        )
        if recorded.created_at != record.created_at:
            # An earlier run of this workflow id decided first; its orders own the trade keys.
            decision = AllocationDecision.model_validate(recorded.decision["decision"])
            plan = OrderPlan.model_validate(recorded.decision["plan"])
            status = recorded.status
            note = (
                f"an earlier run of {wf_id} decided first, at "
                f"{recorded.created_at.isoformat(timespec='seconds')}: its plan stands"
            )
        executed, refused = [], list(plan.rejected)
        if _settled(status) and plan.orders:
            if loaded.broker is BrokerKind.PAPER:
                done: Execution = await self._execute(args, plan, wf_id)
            else:
                done = await self._execute_at_broker(args, plan, wf_id)
            executed, refused = done.executed, refused + done.rejected
        else:
            self.steps[EXECUTE] = StepState.SKIPPED
        snapshot: Snapshot = await self._book(
            PortfolioActivities.record_snapshot,
            SnapshotRequest(portfolio=args.portfolio, as_of=args.as_of, key=wf_id),
        )
        outcome = PortfolioOutcome(
            workflow_id=wf_id,
            portfolio=args.portfolio,
            as_of=args.as_of,
            status=status,
            approval_note=note,
            book=valuation,
            risk=risk,
            candidates=candidates,
            fates=candidate_fates(candidates, decisions, loaded.quotes, size, decision, plan),
            review=review,
            macro=macro,
            micro=micro,
            decision=decision,
            plan=plan,
            executed=executed,
            rejected=refused,
            snapshot=snapshot,
            usage=self.usage,
        )
        self.phase = REPORT
        stored: StoredReport = await self._book(
            ResearchActivities.store_report,
            StoreReportRequest(
                markdown=render_portfolio_report(outcome),
                target=run_report("portfolio", "report.md"),
            ),
            REPORT,
        )
        self.phase = "done"
        return PortfolioResult(**dict(outcome), report=stored)

    async def _review(self, args: PortfolioInput, brief: BookBrief) -> HoldingsReview:
        """The reviewer's verdicts; an empty book has nothing to review (no call)."""
        if not brief.holdings:
            self.steps[HOLDINGS_REVIEWER] = StepState.SKIPPED
            return HoldingsReview(verdicts=[], summary="The book holds no positions.")
        self.phase = HOLDINGS_REVIEWER
        return await self._ask(args, holdings_reviewer.SPEC, brief.review())

    async def _candidates(self, args: PortfolioInput, loaded: LoadedBook) -> Prioritized:
        """The Scan's stocks and the other decided names ranked; without either, none."""
        held = [p.symbol for p in loaded.valuation.positions]
        ideas = candidate_ideas(loaded.scan, args.decisions, held)
        # Runs started before watched names were ranked skipped this step without a Scan.
        if loaded.scan is None and not (ideas and workflow.patched(WATCHED_NAMES_PATCH)):
            self.steps[PRIORITIZE] = StepState.SKIPPED
            return Prioritized(ranked=[], dropped=[])
        request = PrioritizeRequest(
            valuation=loaded.valuation,
            stocks=ideas,
            sectors=loaded.sectors,
            limits=args.limits,
        )
        ranked: Prioritized = await self._book(PortfolioActivities.prioritize_candidates, request)
        return ranked

    async def _plan(
        self, args: PortfolioInput, loaded: LoadedBook, decision: AllocationDecision
    ) -> OrderPlan:
        """The decision sized to the limits, then settled with the T-bill ETF."""
        sized: OrderPlan = await self._book(
            PortfolioActivities.size_orders,
            SizeRequest(
                valuation=loaded.valuation,
                decision=decision,
                quotes=loaded.quotes,
                sectors=loaded.sectors,
                limits=args.limits,
                costs=args.costs or loaded.costs,
            ),
        )
        plan: OrderPlan = await self._book(
            PortfolioActivities.sweep_cash,
            SweepRequest(
                plan=sized, valuation=loaded.valuation, quotes=loaded.quotes, sectors=loaded.sectors
            ),
        )
        self.pending = PendingPlan(
            portfolio=args.portfolio, decision=decision, plan=plan, awaiting_approval=False
        )
        return plan

    async def _approval(
        self, args: PortfolioInput, plan: OrderPlan
    ) -> tuple[DecisionStatus, str | None]:
        """Auto, or wait for a person until the timeout (then nothing is traded)."""
        if args.approval is Approval.AUTO or not plan.orders:
            self.steps[APPROVAL] = StepState.SKIPPED
            self.verdict = (DecisionStatus.APPROVED_AUTO, "" if plan.orders else "no orders")
            return DecisionStatus.APPROVED_AUTO, self.verdict[1] or None
        self.phase = APPROVAL
        self.steps[APPROVAL] = StepState.WAITING
        self.awaiting = True
        assert self.pending is not None
        self.pending.awaiting_approval = True
        wf_id = workflow.info().workflow_id
        workflow.set_current_details(
            f"**Waiting for approval** of {len(plan.orders)} orders. "
            f"`quantdesk approve {wf_id}` or `quantdesk reject {wf_id}`."
        )
        minutes = args.approval_timeout_minutes
        told = workflow.patched(APPROVAL_NOTICES_PATCH)
        try:
            if told:
                await self._wait_telling(args.portfolio, plan, timedelta(minutes=minutes))
            else:
                await workflow.wait_condition(
                    self._answered, timeout=timedelta(minutes=minutes), timeout_summary=TIMEOUT
                )
        except TimeoutError:
            self.verdict = (DecisionStatus.EXPIRED, f"no answer within {minutes} minutes")
        self.awaiting = False
        self.pending.awaiting_approval = False
        workflow.set_current_details("")
        assert self.verdict is not None
        if told:
            await tell(
                outcome_notice(wf_id, args.portfolio, self.verdict[0].value, self.verdict[1])
            )
        self.steps[APPROVAL] = StepState.DONE
        return self.verdict[0], self.verdict[1]

    def _answered(self) -> bool:
        return self.verdict is not None

    async def _wait_telling(self, portfolio: str, plan: OrderPlan, timeout: timedelta) -> None:
        """``_wait_marks``, measured: the wait, each mark it passes, and how long it lasted
        (the workflow's meter: a replay counts nothing)."""
        meter = workflow.metric_meter()
        person_waits(meter, APPROVAL)
        began = workflow.now()
        try:
            await self._wait_marks(portfolio, plan, timeout)
        except TimeoutError:
            person_waited(meter, APPROVAL, "timed_out", (workflow.now() - began).total_seconds())
            raise
        person_waited(meter, APPROVAL, "answered", (workflow.now() - began).total_seconds())

    async def _wait_marks(self, portfolio: str, plan: OrderPlan, timeout: timedelta) -> None:
        """Wait for the answer up to ``timeout``, telling people the plan waits, then at
        each of the desk's marks (reminder, escalation) that comes before the answer; a
        ``TimeoutError`` when none comes. Each notice is its own run beside this one
        (``tell``): a notifier that is down never delays the wait."""
        wf_id = workflow.info().workflow_id
        marks: list[Mark] = await run_activity(
            NotifyActivities.approval_marks,
            timeout,
            **durable(BOOK_START_TO_CLOSE),
            summary="when to remind and escalate",
        )
        await tell(waiting_notice(wf_id, portfolio, plan, timeout, NoticeKind.APPROVAL_WAITING))
        waited = timedelta()
        for mark in marks:
            try:
                await workflow.wait_condition(
                    self._answered, timeout=mark.after - waited, timeout_summary=mark.kind.value
                )
                return
            except TimeoutError:
                waited = mark.after
            person_still_missing(workflow.metric_meter(), APPROVAL, mark.kind.value)
            await tell(waiting_notice(wf_id, portfolio, plan, timeout, mark.kind))
        await workflow.wait_condition(
            self._answered, timeout=timeout - waited, timeout_summary=TIMEOUT
        )

    async def _execute_at_broker(
        self, args: PortfolioInput, plan: OrderPlan, wf_id: str
    ) -> Execution:
        """Send the plan to the book's broker (``BrokerOrders``, a child that follows the
        orders to their end), then reconcile the book with the broker."""
        self.phase = EXECUTE
        sent: BrokerOrdersResult = await self._step(
            EXECUTE,
            workflow.execute_child_workflow(
                BrokerOrdersWorkflow.run,
                BrokerOrdersInput(
                    portfolio=args.portfolio,
                    decided_by=wf_id,
                    orders=plan.orders,
                    policy=args.execution,
                ),
                id=f"{wf_id}-broker",
                static_summary=f"{len(plan.orders)} orders of {wf_id} at the broker",
            ),
        )
        await workflow.execute_child_workflow(
            ReconcileWorkflow.run,
            ReconcileInput(portfolio=args.portfolio),
            id=f"{wf_id}-reconcile",
            static_summary=f"{args.portfolio} against its broker after {wf_id}",
        )
        by_index = {order.index: order for order in plan.orders}
        planned = {i.client_order_id: by_index[i.order_index] for i in sent.intents}
        said = {refused.index for refused in sent.refused}
        ended = [
            RejectedOrder(
                symbol=i.symbol,
                side=i.side,
                shares=i.qty - i.filled_qty,
                reason=i.reason or i.status.value,
                index=i.order_index,
            )
            for i in sent.intents
            if i.status in NOT_FILLED and i.order_index not in said
        ]
        return Execution(
            executed=[
                ExecutedOrder(order=planned[b.client_order_id], trade=b.trade, new=True)
                for b in sent.booked
            ],
            rejected=[*sent.refused, *ended],
            as_of=args.as_of,
        )

    async def _execute(self, args: PortfolioInput, plan: OrderPlan, wf_id: str) -> Execution:
        """Fill the plan on the paper broker, sells first, each order under its own key."""
        self.phase = EXECUTE
        request = ExecuteRequest(
            portfolio=args.portfolio,
            orders=plan.orders,
            costs=plan.costs,
            run_key=wf_id,
            as_of=args.as_of,
        )
        done: Execution = await self._step(
            EXECUTE,
            run_activity(
                PortfolioActivities.execute_orders,
                request,
                **durable(EXECUTE_START_TO_CLOSE, heartbeat=EXECUTE_HEARTBEAT),
                summary=f"{EXECUTE}: {len(plan.orders)} orders",
            ),
        )
        outcomes = ["filled"] * len(done.executed) + ["refused"] * len(done.rejected)
        orders_ended(workflow.metric_meter(), BrokerKind.PAPER.value, outcomes, len(done.executed))
        return done
