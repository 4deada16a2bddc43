"""The Anthropic messages client.

Anthropic's shape differs from chat completions in three ways this module
absorbs: system prompts are a parameter, not messages; tool results are
``tool_result`` blocks inside a *user* turn, and all results answering one
assistant turn must share that user turn (so consecutive turns of the same
role are merged); ``max_tokens`` is required. There is no JSON-output switch:
callers put the schema in the system prompt, and this module returns the text.

``ChatRequest.temperature`` is not sent: ``messages.create`` of the anthropic
SDK 2.x has no sampling parameters and raises TypeError on the keyword.

The caller always passes a timeout, which also switches off the SDK's habit of
refusing non-streaming calls whose ``max_tokens`` it guesses will take too long.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import anthropic
from anthropic.types import Message

from shared.llm.clients.common import SdkErrors, Target, Vendor, without_none
from shared.llm.contracts import ChatMessage, ChatRequest, ChatResponse, ToolCall, ToolSpec, Usage

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


def request_params(request: ChatRequest, target: Target) -> dict[str, Any]:
    """The keyword arguments of ``messages.create`` for ``request``."""
    system = "\n\n".join(m.content for m in request.messages if m.role == "system")
    return {
        "model": target.model,
        "max_tokens": request.max_tokens or DEFAULT_MAX_TOKENS,
        "messages": _turns(request.messages, target),
    } | without_none(
        system=system or None,
        tools=[_tool_spec(tool) for tool in request.tools] or None,
    )


# -- reply --------------------------------------------------------------------


def read_reply(message: Message, target: Target) -> ChatResponse:
    """The normalised reply; raises the SDK's attribute errors on a wrong-shaped body.

    Input tokens include cache reads and writes, which Anthropic counts apart,
    so totals compare with OpenAI's ``prompt_tokens`` (which includes them).
    """
    usage = message.usage
    return ChatResponse(
        text="".join(block.text for block in message.content if block.type == "text"),
        tool_calls=[
            ToolCall(id=block.id, name=block.name, arguments=dict(block.input))
            for block in message.content
            if block.type == "tool_use"
        ],
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
    errors=SdkErrors(
        status=anthropic.APIStatusError,
        timeout=anthropic.APITimeoutError,
        connection=anthropic.APIConnectionError,
    ),
)
