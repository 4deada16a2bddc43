"""The reflector rehearsed for ``quantdesk prompt show``: one role's decision and its outcome.

A Reflect run grades a Pipeline decision once its horizon has passed. Rehearsed as of
T, nothing after T is read: the decision is the offline Pipeline's, made
``DEFAULT_HORIZON_BARS`` daily bars before T (so its outcome is known by T), each
role's words taken as ``PipelineState.role_decisions`` takes them for ``Reflect``, and
the outcome is measured as the ``measure_outcome`` activity measures it, reading
nothing after T.
"""

from __future__ import annotations

from datetime import datetime

from activities.reflection import (
    DEFAULT_HORIZON_BARS,
    TIMEFRAME,
    OutcomeRequest,
    ReflectionActivities,
)
from shared.agents import reflector
from shared.agents.pipeline import portfolio_manager
from shared.agents.pipeline.inputs import ManagerInputs
from shared.agents.pipeline.rehearsal import offline_run
from shared.agents.pipeline.roles import ANALYST_SPECS
from shared.agents.reflection import ReflectionInputs, stance_of
from shared.agents.rehearsed import Rehearsed, offline_answer
from shared.data.contracts import DataKind
from shared.errors import InvalidInput
from shared.llm.contracts import LlmChoice
from shared.memory import MemoryRole
from shared.tools.registry import ToolServices
from workflows.pipeline_contracts import PipelineState, situation_of


def _decided_at(symbol: str, now: datetime, services: ToolServices) -> datetime:
    """The daily bar ``DEFAULT_HORIZON_BARS`` bars before ``now``'s: its decision's horizon
    has passed by ``now``."""
    bars = services.router.call(
        DataKind.OHLCV,
        lambda vendor: vendor.ohlcv(symbol, TIMEFRAME, now, DEFAULT_HORIZON_BARS + 1),
        as_of=now,
    ).value
    if len(bars) <= DEFAULT_HORIZON_BARS:
        raise InvalidInput(
            "--as-of",
            f"{symbol} has {len(bars)} daily bars up to {now.isoformat()}: no decision "
            f"{DEFAULT_HORIZON_BARS} bars earlier to grade",
            fix="Use a later --as-of.",
        )
    return bars[0].time


def rehearse_reflector(
    symbol: str, now: datetime, role: MemoryRole, services: ToolServices
) -> Rehearsed:
    """The reflector's inputs for ``role`` grading the offline decision on ``symbol``, as of
    ``now`` (see the module's docstring)."""
    decided_at = _decided_at(symbol, now, services)
    steps = offline_run(symbol, decided_at, services)
    managed = steps[portfolio_manager.SPEC.name]
    assert isinstance(managed, ManagerInputs)
    research = steps.get("research_manager")
    state = PipelineState(
        workflow_id="prompt-show",
        symbol=symbol,
        as_of=decided_at,
        analysts=list(ANALYST_SPECS),
        debate_rounds=1,
        risk_rounds=1,
        llm=LlmChoice(),
        reports=managed.reports,
        research_transcript=research.transcript if isinstance(research, ManagerInputs) else [],
        research_plan=managed.research_plan,
        proposal=managed.proposal,
        risk_transcript=managed.transcript,
        decision=offline_answer(portfolio_manager.SPEC, managed),
    )
    decisions = state.role_decisions()
    given = decisions.get(role)
    stance = stance_of(role, given.text, given.direction) if given else None
    if given is None or stance is None:
        graded = ", ".join(r.value for r in decisions)
        raise InvalidInput(
            "--role",
            f"the offline Pipeline of {symbol} as of {decided_at.date()} gives {role.value} no "
            "decision with a direction to grade",
            fix=f"Use one of: {graded}.",
        )
    measured = ReflectionActivities(router=services.router).measure(
        OutcomeRequest(symbol=symbol, as_of=decided_at, now=now)
    )
    if measured.market is None:
        raise InvalidInput("--as-of", measured.reason, fix="Use a later --as-of.")
    inputs = ReflectionInputs(
        role=role,
        stance=stance,
        situation=situation_of(state.reports),
        decision=given.text,
        outcome=measured.market,
    )
    note = (
        f"decision: the offline Pipeline of {symbol} as of {decided_at.date()}, graded "
        f"{DEFAULT_HORIZON_BARS} bars later, as of {now.date()}",
    )
    return Rehearsed(reflector.SPEC, inputs, tuple(steps), note)
