"""The Scan rehearsed offline up to one agent: the inputs a Scan as of T would give it.

For ``quantdesk prompt show``. Every tool call the Scan makes (the workflow's own
prefetched calls, else those the offline engine plans) is read through the configured
vendors strictly as of the scan time; what upstream agents would have written comes
from their offline rules. The walk follows ``ScanWorkflow``: geopolitical, market
movers, sector then smart money, the deep dive on the sectors that moved most (chosen
in code), then the macro synthesis, with the workflow's default shortlist size.
"""

from __future__ import annotations

from collections.abc import Iterator
from datetime import datetime
from typing import Any

from pydantic import BaseModel

from shared.agents.rehearsed import Rehearsed, offline_tool_run
from shared.agents.scan import industry_deep_dive, macro_synthesis
from shared.agents.scan.facts import (
    Answers,
    answers_of_results,
    candidates,
    index_levels,
    sector_moves,
    top_sectors,
)
from shared.agents.scan.inputs import (
    DeepDiveInputs,
    ScannerInputs,
    ScanReports,
    SynthesisInputs,
    scanner_prefetch,
)
from shared.agents.scan.roles import AGENTS, PHASE_ONE, SCANNER_SPECS, ScannerKind
from shared.agents.spec import AgentSpec, agent_spec
from shared.errors import InvalidInput, NoData
from shared.tools.registry import ToolServices

DEFAULT_MAX_TICKERS = 10
"""The shortlist size a Scan asks for when none is given (``ScanInput.max_tickers``)."""

Step = tuple[AgentSpec[Any, Any], BaseModel]


class _Offline:
    """The scan's tool reads and offline answers so far, as of one time."""

    def __init__(self, as_of: datetime, services: ToolServices) -> None:
        self.context = {"as_of": as_of.isoformat()}
        self.services = services

    def scanner(self, kind: ScannerKind, inputs: ScannerInputs) -> tuple[Any, Answers]:
        """A scanner's offline report and every tool answer behind it."""
        return self.agent(SCANNER_SPECS[kind], inputs, scanner_prefetch(kind))

    def agent(self, spec: AgentSpec[Any, Any], inputs: Any, prefetch: Any) -> tuple[Any, Answers]:
        """An agent's offline answer and its tool answers, prefetched calls first."""
        report, results = offline_tool_run(
            spec, inputs, self.services, self.context, prefetch=prefetch
        )
        return report, answers_of_results(results)


def _walk(as_of: datetime, services: ToolServices) -> Iterator[Step]:
    """Every agent's step of a Scan in order, each upstream output made by its offline rule."""
    run = _Offline(as_of, services)
    opening = ScannerInputs(as_of=as_of)
    reports: dict[ScannerKind, Any] = {}
    answers: dict[ScannerKind, Answers] = {}
    for kind in PHASE_ONE:
        yield SCANNER_SPECS[kind], opening
        reports[kind], answers[kind] = run.scanner(kind, opening)
    moves = sector_moves(answers[ScannerKind.SECTOR])
    smart_inputs = opening.model_copy(
        update={"sector_report": reports[ScannerKind.SECTOR], "sectors": moves}
    )
    yield SCANNER_SPECS[ScannerKind.SMART_MONEY], smart_inputs
    smart, smart_answers = run.scanner(ScannerKind.SMART_MONEY, smart_inputs)
    chosen = top_sectors(moves)
    if not chosen:
        raise NoData(
            f"the sector scanner read no 21-day sector returns as of {as_of.isoformat()}, so "
            "a Scan has no deep dive: check the sector data for that date"
        )
    deep_inputs = DeepDiveInputs(
        as_of=as_of,
        sectors=chosen,
        smart_money_report=smart,
        smart_money=[c for c in candidates(smart_answers) if c.smart_money],
    )
    yield industry_deep_dive.SPEC, deep_inputs
    deep, deep_answers = run.agent(industry_deep_dive.SPEC, deep_inputs, deep_inputs.prefetch())
    movers = answers[ScannerKind.MARKET_MOVERS]
    yield (
        macro_synthesis.SPEC,
        SynthesisInputs(
            as_of=as_of,
            max_tickers=DEFAULT_MAX_TICKERS,
            reports=ScanReports(
                geopolitical=reports[ScannerKind.GEOPOLITICAL],
                market_movers=reports[ScannerKind.MARKET_MOVERS],
                sector=reports[ScannerKind.SECTOR],
                smart_money=smart,
                industry_deep_dive=deep,
            ),
            sectors=moves,
            deep_dive_sectors=[move.sector for move in chosen],
            indices=index_levels(movers),
            candidates=candidates([*movers, *smart_answers, *deep_answers]),
        ),
    )


def rehearse_scan(agent: str, as_of: datetime, services: ToolServices) -> Rehearsed:
    """``agent``'s inputs in a Scan as of ``as_of`` (see the module's docstring)."""
    if agent_spec(agent).name not in AGENTS:
        raise InvalidInput(
            "agent", f"{agent} is not an agent of the Scan", fix=f"Use one of: {', '.join(AGENTS)}."
        )
    before: list[str] = []
    for spec, inputs in _walk(as_of, services):
        if spec.name == agent:
            return Rehearsed(spec, inputs, tuple(before))
        before.append(spec.name)
    raise AssertionError(f"the Scan's walk has no step {agent}")  # AGENTS lists every step
