"""Tool calls for models that write them as text.

Small local models answer a tool call as JSON in the reply's text, not in
``tool_calls``: bare, in a ```json fence, or inside ``<tool_call>`` tags, even when
the server was given the tools and ``tool_choice: required``; many GGUF chat
templates have no tools at all. For a provider whose row says so
(``ToolCalling.TEXT``) the tools are described in a system message before the
model's first turn, earlier calls and their results are written back as plain turns,
and calls are recovered from the reply's text. A recovered call must name an offered
tool; anything else is the model's final text.

Where the server enforces JSON schemas, a text-tools turn is also constrained to
"one call of an offered tool, with arguments of its schema, or the answer"
(``envelope_schema``): decoding then cannot produce a malformed call, which is
what makes a 135M-parameter model's tool loop work at all.
"""

from __future__ import annotations

import hashlib
import json
import re
from collections.abc import Iterator, Sequence
from typing import Any

from shared.llm.contracts import UNPARSED_ARGUMENTS, ChatMessage, ToolCall, ToolSpec

ANSWER_FIELD = "answer"
"""The field a constrained turn's free-text answer comes in (no reply schema asked)."""

_TAGGED = re.compile(r"<tool_call>\s*(.*?)\s*(?:</tool_call>|$)", re.DOTALL)
_OPENING = re.compile(r"[\[{]")
_FENCED = re.compile(r"```[a-zA-Z]*\s*\n?(.*?)```", re.DOTALL)
_NAME_KEYS = ("name", "tool", "tool_name", "function")
_ARGUMENT_KEYS = ("arguments", "parameters", "args", "input")


def tools_instruction(tools: Sequence[ToolSpec]) -> str:
    """The system message that offers ``tools`` to a model that takes them as text."""
    listed = "\n".join(
        f"- {tool.name}: {tool.description}\n  arguments: {json.dumps(_untitled(tool.parameters))}"
        for tool in tools
    )
    return (
        "You can call these tools:\n"
        f"{listed}\n"
        "To call a tool, reply with only this JSON and nothing else: "
        '{"name": "<tool name>", "arguments": {<arguments>}}. '
        "You will get its result in the next message. When you have the data you need, "
        "give your answer instead of a tool call."
    )


def with_tools_offered(
    turns: Sequence[ChatMessage], tools: Sequence[ToolSpec]
) -> list[ChatMessage]:
    """``turns`` with the system message offering ``tools`` just before the model's first
    turn: last in the first round, and in the same place in every round after it.

    Each round's prompt then begins with the whole of the previous round's, so a server that
    keeps the last prompt's state reuses it instead of reading it again: llama.cpp's slot,
    vLLM's prefix cache, a vendor's cached input. With the offer last, a round shared only
    its opening turns with the one before (a fifth of a QuantAgent indicator round's prompt
    on SmolLM2), and a CPU model read the other 1,000 tokens again at about 80 a second."""
    offer = ChatMessage(role="system", content=tools_instruction(tools))
    first_reply = next(
        (index for index, turn in enumerate(turns) if turn.role == "assistant"), len(turns)
    )
    return [*turns[:first_reply], offer, *turns[first_reply:]]


def _untitled(schema: Any) -> Any:
    """A schema without pydantic's ``title`` keywords: they repeat the property names, and a
    small model's context has no room for that. (A property named ``title`` has a schema,
    not a string, for its value, so it stays.)"""
    if isinstance(schema, list):
        return [_untitled(item) for item in schema]
    if not isinstance(schema, dict):
        return schema
    return {
        key: _untitled(value)
        for key, value in schema.items()
        if not (key == "title" and isinstance(value, str))
    }


def call_text(call: ToolCall) -> str:
    """An earlier call as the model wrote it, for the conversation sent back."""
    return json.dumps({"name": call.name, "arguments": call.arguments})


def as_text_turns(messages: Sequence[ChatMessage]) -> list[ChatMessage]:
    """The conversation with no tool roles: calls written into the assistant's text, results
    as one user turn per round (templates without tools reject or drop ``tool`` turns)."""
    turns: list[ChatMessage] = []
    for message in messages:
        if message.role == "assistant" and message.tool_calls:
            text = "\n".join([message.content, *map(call_text, message.tool_calls)]).strip()
            turns.append(ChatMessage(role="assistant", content=text))
        elif message.role == "tool":
            result = f"Result of {message.name or 'the tool'}:\n{message.content}"
            if turns and turns[-1].role == "user" and turns[-1].content.startswith("Result of "):
                turns[-1] = ChatMessage(role="user", content=f"{turns[-1].content}\n\n{result}")
            else:
                turns.append(ChatMessage(role="user", content=result))
        else:
            turns.append(message)
    return turns


def envelope_schema(
    tools: Sequence[ToolSpec], answer_schema: dict[str, Any] | None
) -> dict[str, Any]:
    """One call of an offered tool with arguments of its schema, or the answer: the reply's
    schema when one is asked for, else an object with the answer's text.

    Each branch's ``$defs`` move to the envelope's root, where its refs point:
    a ``$ref`` resolves from the document's root, not from the branch.
    """
    answer = answer_schema or {
        "type": "object",
        "properties": {ANSWER_FIELD: {"type": "string"}},
        "required": [ANSWER_FIELD],
        "additionalProperties": False,
    }
    calls = [
        {
            "type": "object",
            "properties": {"name": {"const": tool.name}, "arguments": tool.parameters},
            "required": ["name", "arguments"],
            "additionalProperties": False,
        }
        for tool in tools
    ]
    definitions: dict[str, Any] = {}
    branches = [_hoisted(branch, definitions) for branch in (*calls, answer)]
    envelope: dict[str, Any] = {"anyOf": branches}
    return envelope | ({"$defs": definitions} if definitions else {})


