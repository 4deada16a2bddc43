"""The Pipeline rehearsed offline up to one agent: the inputs a run would give it.

``quantdesk prompt show`` prints the exact prompt of an agent without calling a
model, so it needs that agent's inputs as a run would build them. The data is
real: each analyst's tools read the configured vendors strictly as of the
analysis time, as a run's tools do. What upstream agents would have written is
produced by their offline rules (deterministic, the offline provider's answers; a
model would write other words), and no lessons are recalled (a run reads them from
its memory store). The walk follows the workflow's order: analysts, bull/bear
debate, research manager, trader, risk debate, portfolio manager; after a critical
abort only the portfolio manager follows, as in a run.
"""

from __future__ import annotations

from collections.abc import Generator, Iterator
from datetime import datetime
from typing import Any

from pydantic import BaseModel

from shared.agents.pipeline import portfolio_manager, research_manager, trader
from shared.agents.pipeline.facts import payloads_of_results, positive, price_facts
from shared.agents.pipeline.inputs import (
    AnalystInputs,
    AnalystReports,
    DebaterInputs,
    ManagerInputs,
    TraderInputs,
)
from shared.agents.pipeline.kinds import AnalystKind
from shared.agents.pipeline.prompts import DEBATER_BRIEFS
from shared.agents.pipeline.roles import AGENTS, ANALYST_SPECS, GROUPS, speaking_order
from shared.agents.pipeline.schemas import AnalystReport, Debate, DebateTurn
from shared.agents.rehearsed import Rehearsed, offline_answer, offline_tool_run, render_rehearsed
from shared.agents.spec import AgentSpec, agent_spec
from shared.errors import InvalidInput
from shared.llm.contracts import ToolResult
from shared.tools.registry import ToolServices

__all__ = ["Rehearsed", "analyst_offline", "offline_run", "rehearse", "render_rehearsed"]

Step = tuple[AgentSpec[Any, Any], BaseModel]


LESSONS_NOTE = "lessons recalled: none (a run reads them from its memory store)"


def analyst_offline(
    spec: AgentSpec[AnalystInputs, AnalystReport], inputs: AnalystInputs, services: ToolServices
) -> tuple[AnalystReport, list[ToolResult]]:
    """An analyst's tool loop run offline: the tools the offline engine calls, read through
    ``services`` as of ``inputs.as_of``, then the analyst's offline report on their results."""
    context = {"as_of": inputs.as_of.isoformat(), "symbol": inputs.symbol}
    return offline_tool_run(spec, inputs, services, context, hidden=["symbol"])


def _walk(symbol: str, as_of: datetime, services: ToolServices) -> Iterator[Step]:
    """Every agent's step of a run in order, each upstream output made by its offline rule."""
    base = AnalystInputs(symbol=symbol, as_of=as_of)
    reports, market = [], []
    for kind, spec in ANALYST_SPECS.items():
        yield spec, base
        report, results = analyst_offline(spec, base, services)
        reports.append(report)
        market += results if kind is AnalystKind.MARKET else []
    given = AnalystReports.of(reports)
    price = price_facts(payloads_of_results(market))
    last_price = positive(price.last_close)
    if given.critical_abort() is None:
        research = yield from _turns(Debate.RESEARCH, symbol, given, None)
        judged = ManagerInputs(symbol=symbol, reports=given, transcript=research)
        yield research_manager.SPEC, judged
        plan = offline_answer(research_manager.SPEC, judged)
        ordered = TraderInputs.of(symbol, given, plan, price)
        yield trader.SPEC, ordered
        proposal = offline_answer(trader.SPEC, ordered)
        risk = yield from _turns(Debate.RISK, symbol, given, proposal)
        decided = ManagerInputs(
            symbol=symbol,
            reports=given,
            transcript=risk,
            research_plan=plan,
            proposal=proposal,
            last_price=last_price,
        )
    else:
        decided = ManagerInputs(symbol=symbol, reports=given, last_price=last_price)
    yield portfolio_manager.SPEC, decided


def _turns(
    debate: Debate, symbol: str, reports: AnalystReports, proposal: Any
) -> Generator[Step, None, list[DebateTurn]]:
    """Each turn of ``debate``; returns the transcript (``yield from`` gives it back)."""
    transcript: list[DebateTurn] = []
    for speaker in speaking_order(debate):
        spec = DEBATER_BRIEFS[speaker]
        inputs = DebaterInputs(
            symbol=symbol, reports=reports, transcript=list(transcript), proposal=proposal
        )
        yield spec, inputs
        transcript.append(offline_answer(spec, inputs))
    return transcript


def offline_run(symbol: str, as_of: datetime, services: ToolServices) -> dict[str, BaseModel]:
    """Every agent's inputs in an offline run of ``symbol`` as of ``as_of``, by agent name, in
    the run's order (after a critical abort: the analysts and the portfolio manager)."""
    return {spec.name: inputs for spec, inputs in _walk(symbol.strip().upper(), as_of, services)}


def rehearse(agent: str, symbol: str, as_of: datetime, services: ToolServices) -> Rehearsed:
    """``agent``'s inputs in a run of ``symbol`` as of ``as_of`` (see the module's docstring).

    An unknown agent, an agent of another flow, or one a critical abort skips in this run
    is refused, naming the field and what to use instead.
    """
    target = agent_spec(agent)
    if target.group not in GROUPS:
        raise InvalidInput(
            "agent",
            f"{agent} is not an agent of the Pipeline; prompt show rehearses the Pipeline",
            fix=f"Use one of: {', '.join(AGENTS)}.",
        )
    before: list[str] = []
    for spec, inputs in _walk(symbol.strip().upper(), as_of, services):
        if spec.name == agent:
            return Rehearsed(spec, inputs, tuple(before), (LESSONS_NOTE,))
        before.append(spec.name)
    raise InvalidInput(
        "agent",
        f"a critical abort skips {agent} in a run of {symbol} as of {as_of.isoformat()}",
        fix="Show the portfolio manager (it decides on the abort), or another date.",
    )
