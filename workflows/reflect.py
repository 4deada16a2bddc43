"""The ``Reflect`` workflow: once a decision's horizon has passed, each role learns from it.

measure the outcome → (not ready: a durable timer until the horizon bar should
exist, then measure again, at most ``max_waits`` times) → one ``reflector``
call per role, all at once → record the lessons. A backtest's decision is
measured at once, since its horizon bars already exist; a live one sleeps for
days without holding a worker. Lessons are keyed by the *pipeline* run they
are about (``source``), so rerunning a reflection, or retrying its last step,
writes nothing twice.
"""

from __future__ import annotations

import asyncio
from datetime import timedelta
from typing import Any

from pydantic import AwareDatetime, BaseModel, Field, field_validator
from temporalio import workflow
from temporalio.exceptions import ApplicationError

with workflow.unsafe.imports_passed_through():
    from activities.failures import as_temporal_failures
    from activities.reflection import (
        DEFAULT_BENCHMARK,
        DEFAULT_HORIZON_BARS,
        MAX_HORIZON_BARS,
        MeasuredOutcome,
        OutcomeRequest,
        RecordedLessons,
        RecordLessonsRequest,
        ReflectionActivities,
    )
    from shared.agents import reflection as rf
    from shared.agents import reflector
    from shared.errors import InvalidInput
    from shared.llm.contracts import LlmChoice, UsageReport
    from shared.memory import Lesson, MemoryRole, Outcome, SourceRun
    from workflows.activity_calls import run_activity
    from workflows.inputs import RunInput
    from workflows.llm_calls import call_agent
    from workflows.progress import RunProgress, StepState
    from workflows.retries import durable
    from workflows.tracked import TrackedRun
    from workflows.visibility import tag_run


DATA_START_TO_CLOSE = timedelta(minutes=1)
# Memory writes are idempotent, so retrying through a database restart is safe.
MEMORY_START_TO_CLOSE = timedelta(minutes=1)
# Enough for a 5-day horizon over a long holiday with a late feed, without waiting forever
# on a symbol whose data stopped.
DEFAULT_MAX_WAITS = 10
MAX_WAITS = 100
# Never re-measure in a tight loop, whatever the estimate says.
MIN_WAIT = timedelta(minutes=1)
DECISION_MAX_CHARS = 4000


class RoleDecision(BaseModel):
    """What one role decided: its words, and optionally the direction in one word."""

    text: str = Field(min_length=1, max_length=DECISION_MAX_CHARS)
    direction: str | None = Field(
        None, description="e.g. Buy, Overweight, Hold, SHORT; default: read from the text"
    )


class ReflectInput(RunInput):
    """The decision to grade: which pipeline run made it, what each role decided."""

    source: SourceRun = Field(description="the pipeline run whose decision this is")
    symbol: str = Field(min_length=1, max_length=32)
    as_of: AwareDatetime = Field(description="when the decision was made")
    situation: str = Field(min_length=1, description="the market as the agents saw it")
    decisions: dict[MemoryRole, RoleDecision] = Field(min_length=1)
    horizon_bars: int = Field(DEFAULT_HORIZON_BARS, ge=1, le=MAX_HORIZON_BARS)
    benchmark: str = Field(DEFAULT_BENCHMARK, min_length=1, max_length=32)
    max_waits: int = Field(DEFAULT_MAX_WAITS, ge=0, le=MAX_WAITS)
    llm: LlmChoice = LlmChoice()

    @field_validator("decisions", mode="before")
    @classmethod
    def _plain_text(cls, value: Any) -> Any:
        """``{"trader": "Buy: ..."}`` is short for ``{"trader": {"text": "Buy: ..."}}``."""
        if isinstance(value, dict):
            return {k: {"text": v} if isinstance(v, str) else v for k, v in value.items()}
        return value


class ReflectProgress(RunProgress):
    """The answer of the ``progress`` query, with the waits for the horizon."""

    waits: int
    earliest_at: AwareDatetime | None = Field(None, description="while waiting: when it wakes")
    reason: str = Field("", description="while waiting: why the outcome is not ready")


class RoleReflection(BaseModel):
    """One role's reflection and the position outcome its lesson stores."""

    stance: rf.Stance
    outcome: Outcome
    reflection: rf.Reflection


class ReflectResult(BaseModel):
    """The outcome, each role's reflection, and how many lessons were new."""

    source: SourceRun
    symbol: str
    as_of: AwareDatetime
    market: rf.MarketOutcome
    learned_at: AwareDatetime
    reflections: dict[MemoryRole, RoleReflection]
    inserted: int
    already_known: int
    waits: int
    usage: UsageReport


