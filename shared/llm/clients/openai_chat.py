"""The chat-completions client, for OpenAI itself and every OpenAI-compatible server.

One module serves both client kinds because they share the wire format. Where
providers differ is data in their rows: the max-tokens parameter
(``max_tokens_param``: OpenAI's reasoning models refuse ``max_tokens``), and how a
reply that fits a schema is asked for, ``structured_output``: ``json_schema`` (strict
when the schema has a strict form, see ``shared.llm.strict_schema``),
``json_object``, or nothing on the wire.

Malformed tool-call arguments are the model's mistake, not the vendor's: the
call is returned with its arguments kept whole (``ToolCall.unparsed_arguments``),
so the tool answers with an error the model reads and repairs on its next turn
instead of the whole reply being thrown away.
"""

from __future__ import annotations

import json
from collections.abc import Callable
from typing import Any

import openai

# Loaded with the worker, not on its first call: the SDK imports its chat resources lazily,
# which made a fresh worker's first calls wait about 0.25 s more here.
import openai.resources.chat.chat  # noqa: F401
from openai.types.chat import ChatCompletion, ChatCompletionMessageFunctionToolCall

from shared.llm import text_tools
from shared.llm.clients.common import (
    SdkErrors,
    Target,
    Vendor,
    openai_function,
    unparsed,
    without_none,
)
from shared.llm.contracts import ChatMessage, ChatRequest, ChatResponse, ToolCall, Usage
from shared.llm.grammar_schema import capped_for_grammar
from shared.llm.providers import SCHEMA_ON_THE_WIRE, StructuredOutput
from shared.llm.strict_schema import NotStrict, strict_json_schema


def _json_schema_format(schema: dict[str, Any], target: Target) -> dict[str, Any]:
    """Strict when the schema has a strict form; else the schema as it is, as a hint."""
    try:
        wire_schema, strict = strict_json_schema(schema), True
    except NotStrict:
        wire_schema, strict = schema, False
    return {
        "type": "json_schema",
        "json_schema": {"name": target.wire_schema_name, "schema": wire_schema, "strict": strict},
    }


def _grammar_format(schema: dict[str, Any], target: Target) -> dict[str, Any]:
    """The whole schema, capped, for a server that compiles it to a grammar."""
    return {
        "type": "json_schema",
        "json_schema": {
            "name": target.wire_schema_name,
            "schema": capped_for_grammar(schema),
            "strict": False,
        },
    }


_RESPONSE_FORMAT: dict[
    StructuredOutput, Callable[[dict[str, Any], Target], dict[str, Any] | None]
] = {
    StructuredOutput.JSON_SCHEMA: _json_schema_format,
    StructuredOutput.GRAMMAR: _grammar_format,
    StructuredOutput.JSON_OBJECT: lambda schema, target: {"type": "json_object"},
    StructuredOutput.PROMPT: lambda schema, target: None,
}


def _constrains_tool_turns(target: Target) -> bool:
    """Whether a text-tools turn is held to "a call or the answer" by the server's decoder."""
    mechanism = target.spec.capabilities.structured_output
    return target.tools_as_text and mechanism in SCHEMA_ON_THE_WIRE


def _response_format(target: Target) -> dict[str, Any] | None:
    """How this provider row asks for a reply that fits the schema, if one is wanted."""
    schema = target.json_schema
    if _constrains_tool_turns(target):
        schema = text_tools.envelope_schema(target.tools, target.json_schema)
    if schema is None:
        return None
    return _RESPONSE_FORMAT[target.spec.capabilities.structured_output](schema, target)


# -- request ------------------------------------------------------------------


def _plain(message: ChatMessage, target: Target) -> dict[str, Any]:
    return {"role": message.role, "content": message.content}


def _user(message: ChatMessage, target: Target) -> dict[str, Any]:
    if not message.images:
        return _plain(message, target)
    parts: list[dict[str, Any]] = [{"type": "text", "text": message.content}]
    parts += [
        {"type": "image_url", "image_url": {"url": target.image(ref).data_url}}
        for ref in message.images
    ]
    return {"role": "user", "content": parts}


