"""The Anthropic messages client.

Anthropic's shape differs from chat completions in three ways this module
absorbs: system prompts are a parameter, not messages; tool results are
``tool_result`` blocks inside a *user* turn, and all results answering one
assistant turn must share that user turn (so consecutive turns of the same
role are merged); ``max_tokens`` is required.

A reply that fits a schema is asked for with a tool (the provider row's
``structured_output`` is ``tool``): the schema becomes the input schema of an
answer tool named after it, and ``tool_choice`` makes the model call it, so
Claude cannot answer in prose. When data tools are offered too (a tool loop
with a schema), ``tool_choice`` is ``any``: the model either calls data tools or
answers through the answer tool. The answer tool's input comes back as the
reply's JSON text, for the worker to validate like any other reply, and is not
reported as a tool call; data tools called beside it win (the model answers
after reading their results). ``any`` and ``tool`` do not combine with extended
thinking, which quantdesk does not ask for.

``ChatRequest.temperature`` is not sent: ``messages.create`` of the anthropic
SDK 2.x has no sampling parameters and raises TypeError on the keyword.

The caller always passes a timeout, which also switches off the SDK's habit of
refusing non-streaming calls whose ``max_tokens`` it guesses will take too long.
"""

from __future__ import annotations

import json
from collections.abc import Callable
from typing import Any

import anthropic
from anthropic.types import Message

from shared.errors import InvalidInput
from shared.llm.clients.common import SdkErrors, Target, Vendor, unparsed, without_none
from shared.llm.contracts import ChatMessage, ChatRequest, ChatResponse, ToolCall, ToolSpec, Usage
from shared.llm.providers import StructuredOutput

DEFAULT_MAX_TOKENS = 4096

Blocks = list[dict[str, Any]]


# -- request ------------------------------------------------------------------


def _text(content: str) -> Blocks:
    """A text block, or none: Anthropic rejects empty text blocks."""
    return [{"type": "text", "text": content}] if content else []


def _user(message: ChatMessage, target: Target) -> Blocks:
    """Images first, then the question: the order Anthropic recommends."""
    images = [target.image(ref) for ref in message.images]
    return [
        {"type": "image", "source": {"type": "base64", "media_type": kind, "data": data}}
        for kind, data in images
    ] + _text(message.content)


def _assistant(message: ChatMessage, target: Target) -> Blocks:
    return _text(message.content) + [
        {"type": "tool_use", "id": call.id, "name": call.name, "input": call.arguments}
        for call in message.tool_calls
    ]


def _tool(message: ChatMessage, target: Target) -> Blocks:
    return [
        {"type": "tool_result", "tool_use_id": message.tool_call_id, "content": message.content}
    ]


# role in ChatMessage -> (role on the wire, blocks); system messages go to `system` instead.
_TURN: dict[str, tuple[str, Callable[[ChatMessage, Target], Blocks]]] = {
    "user": ("user", _user),
    "assistant": ("assistant", _assistant),
    "tool": ("user", _tool),
}


def _turns(messages: list[ChatMessage], target: Target) -> list[dict[str, Any]]:
    """The conversation as Anthropic turns, same-role neighbours merged into one."""
    turns: list[dict[str, Any]] = []
    for message in messages:
        if message.role == "system":
            continue
        role, build = _TURN[message.role]
        blocks = build(message, target)
        if turns and turns[-1]["role"] == role:
            turns[-1]["content"].extend(blocks)
        else:
            turns.append({"role": role, "content": blocks})
    return turns


def _tool_spec(tool: ToolSpec) -> dict[str, Any]:
    return {"name": tool.name, "description": tool.description, "input_schema": tool.parameters}


def _answer_tool(target: Target) -> str | None:
    """The answer tool's name when the reply must fit a schema through a tool, else None."""
    by_tool = target.spec.capabilities.structured_output is StructuredOutput.TOOL
    return target.wire_schema_name if by_tool and target.json_schema is not None else None


def _tools(request: ChatRequest, target: Target) -> tuple[Blocks, dict[str, Any] | None]:
    """The tools to offer and the ``tool_choice`` that makes the model answer through one."""
    tools = [_tool_spec(tool) for tool in request.tools]
    answer = _answer_tool(target)
    if answer is None or target.json_schema is None:
        return tools, None
    if any(tool.name == answer for tool in request.tools):
        raise InvalidInput(
            "tools",
            f"a data tool is named {answer!r}, like the answer tool of schema "
            f"{target.schema_name!r}",
            fix="Rename the tool: tool names must differ from response schema names.",
        )
    tools.append(
        {
            "name": answer,
            "description": f"Give your final answer: the complete {answer} object as this "
            "tool's input.",
            "input_schema": target.json_schema,
        }
    )
    choice = {"type": "any"} if request.tools else {"type": "tool", "name": answer}
    return tools, choice


def request_params(request: ChatRequest, target: Target) -> dict[str, Any]:
    """The keyword arguments of ``messages.create`` for ``request``."""
    system = "\n\n".join(m.content for m in request.messages if m.role == "system")
    tools, tool_choice = _tools(request, target)
    return {
        "model": target.model,
        "max_tokens": request.max_tokens or DEFAULT_MAX_TOKENS,
        "messages": _turns(request.messages, target),
    } | without_none(system=system or None, tools=tools or None, tool_choice=tool_choice)


# -- reply --------------------------------------------------------------------


def _arguments(value: object) -> dict[str, Any]:
    """A tool_use input; one that is not an object (a proxy's string, say) is kept whole."""
    if isinstance(value, dict):
        return value
    return unparsed(value if isinstance(value, str) else json.dumps(value))


def _answer_text(value: object) -> str:
    """The answer tool's input as the reply's JSON text."""
    return value if isinstance(value, str) else json.dumps(value)


def read_reply(message: Message, target: Target) -> ChatResponse:
    """The normalised reply; raises the SDK's attribute errors on a wrong-shaped body.

    A call of the answer tool becomes the reply's text (see the module doc).
    Input tokens include cache reads and writes, which Anthropic counts apart,
    so totals compare with OpenAI's ``prompt_tokens`` (which includes them).
    """
    usage = message.usage
    answer_tool = _answer_tool(target)
    uses = [block for block in message.content if block.type == "tool_use"]
    answers = [block.input for block in uses if block.name == answer_tool]
    calls = [
        ToolCall(id=block.id, name=block.name, arguments=_arguments(block.input))
        for block in uses
        if block.name != answer_tool
    ]
    text = "".join(block.text for block in message.content if block.type == "text")
    return ChatResponse(
        text=_answer_text(answers[-1]) if answers and not calls else text,
        tool_calls=calls,
        usage=Usage(
            calls=1,
            input_tokens=usage.input_tokens
            + (usage.cache_creation_input_tokens or 0)
            + (usage.cache_read_input_tokens or 0),
            output_tokens=usage.output_tokens,
        ),
        provider=target.spec.name,
        model=target.model,
        finish_reason=message.stop_reason,
    )


VENDOR = Vendor(
    sdk=anthropic.AsyncAnthropic,
    create=lambda client, params: client.messages.create(**params),
    params=request_params,
    read=read_reply,
    errors=SdkErrors.of(anthropic),
)
