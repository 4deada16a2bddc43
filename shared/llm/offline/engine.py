"""The offline provider: a deterministic rule-based analyst engine.

It is the embedded default (no key, no network) and the baseline every LLM must
beat. It answers a ``ChatRequest`` from the request's ``inputs`` and the tool
results in the conversation: same input, same output; different data,
different conclusions. An agent with a spec (``shared.agents.spec``) is answered
by its spec's offline rule, over its typed inputs; any other agent by the generic
analyst, which reads whatever numbers it is given.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

from pydantic import BaseModel

from shared.agents.spec import AGENT_SPECS, AgentSpec
from shared.errors import InvalidInput
from shared.llm.contracts import ChatRequest, ChatResponse, Usage
from shared.llm.offline.generic import analyse, render_note
from shared.llm.offline.reading import OfflineInput, read_request, tools_already_called
from shared.llm.offline.tool_calls import plan_tool_calls
from shared.llm.providers import OFFLINE_MODEL

# Roughly four characters per token, the usual rule of thumb for English text.
CHARS_PER_TOKEN = 4


class OfflineAnswer(BaseModel):
    """An offline analyst's reply: a report, and the structured object if one was asked."""

    text: str
    structured: BaseModel | None = None


OfflineAnalyst = Callable[[OfflineInput, str | None], OfflineAnswer]


def generic_analyst(offline: OfflineInput, schema: str | None) -> OfflineAnswer:
    """The fallback analyst; it can only write the generic ``AnalystNote`` schema."""
    if schema not in (None, "AnalystNote"):
        raise InvalidInput(
            "response_schema",
            f"the offline engine has no analyst writing {schema!r} for agent {offline.agent!r}",
            fix="Give the agent a spec with its offline rule (shared.agents.spec), or use an "
            "LLM provider.",
        )
    note = analyse(offline)
    return OfflineAnswer(text=render_note(note), structured=note)


def spec_analyst(spec: AgentSpec[Any, Any]) -> OfflineAnalyst:
    """``spec``'s offline rule as an offline analyst: it reads the request's inputs as the
    spec's inputs model and writes only the spec's schema."""

    def answer(offline: OfflineInput, schema: str | None) -> OfflineAnswer:
        if schema not in (None, spec.schema_name):
            raise InvalidInput(
                "response_schema",
                f"the offline {spec.name} writes {spec.schema_name}, not {schema!r}",
                fix=f"Ask {spec.name} for {spec.schema_name}.",
            )
        result = spec.answer_offline(offline.inputs, offline)
        return OfflineAnswer(text=spec.as_text(result), structured=result)

    return answer


def analyst_for(agent: str) -> OfflineAnalyst:
    """The offline analyst of ``agent``: its spec's rule, or the generic one."""
    spec = AGENT_SPECS.get(agent)
    return generic_analyst if spec is None else spec_analyst(spec)


def _tokens(text: str) -> int:
    return max(1, len(text) // CHARS_PER_TOKEN)


def answer_offline(request: ChatRequest, model: str) -> ChatResponse:
    """Answer like an LLM would: tool calls first when tools are offered, then the report."""
    if model != OFFLINE_MODEL:
        raise InvalidInput(
            "llm.model",
            f"the offline provider has no model {model!r}",
            fix=f"Use {OFFLINE_MODEL!r} or leave the model unset.",
        )
    prompt_tokens = sum(_tokens(m.content) for m in request.messages)
    if request.tools and not tools_already_called(request):
        calls = plan_tool_calls(request.tools, request.inputs)
        if calls:
            return ChatResponse(
                tool_calls=calls,
                provider="offline",
                model=model,
                finish_reason="tool_calls",
                usage=Usage(calls=1, input_tokens=prompt_tokens, output_tokens=10 * len(calls)),
            )
    offline = read_request(request)
    answer = analyst_for(request.agent)(offline, request.response_schema)
    structured = answer.structured if request.response_schema is not None else None
    text = structured.model_dump_json() if structured is not None else answer.text
    return ChatResponse(
        text=text,
        provider="offline",
        model=model,
        finish_reason="stop",
        usage=Usage(calls=1, input_tokens=prompt_tokens, output_tokens=_tokens(text)),
    )
