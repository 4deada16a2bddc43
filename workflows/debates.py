"""The Pipeline's two debates as child workflows: ``Debate`` (bull/bear, then the research
manager) and ``Risk`` (aggressive/conservative/neutral on the trader's proposal).

Both walk ``speaking_order`` (bull first, 2×rounds turns; aggressive, conservative,
neutral, 3×rounds turns): each turn is one ``call_agent`` of the speaker's spec over
its ``DebaterInputs`` with the transcript so far, so every debater reads
the same typed material its prompt shows. A separate workflow each, so a debate
has its own history, progress and Web UI page, and can be started alone from a
Pipeline's saved ``state`` to re-run only that part. The portfolio manager judges
the risk debate in the Pipeline, which holds the plan and proposal it needs.

A debate cannot do without a turn or the plan: a reply that stays invalid after its
repair turns parks the call until ``resume`` (``workflows.resume``), with the reason.
"""

from __future__ import annotations

from collections.abc import Awaitable
from typing import TypeVar

from temporalio import workflow

with workflow.unsafe.imports_passed_through():
    from shared.agents.pipeline import research_manager
    from shared.agents.pipeline.inputs import DebaterInputs, ManagerInputs
    from shared.agents.pipeline.prompts import DEBATER_BRIEFS
    from shared.agents.pipeline.roles import DEBATER_AGENTS, RESEARCH_MANAGER, speaking_order
    from shared.agents.pipeline.schemas import (
        Debate,
        DebateTurn,
        Speaker,
        TraderProposal,
    )
    from shared.llm.contracts import UsageReport
    from shared.memory import MemoryRole
    from workflows.debate_contracts import (
        DebateInput,
        DebateProgress,
        DebateResult,
        RiskInput,
        RiskResult,
    )
    from workflows.llm_calls import call_agent
    from workflows.progress import StepState, track
    from workflows.provider_check import check_provider
    from workflows.resume import Resumable
    from workflows.run_keys import run_key_prefix
    from workflows.visibility import tag_run

T = TypeVar("T")


def turn_step(speaker: Speaker, round_: int) -> str:
    """A turn's step name and activity summary, e.g. ``bull_researcher round 2``."""
    return f"{DEBATER_AGENTS[speaker]} round {round_}"


def _turn_steps(order: list[Speaker]) -> list[str]:
    seen: dict[Speaker, int] = {}
    steps = []
    for speaker in order:
        seen[speaker] = seen.get(speaker, 0) + 1
        steps.append(turn_step(speaker, seen[speaker]))
    return steps


class Floor:
    """One debate's state and its turn loop, shared by ``Debate`` and ``Risk``."""

    def __init__(self) -> None:
        self.steps: dict[str, StepState] = {}
        self.transcript: list[DebateTurn] = []
        self.usage = UsageReport()

    def progress(self, waiting: dict[str, str]) -> DebateProgress:
        """What the ``progress`` query answers."""
        return DebateProgress.of(
            self.steps, self.usage, waiting=waiting, transcript=self.transcript
        )

    def plan(self, order: list[Speaker], *after: str) -> None:
        """Show every turn (and the steps ``after`` them) as pending from the start."""
        self.steps = {step: StepState.PENDING for step in [*_turn_steps(order), *after]}

    async def step(self, name: str, work: Awaitable[T]) -> T:
        """Await ``work`` while ``name`` shows running, then done or failed."""
        return await track(self.steps, name, work)

    async def debate(
        self, args: DebateInput, order: list[Speaker], proposal: TraderProposal | None
    ) -> list[DebateTurn]:
        """Every turn of ``order`` in sequence, each answering the transcript so far."""
        prefix = run_key_prefix("debates")
        for speaker in order:
            inputs = DebaterInputs(
                symbol=args.symbol,
                reports=args.reports,
                transcript=self.transcript,
                memories=args.memories.get(MemoryRole(speaker.value), ""),
                proposal=proposal,
            )
            round_ = inputs.next_round(speaker)
            name = turn_step(speaker, round_)
            # The loop, not the model, says who speaks in which round.
            turn = call_agent(
                DEBATER_BRIEFS[speaker],
                inputs,
                llm=args.llm,
                raw_key=f"{prefix}/{name.replace(' ', '-')}.raw.txt",
                usage=self.usage,
                summary=name,
                fixed={"speaker": speaker.value, "round": round_},
            )
            self.transcript.append(await self.step(name, turn))
        return self.transcript


class DebateRun(Resumable):
    """What ``Debate`` and ``Risk`` share: the floor, its progress query, and the opening."""

    def __init__(self) -> None:
        self.floor = Floor()

    @workflow.query(name="progress")
    def progress(self) -> DebateProgress:
        """Each turn's state, the transcript so far and the tokens spent."""
        return self.floor.progress(self.waiting_steps())

    async def argue(
        self,
        flow: str,
        args: DebateInput,
        debate: Debate,
        proposal: TraderProposal | None = None,
        *after: str,
    ) -> list[DebateTurn]:
        """Open the run (its gate, tags and provider check), then debate ``rounds`` rounds of
        ``debate``; the steps ``after`` the turns show as pending from the start."""
        self.open_gate()
        tag_run(flow, symbol=args.symbol, as_of=args.as_of)
        check_provider(args.llm)
        order = speaking_order(debate, args.rounds)
        self.floor.plan(order, *after)
        return await self.floor.debate(args, order, proposal)


@workflow.defn(name="Debate")
class DebateWorkflow(DebateRun):
    """The bull/bear debate over the analysts' reports, then the research manager's plan."""

    @workflow.run
    async def run(self, args: DebateInput) -> DebateResult:
        """Debate ``rounds`` rounds, then let the research manager decide."""
        transcript = await self.argue("Debate", args, Debate.RESEARCH, None, RESEARCH_MANAGER)
        inputs = ManagerInputs(
            symbol=args.symbol,
            reports=args.reports,
            transcript=transcript,
            memories=args.memories.get(MemoryRole.RESEARCH_MANAGER, ""),
            macro_context=args.macro_context,
        )
        plan = call_agent(
            research_manager.SPEC,
            inputs,
            llm=args.llm,
            raw_key=f"{run_key_prefix('debates')}/{RESEARCH_MANAGER}.raw.txt",
            usage=self.floor.usage,
        )
        return DebateResult(
            transcript=transcript,
            research_plan=await self.floor.step(RESEARCH_MANAGER, plan),
            usage=self.floor.usage,
        )


@workflow.defn(name="Risk")
class RiskWorkflow(DebateRun):
    """The risk debate over the trader's proposal; the Pipeline's portfolio manager judges it."""

    @workflow.run
    async def run(self, args: RiskInput) -> RiskResult:
        """Debate ``rounds`` rounds of aggressive, conservative, neutral."""
        transcript = await self.argue("Risk", args, Debate.RISK, args.proposal)
        return RiskResult(transcript=transcript, usage=self.floor.usage)