@workflow.defn(name="Reflect")
class ReflectWorkflow(TrackedRun):
    """Grade a past decision and teach each role a lesson, as one durable run."""

    def __init__(self) -> None:
        super().__init__("measure_outcome", phase="")
        self.waits = 0
        self.earliest_at: Any = None
        self.reason = ""

    @workflow.query(name="progress")
    def progress(self) -> ReflectProgress:
        """Each step's state, the waits so far and the tokens spent."""
        return self.progress_as(
            ReflectProgress,
            waits=self.waits,
            earliest_at=self.earliest_at,
            reason=self.reason,
        )

    @workflow.run
    async def run(self, args: ReflectInput) -> ReflectResult:
        """Wait for the outcome, reflect per role, record the lessons."""
        self.open_gate()
        tag_run("Reflect", symbol=args.symbol, as_of=args.as_of)
        stances = self._stances(args)
        for role in args.decisions:
            self.steps[f"reflect:{role.value}"] = StepState.PENDING
        self.steps["record_lessons"] = StepState.PENDING

        measured = await self._measured(args)
        assert measured.market is not None and measured.learned_at is not None
        market = measured.market
        replies = await asyncio.gather(
            *(self._reflect(args, role, stances[role], market) for role in args.decisions)
        )
        reflections = dict(zip(args.decisions, replies, strict=True))
        lessons = [
            Lesson(
                role=role,
                symbol=args.symbol,
                as_of=args.as_of,
                learned_at=measured.learned_at,
                situation=args.situation,
                decision=f"{stances[role].value}: {args.decisions[role].text}",
                outcome=reflections[role].outcome,
                lesson=reflections[role].reflection.lesson,
                source=args.source,
            )
            for role in args.decisions
        ]
        recorded: RecordedLessons = await self._step(
            "record_lessons",
            run_activity(
                ReflectionActivities.record_lessons,
                RecordLessonsRequest(lessons=lessons),
                **durable(MEMORY_START_TO_CLOSE),
            ),
        )
        return ReflectResult(
            source=args.source,
            symbol=market.symbol,
            as_of=args.as_of,
            market=market,
            learned_at=measured.learned_at,
            reflections=reflections,
            inserted=recorded.inserted,
            already_known=recorded.already_known,
            waits=self.waits,
            usage=self.usage,
        )

    def _stances(self, args: ReflectInput) -> dict[MemoryRole, rf.Stance]:
        """Each role's stance; a role whose decision states none is a bad input, named."""
        stances = {}
        with as_temporal_failures():
            for role, decision in args.decisions.items():
                stance = rf.stance_of(role, decision.text, decision.direction)
                if stance is None:
                    raise InvalidInput(
                        f"decisions.{role.value}.direction",
                        f"no direction in {decision.direction or decision.text[:80]!r}",
                        fix="Give a direction such as Buy, Overweight, Hold, Underweight, Sell.",
                    )
                stances[role] = stance
        return stances

    async def _measured(self, args: ReflectInput) -> MeasuredOutcome:
        """Measure; while the horizon bar is missing, sleep until it should exist (durably)."""
        while True:
            measured: MeasuredOutcome = await self._step(
                "measure_outcome",
                run_activity(
                    ReflectionActivities.measure_outcome,
                    OutcomeRequest(
                        symbol=args.symbol,
                        as_of=args.as_of,
                        horizon_bars=args.horizon_bars,
                        benchmark=args.benchmark,
                        now=workflow.now(),
                    ),
                    **durable(DATA_START_TO_CLOSE),
                    summary=f"measure_outcome {args.symbol} (try {self.waits + 1})",
                ),
            )
            if measured.ready:
                self.earliest_at, self.reason = None, ""
                return measured
            assert measured.earliest_at is not None
            self.earliest_at, self.reason = measured.earliest_at, measured.reason
            if self.waits >= args.max_waits:
                self.steps["measure_outcome"] = StepState.FAILED
                raise ApplicationError(
                    f"the {args.horizon_bars}-bar outcome of {args.symbol} as of "
                    f"{args.as_of.isoformat()} is still not measurable after {self.waits} "
                    f"wait(s): {measured.reason}. Next estimate: "
                    f"{measured.earliest_at.isoformat()}; start again later or raise max_waits.",
                    type="OutcomeNotReady",
                    non_retryable=True,
                )
            self.waits += 1
            self.steps["measure_outcome"] = StepState.WAITING
            delay = max(measured.earliest_at - workflow.now(), MIN_WAIT)
            await workflow.sleep(delay, summary=f"wait {self.waits} for the horizon bar")

    async def _reflect(
        self, args: ReflectInput, role: MemoryRole, stance: rf.Stance, market: rf.MarketOutcome
    ) -> RoleReflection:
        """One role's reflection by the quick model."""
        decision = args.decisions[role].text
        info = workflow.info()
        key = f"reflect/{info.workflow_id}/{info.run_id}/{role.value}.raw.txt"
        inputs = rf.ReflectionInputs(
            role=role, stance=stance, situation=args.situation, decision=decision, outcome=market
        )
        usage = UsageReport()  # counted per role below, as reflector:<role>
        reflection = await self._step(
            f"reflect:{role.value}",
            call_agent(
                reflector.SPEC,
                inputs,
                llm=args.llm,
                raw_key=key,
                usage=usage,
                summary=f"{rf.REFLECTOR}: {role.value}",
            ),
        )
        self.usage.add(f"{rf.REFLECTOR}:{role.value}", usage.total)
        return RoleReflection(
            stance=stance,
            outcome=market.for_stance(stance),
            reflection=reflection,
        )
