"""Which flow ``quantdesk prompt show`` rehearses an agent in, and the flags each flow takes.

Each flow's run is rehearsed offline up to the agent, reading only what the run reads,
strictly as of the analysis time: the Pipeline (``shared.agents.pipeline.rehearsal``)
and the Scan (``shared.agents.scan.rehearsal``) through the configured data routes,
QuantAgent (``client.prompt_quantagent``) through its bar source, the Portfolio
(``client.prompt_portfolio``) over AutoRun's feed and a book read read-only, the reflector
(``client.prompt_reflection``) over an offline decision whose horizon ended by T.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping
from dataclasses import dataclass
from datetime import datetime
from typing import Any

from client.prompt_portfolio import rehearse_portfolio
from client.prompt_quantagent import rehearse_quantagent
from client.prompt_reflection import rehearse_reflector
from shared.agents import quantagent_agents as agents
from shared.agents import reflector
from shared.agents.pipeline.rehearsal import rehearse
from shared.agents.pipeline.roles import GROUPS as PIPELINE_GROUPS
from shared.agents.portfolio.roles import PORTFOLIO_GROUP
from shared.agents.rehearsed import Rehearsed
from shared.agents.scan.rehearsal import rehearse_scan
from shared.agents.scan.roles import GROUPS as SCAN_GROUPS
from shared.agents.spec import AGENT_SPECS, AgentSpec, agent_spec
from shared.config import Settings
from shared.data.analysis_time import analysis_time
from shared.errors import InvalidInput
from shared.market.bars import Timeframe
from shared.memory import MemoryRole
from shared.tools.registry import ToolServices
from workflows.quantagent import (
    ChartInput,
)
from workflows.scan import CLOCK_SYMBOL

DEFAULT_SYMBOL = "GOOG"


@dataclass(frozen=True)
class PromptRequest:
    """What ``prompt show`` was asked: the agent and the flags given (None: not given)."""

    agent: str
    as_of: datetime | None = None
    symbol: str | None = None
    timeframe: Timeframe | None = None
    chart_input: ChartInput | None = None
    role: MemoryRole | None = None
    book: str | None = None

    def given(self) -> dict[str, Any]:
        """The flags given, by field name."""
        fields = ("as_of", "symbol", "timeframe", "chart_input", "role", "book")
        return {name: getattr(self, name) for name in fields if getattr(self, name) is not None}

    def ticker(self) -> str:
        """The symbol given, else the default one, as a run spells it."""
        return (self.symbol or DEFAULT_SYMBOL).strip().upper()


Preview = Callable[[PromptRequest, Settings, ToolServices], Rehearsed]


def _when(services: ToolServices, symbol: str, as_of: datetime | None) -> datetime:
    """The analysis time a run resolves: ``as_of`` checked against the data, else the latest."""
    return analysis_time(services.router, symbol, as_of).as_of


def _pipeline(request: PromptRequest, settings: Settings, services: ToolServices) -> Rehearsed:
    symbol = request.ticker()
    return rehearse(request.agent, symbol, _when(services, symbol, request.as_of), services)


def _scan(request: PromptRequest, settings: Settings, services: ToolServices) -> Rehearsed:
    # A Scan's clock is its technology ETF's latest daily bar (``ScanWorkflow``).
    return rehearse_scan(request.agent, _when(services, CLOCK_SYMBOL, request.as_of), services)


def _portfolio(request: PromptRequest, settings: Settings, services: ToolServices) -> Rehearsed:
    # As of AutoRun's Scan: the Scan's clock.
    when = _when(services, CLOCK_SYMBOL, request.as_of)
    return rehearse_portfolio(request.agent, when, request.book, settings, services)


def _quantagent(request: PromptRequest, settings: Settings, services: ToolServices) -> Rehearsed:
    return rehearse_quantagent(
        request.agent,
        request.ticker(),
        request.timeframe or Timeframe.D1,
        request.as_of,
        request.chart_input or "image",
        services,
    )


def _reflector(request: PromptRequest, settings: Settings, services: ToolServices) -> Rehearsed:
    symbol = request.ticker()
    role = request.role or MemoryRole.PORTFOLIO_MANAGER
    return rehearse_reflector(symbol, _when(services, symbol, request.as_of), role, services)


@dataclass(frozen=True)
class Flow:
    """How ``prompt show`` rehearses a flow's agents, and the flags they take."""

    name: str
    preview: Preview
    flags: frozenset[str]
    only: Mapping[str, frozenset[str]] | None = None
    """Flags only some of the flow's agents take: flag -> those agents."""


FLOWS: tuple[tuple[tuple[str, ...], Flow], ...] = (
    (PIPELINE_GROUPS, Flow("Pipeline", _pipeline, frozenset({"as_of", "symbol"}))),
    (SCAN_GROUPS, Flow("Scan", _scan, frozenset({"as_of"}))),
    (
        (agents.QUANTAGENT_GROUP,),
        Flow(
            "QuantAgent",
            _quantagent,
            frozenset({"as_of", "symbol", "timeframe", "chart_input"}),
            {"chart_input": frozenset({agents.PATTERN.name, agents.TREND.name})},
        ),
    ),
    ((PORTFOLIO_GROUP,), Flow("Portfolio", _portfolio, frozenset({"as_of", "book"}))),
    (
        (reflector.SPEC.group,),
        Flow("Reflect", _reflector, frozenset({"as_of", "symbol", "role"})),
    ),
)


def _flag(name: str) -> str:
    return "--" + name.replace("_", "-")


def flow_of(spec: AgentSpec[Any, Any]) -> Flow:
    """The flow ``spec``'s agent runs in, or an error naming the agents that can be shown."""
    for groups, flow in FLOWS:
        if spec.group in groups:
            return flow
    shown_groups = {group for groups, _ in FLOWS for group in groups}
    shown = [name for name, known in AGENT_SPECS.items() if known.group in shown_groups]
    raise InvalidInput(
        "agent",
        f"prompt show knows no flow of {spec.name}'s group {spec.group!r}",
        fix=f"Show one of: {', '.join(shown)}; or add the group's flow to FLOWS "
        "(client/prompt_preview.py).",
    )


def preview(request: PromptRequest, settings: Settings, services: ToolServices) -> Rehearsed:
    """``request.agent``'s inputs as its flow's run builds them; a flag the agent does not
    take is refused, naming it and the flags it does take."""
    flow = flow_of(agent_spec(request.agent))
    for name in request.given():
        takers = (flow.only or {}).get(name)
        if name not in flow.flags or (takers is not None and request.agent not in takers):
            takes = sorted(
                _flag(f)
                for f in flow.flags
                if request.agent in (flow.only or {}).get(f, frozenset({request.agent}))
            )
            raise InvalidInput(
                _flag(name),
                f"{request.agent} ({flow.name}) takes no {_flag(name)}",
                fix=f"Drop {_flag(name)}; {request.agent} takes {', '.join(takes)}.",
            )
    return flow.preview(request, settings, services)
