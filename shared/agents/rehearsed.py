"""An agent's inputs as a run would build them, rehearsed offline, and the prompt they make.

``quantdesk prompt show`` prints an agent's exact prompt without calling a model, so
each flow rehearses its run up to that agent (``shared.agents.pipeline.rehearsal``,
``client.prompt_preview``). What the flows share lives here: the rehearsed agent and
how it is shown, and an agent's tool loop as the offline provider runs it (the
workflow's own calls first, else every tool the engine plans from the inputs, then
the agent's offline rule over the results), so an upstream output is the one an
offline run would have produced.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Any

from pydantic import BaseModel

from shared.agents.prompt_text import render_prompt
from shared.agents.spec import AgentSpec, InputsT, OutputT
from shared.llm.contracts import ChatMessage, ChatRequest, ToolCall, ToolRequest, ToolResult
from shared.llm.offline.reading import OfflineInput, read_request
from shared.llm.offline.tool_calls import plan_tool_calls
from shared.tools.registry import ToolServices, run_tool, tool_specs


@dataclass(frozen=True)
class Rehearsed:
    """An agent's inputs as a run would build them, and whose outputs were made offline."""

    spec: AgentSpec[Any, Any]
    inputs: BaseModel
    offline_upstream: tuple[str, ...]
    """The agents before it, whose outputs its inputs hold, answered by their offline rules."""
    notes: tuple[str, ...] = ()
    """Where else its inputs came from, for the header."""

    def messages(self) -> list[ChatMessage]:
        """The agent's system and user messages over these inputs."""
        return self.spec.messages(self.inputs)


def render_rehearsed(rehearsed: Rehearsed) -> str:
    """The rehearsed agent's prompt exactly as a run sends it, with what was made offline."""
    upstream = ", ".join(rehearsed.offline_upstream) or "none"
    notes = [
        f"upstream outputs made by their offline rules (deterministic, no model): {upstream}",
        *rehearsed.notes,
    ]
    return render_prompt(rehearsed.spec, rehearsed.inputs, notes)


def nothing_seen(spec: AgentSpec[Any, Any]) -> OfflineInput:
    """What an agent without tools has seen besides its inputs: nothing."""
    return read_request(ChatRequest(agent=spec.name, messages=[]))


def offline_answer(spec: AgentSpec[InputsT, OutputT], inputs: InputsT) -> OutputT:
    """What ``spec``'s offline rule answers from ``inputs`` alone (an agent without tools)."""
    return spec.answer_offline(inputs, nothing_seen(spec))


def offline_tool_run(
    spec: AgentSpec[InputsT, OutputT],
    inputs: InputsT,
    services: ToolServices,
    context: Mapping[str, Any],
    *,
    hidden: Sequence[str] = (),
    prefetch: Sequence[ToolCall] = (),
) -> tuple[OutputT, list[ToolResult]]:
    """``spec``'s tool loop as an offline run makes it: the workflow's ``prefetch`` calls, else
    the calls the offline engine plans from the inputs over the tools offered (``hidden``
    arguments fixed by ``context``), each read through ``services`` with ``context``; then
    the offline answer over their results. Returns the answer and every tool result."""
    offered = tool_specs(spec.tools, fixed=hidden)
    calls = list(prefetch) or plan_tool_calls(offered, inputs.model_dump(mode="json"))
    results = [
        run_tool(ToolRequest(call=call, context=dict(context)), lambda: services) for call in calls
    ]
    conversation = ChatRequest(
        agent=spec.name,
        messages=[
            *spec.messages(inputs),
            *([ChatMessage(role="assistant", tool_calls=calls)] if calls else []),
            *(r.message() for r in results),
        ],
        inputs=inputs.model_dump(mode="json"),
    )
    return spec.answer_offline(inputs, read_request(conversation)), results