def _hoisted(branch: dict[str, Any], definitions: dict[str, Any]) -> dict[str, Any]:
    """``branch`` without the ``$defs`` it held anywhere, which join ``definitions``; a name
    already taken by another definition is renamed, with this branch's refs."""
    found: dict[str, Any] = {}

    def strip(node: Any) -> Any:
        if isinstance(node, list):
            return [strip(item) for item in node]
        if not isinstance(node, dict):
            return node
        found.update(node.get("$defs", {}))
        return {key: strip(value) for key, value in node.items() if key != "$defs"}

    stripped = strip(branch)
    names = {}
    for name, definition in found.items():
        unique = name
        while unique in definitions and definitions[unique] != definition:
            unique = f"{unique}_"
        names[name] = unique
    renames = {f"#/$defs/{old}": f"#/$defs/{new}" for old, new in names.items() if old != new}
    for name, definition in found.items():
        definitions[names[name]] = _renamed(definition, renames)
    return _renamed(stripped, renames)


def _renamed(node: Any, renames: dict[str, str]) -> Any:
    if isinstance(node, list):
        return [_renamed(item, renames) for item in node]
    if not isinstance(node, dict):
        return node
    return {
        key: renames.get(value, value) if key == "$ref" else _renamed(value, renames)
        for key, value in node.items()
    }


def unwrapped_answer(text: str) -> str:
    """The answer's text when a constrained turn wrapped it (``{"answer": ...}``), else ``text``."""
    try:
        value = json.loads(text)
    except ValueError:
        return text
    if isinstance(value, dict) and set(value) == {ANSWER_FIELD}:
        answer = value[ANSWER_FIELD]
        return answer if isinstance(answer, str) else text
    return text


def recover_tool_calls(text: str, tools: Sequence[ToolSpec]) -> tuple[list[ToolCall], str]:
    """The calls of offered tools written in ``text``, and the text without them.

    Looks in ``<tool_call>`` tags, then fenced blocks, then the whole text, then any
    JSON object or array in the prose; the first place that holds calls wins. A JSON value
    is a call when it names an offered tool (``name``, ``tool``, ``function``, or the
    OpenAI ``{"function": {...}}`` shape); a list of such values is several calls.
    """
    offered = {tool.name for tool in tools}
    if not offered or not text.strip():
        return [], text
    for spans in (_tagged(text), _fenced(text), _whole(text), _embedded(text)):
        calls: list[ToolCall] = []
        used: list[tuple[int, int]] = []
        for start, end, value in spans:
            found = [c for c in map(_as_call, _items(value)) if c and c[0] in offered]
            if found:
                calls += [_tool_call(len(calls) + i, *c) for i, c in enumerate(found)]
                used.append((start, end))
        if calls:
            return calls, _without(text, used).strip()
    return [], text


Span = tuple[int, int, Any]
"""Where a JSON value sits in the text, and the value."""


def _decoded(raw: str) -> Any:
    try:
        return json.loads(raw)
    except ValueError:
        return None


def _tagged(text: str) -> Iterator[Span]:
    for match in _TAGGED.finditer(text):
        yield match.start(), match.end(), _decoded(match.group(1))


def _fenced(text: str) -> Iterator[Span]:
    for match in _FENCED.finditer(text):
        yield match.start(), match.end(), _decoded(match.group(1))


def _whole(text: str) -> Iterator[Span]:
    yield 0, len(text), _decoded(text.strip())


def _embedded(text: str) -> Iterator[Span]:
    """Each JSON object or array that starts at a ``{`` or ``[`` of the prose and decodes."""
    decoder = json.JSONDecoder()
    end_of_last = 0
    for opening in _OPENING.finditer(text):
        if opening.start() < end_of_last:
            continue
        try:
            value, end = decoder.raw_decode(text, opening.start())
        except ValueError:
            continue
        end_of_last = end
        yield opening.start(), end, value


def _items(value: Any) -> list[Any]:
    return value if isinstance(value, list) else [value]


def _as_call(value: Any) -> tuple[str, Any] | None:
    """(tool name, arguments) when ``value`` has the shape of a call."""
    if not isinstance(value, dict):
        return None
    function = value.get("function")
    if isinstance(function, dict):
        return _as_call(function)
    name = next((value[key] for key in _NAME_KEYS if isinstance(value.get(key), str)), None)
    if name is None:
        return None
    arguments: Any = next((value[key] for key in _ARGUMENT_KEYS if key in value), {})
    return name, arguments


def _tool_call(index: int, name: str, arguments: Any) -> ToolCall:
    """A call with an id stable across retries of the same reply (the reply cache and
    replays see the same conversation)."""
    if isinstance(arguments, str):
        decoded = _decoded(arguments) if arguments.strip() else {}
        arguments = decoded if isinstance(decoded, dict) else {UNPARSED_ARGUMENTS: arguments}
    elif not isinstance(arguments, dict):
        arguments = {UNPARSED_ARGUMENTS: json.dumps(arguments)}
    digest = hashlib.sha256(f"{name}{json.dumps(arguments, sort_keys=True)}".encode())
    return ToolCall(id=f"text-{index}-{digest.hexdigest()[:8]}", name=name, arguments=arguments)


def _without(text: str, spans: list[tuple[int, int]]) -> str:
    kept, last = [], 0
    for start, end in sorted(spans):
        kept.append(text[last:start])
        last = end
    kept.append(text[last:])
    return "".join(kept)
