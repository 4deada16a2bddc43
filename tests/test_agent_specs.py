"""Every registered agent spec is complete: a spec alone must make a working agent.

For every spec: its schema is registered under the name its requests send, its
tools exist in the tool registry, and the offline engine answers for it from its
spec. For each Pipeline agent: its prompt builds from the inputs a run gives it
(rehearsed on the sim market, all data present) and its offline rule answers a
valid output for them; an analyst has its report heading. (The Scan's, the
Portfolio's and QuantAgent's agents are run from their specs in test_scan_agents,
test_portfolio_agents and the QuantAgent workflow tests.)
"""

from __future__ import annotations

from datetime import UTC, datetime
from typing import Any

import pytest

from shared.agents.pipeline.kinds import ANALYST_GROUP, AnalystKind
from shared.agents.pipeline.prompts import REPORT_HEADINGS
from shared.agents.pipeline.rehearsal import analyst_offline, rehearse
from shared.agents.pipeline.roles import AGENTS, all_analysts
from shared.agents.schemas import RESPONSE_SCHEMAS
from shared.agents.spec import AGENT_SPECS, AgentSpec
from shared.data.contracts import DataKind
from shared.data.router import DataRouter
from shared.data.sim import SimVendor
from shared.llm.contracts import ChatRequest
from shared.llm.offline.engine import analyst_for, generic_analyst
from shared.llm.offline.reading import read_request
from shared.tools.registry import TOOLS, ToolServices

AS_OF = datetime(2016, 3, 2, 21, 0, tzinfo=UTC)
SYMBOL = "QBTX"
SERVICES = ToolServices(
    router=DataRouter({"sim": SimVendor()}, {kind: ["sim"] for kind in DataKind})
)


def _answer(spec: AgentSpec[Any, Any], inputs: Any) -> Any:
    if spec.group == ANALYST_GROUP:
        report, results = analyst_offline(spec, inputs, SERVICES)
        assert results and all(result.ok for result in results)
        return report
    return spec.answer_offline(inputs, read_request(ChatRequest(agent=spec.name, messages=[])))


@pytest.mark.parametrize("name", list(AGENT_SPECS))
def test_the_spec_names_a_registered_schema_known_tools_and_its_offline_rule(name: str) -> None:
    spec = AGENT_SPECS[name]

    # An agent without a schema answers in prose.
    assert spec.output is None or RESPONSE_SCHEMAS[spec.output.__name__] is spec.output
    assert set(spec.tools) <= set(TOOLS)
    assert spec.title.strip() and spec.brief.strip()
    assert analyst_for(name) is not generic_analyst


@pytest.mark.parametrize("name", list(AGENTS))
def test_the_spec_makes_a_working_agent(name: str) -> None:
    spec = AGENT_SPECS[name]
    rehearsed = rehearse(name, SYMBOL, AS_OF, SERVICES)

    messages = rehearsed.messages()
    answer = _answer(spec, rehearsed.inputs)

    assert spec.output is not None
    assert [m.role for m in messages] == ["system", "user"] and spec.title in messages[0].content
    assert isinstance(answer, spec.output) and spec.as_text(answer).strip()
    assert spec.output.model_validate_json(answer.model_dump_json()) == answer


def test_every_analyst_has_a_heading_and_a_kind() -> None:
    analysts = [spec for spec in AGENT_SPECS.values() if spec.group == ANALYST_GROUP]

    assert [AnalystKind(spec.key) for spec in analysts] == list(AnalystKind)
    assert all(REPORT_HEADINGS[AnalystKind(spec.key)] == spec.heading for spec in analysts)
    assert all_analysts() == "market,social,news,fundamentals"