def _assistant(message: ChatMessage, target: Target) -> dict[str, Any]:
    calls = [
        {
            "id": call.id,
            "type": "function",
            "function": {"name": call.name, "arguments": json.dumps(call.arguments)},
        }
        for call in message.tool_calls
    ]
    return {"role": "assistant", "content": message.content} | without_none(
        tool_calls=calls or None
    )


def _tool(message: ChatMessage, target: Target) -> dict[str, Any]:
    return {"role": "tool", "tool_call_id": message.tool_call_id, "content": message.content}


_MESSAGE: dict[str, Callable[[ChatMessage, Target], dict[str, Any]]] = {
    "system": _plain,
    "user": _user,
    "assistant": _assistant,
    "tool": _tool,
}


def _conversation(request: ChatRequest, target: Target) -> list[ChatMessage]:
    """The messages as this row takes them: with tools as text, no tool roles and the tools
    described in a system message."""
    if not target.tools_as_text:
        return request.messages
    return text_tools.with_tools_offered(text_tools.as_text_turns(request.messages), request.tools)


def request_params(request: ChatRequest, target: Target) -> dict[str, Any]:
    """The keyword arguments of ``chat.completions.create`` for ``request``."""
    native_tools = [] if target.tools_as_text else request.tools
    return {
        "model": target.model,
        "messages": [
            _MESSAGE[message.role](message, target) for message in _conversation(request, target)
        ],
    } | without_none(
        tools=[openai_function(tool) for tool in native_tools] or None,
        temperature=request.temperature
        if request.temperature is not None
        else target.sampling.temperature,
        seed=target.sampling.seed,
        response_format=_response_format(target),
        **{target.spec.capabilities.max_tokens_param: request.max_tokens},
    )


# -- reply --------------------------------------------------------------------


def _arguments(raw: str | None) -> dict[str, Any]:
    """Decoded tool arguments; undecodable ones kept whole (see module doc).

    Compatible servers send ``""`` or ``null`` for a call without arguments.
    """
    if raw is None or not raw.strip():
        return {}
    try:
        value = json.loads(raw)
    except ValueError:
        return unparsed(raw)
    return value if isinstance(value, dict) else unparsed(raw)


def _text_and_calls(text: str, calls: list[ToolCall], target: Target) -> tuple[str, list[ToolCall]]:
    """Native calls as sent; else, where the row allows, calls recovered from the text, and
    a constrained turn's answer unwrapped."""
    if calls or not target.recovers_text_calls:
        return text, calls
    recovered, rest = text_tools.recover_tool_calls(text, target.tools)
    if recovered:
        return rest, recovered
    if _constrains_tool_turns(target) and target.json_schema is None:
        return text_tools.unwrapped_answer(text), []
    return text, []


def read_reply(completion: ChatCompletion, target: Target) -> ChatResponse:
    """The normalised reply; raises the SDK's attribute errors on a wrong-shaped body."""
    choice = completion.choices[0]
    usage = completion.usage
    native = [
        ToolCall(id=call.id, name=call.function.name, arguments=_arguments(call.function.arguments))
        for call in choice.message.tool_calls or []
        # by class, not by `type`: compatible servers often omit it, and the SDK
        # still builds a function call from the shape
        if isinstance(call, ChatCompletionMessageFunctionToolCall)
    ]
    # A strict-mode refusal comes instead of content; it is what the model said.
    said = choice.message.content or choice.message.refusal or ""
    text, calls = _text_and_calls(said, native, target)
    return ChatResponse(
        text=text,
        tool_calls=calls,
        usage=Usage(
            calls=1,
            input_tokens=usage.prompt_tokens if usage else 0,
            output_tokens=usage.completion_tokens if usage else 0,
            recovered_tool_calls=len(calls) - len(native),
        ),
        provider=target.spec.name,
        model=target.model,
        finish_reason=choice.finish_reason,
    )


VENDOR = Vendor(
    sdk=openai.AsyncOpenAI,
    create=lambda client, params: client.chat.completions.create(**params),
    params=request_params,
    read=read_reply,
    errors=SdkErrors.of(openai),
)
