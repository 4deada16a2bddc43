"""Tool calls written as text: recovered from the shapes small models write, and the wire
of a tools-as-text row (llamacpp) and of a native-or-text row (ollama), through the SDK."""

from __future__ import annotations

import json
from collections.abc import Iterator
from typing import Any

import pytest

from shared.llm.clients import complete
from shared.llm.contracts import ChatMessage, ChatRequest, ChatResponse, ToolCall, ToolSpec
from shared.llm.grammar_schema import capped_for_grammar
from shared.llm.providers import PROVIDERS
from shared.llm.text_tools import (
    as_text_turns,
    envelope_schema,
    recover_tool_calls,
    tools_instruction,
    unwrapped_answer,
)
from tests.fakes.llm_server import FakeLlmServer

RSI = ToolSpec(
    name="compute_rsi",
    description="RSI of the window's closes.",
    parameters={
        "type": "object",
        "properties": {"timeperiod": {"type": "integer"}},
        "required": ["timeperiod"],
    },
)
MACD = ToolSpec(
    name="compute_macd",
    description="MACD line, signal and histogram.",
    parameters={"type": "object", "properties": {"fastperiod": {"type": "integer"}}},
)
TOOLS = [RSI, MACD]


def _names_and_arguments(calls: list[ToolCall]) -> list[tuple[str, dict[str, Any]]]:
    return [(call.name, call.arguments) for call in calls]


@pytest.mark.parametrize(
    "text",
    [
        '{"name": "compute_rsi", "arguments": {"timeperiod": 14}}',
        '```json\n{"name": "compute_rsi", "arguments": {"timeperiod": 14}}\n```',
        '<tool_call>\n{"name": "compute_rsi", "arguments": {"timeperiod": 14}}\n</tool_call>',
        # Qwen-style tags left unclosed at the end of the reply
        '<tool_call>{"name": "compute_rsi", "arguments": {"timeperiod": 14}}',
        '{"type": "function", "function": {"name": "compute_rsi", "arguments": "{\\"timeperiod\\": 14}"}}',
        '{"tool": "compute_rsi", "parameters": {"timeperiod": 14}}',
    ],
    ids=["bare", "fenced", "tagged", "unclosed-tag", "openai-shape", "tool-parameters"],
)
def test_a_call_is_recovered_from_each_shape_small_models_write(text: str) -> None:
    calls, rest = recover_tool_calls(text, TOOLS)

    assert _names_and_arguments(calls) == [("compute_rsi", {"timeperiod": 14})]
    assert rest == ""


def test_prose_around_a_call_stays_the_text_and_several_calls_are_kept_in_order() -> None:
    text = (
        "I will compute both.\n"
        '[{"name": "compute_rsi", "arguments": {"timeperiod": 14}}, '
        '{"name": "compute_macd", "arguments": {}}]\n'
        "Then I will decide."
    )

    calls, rest = recover_tool_calls(text, TOOLS)

    assert _names_and_arguments(calls) == [
        ("compute_rsi", {"timeperiod": 14}),
        ("compute_macd", {}),
    ]
    assert rest == "I will compute both.\n\nThen I will decide."
    assert len({call.id for call in calls}) == 2


def test_a_call_of_a_tool_not_offered_or_a_plain_json_answer_is_the_final_text() -> None:
    for text in (
        '{"name": "get_news", "arguments": {"symbol": "GOOG"}}',
        '{"signal": "LONG", "justification": "RSI 28 is oversold"}',
        "RSI is 28: oversold. MACD crossed up. Lean long.",
        "",
    ):
        assert recover_tool_calls(text, TOOLS) == ([], text)


def test_arguments_that_are_not_an_object_are_kept_whole_for_the_tool_to_quote() -> None:
    calls, _ = recover_tool_calls('{"name": "compute_rsi", "arguments": "period=14"}', TOOLS)

    assert calls[0].unparsed_arguments == "period=14"


def test_the_same_reply_recovers_the_same_call_ids() -> None:
    text = '{"name": "compute_rsi", "arguments": {"timeperiod": 14}}'

    assert recover_tool_calls(text, TOOLS)[0] == recover_tool_calls(text, TOOLS)[0]


def test_tool_turns_become_plain_turns_and_one_rounds_results_one_user_turn() -> None:
    conversation = [
        ChatMessage(role="user", content="Analyse GOOG."),
        ChatMessage(
            role="assistant",
            tool_calls=[
                ToolCall(id="a", name="compute_rsi", arguments={"timeperiod": 14}),
                ToolCall(id="b", name="compute_macd", arguments={}),
            ],
        ),
        ChatMessage(role="tool", tool_call_id="a", name="compute_rsi", content="RSI 28.1"),
        ChatMessage(role="tool", tool_call_id="b", name="compute_macd", content="hist +0.4"),
    ]

    turns = as_text_turns(conversation)

    assert [turn.role for turn in turns] == ["user", "assistant", "user"]
    assert turns[1].content.splitlines() == [
        '{"name": "compute_rsi", "arguments": {"timeperiod": 14}}',
        '{"name": "compute_macd", "arguments": {}}',
    ]
    assert (
        turns[2].content == "Result of compute_rsi:\nRSI 28.1\n\nResult of compute_macd:\nhist +0.4"
    )


def test_the_envelope_allows_one_call_per_offered_tool_or_the_answer() -> None:
    answer = {"type": "object", "properties": {"signal": {"type": "string"}}}

    with_schema = envelope_schema(TOOLS, answer)
    free = envelope_schema(TOOLS, None)

    branches = with_schema["anyOf"]
    assert [b["properties"]["name"] for b in branches[:2]] == [
        {"const": "compute_rsi"},
        {"const": "compute_macd"},
    ]
    assert branches[0]["properties"]["arguments"] == RSI.parameters
    assert branches[2] == answer
    assert free["anyOf"][2]["required"] == ["answer"]
    assert unwrapped_answer('{"answer": "Lean long."}') == "Lean long."
    assert unwrapped_answer('{"answer": "x", "more": 1}') == '{"answer": "x", "more": 1}'
    assert unwrapped_answer("plain") == "plain"


def test_the_instruction_names_every_tool_with_its_arguments_schema_untitled() -> None:
    titled = ToolSpec(
        name="search_news",
        description="News about a company.",
        parameters={
            "type": "object",
            "title": "SearchNewsArguments",
            "properties": {"title": {"type": "string", "title": "Title"}},
        },
    )

    text = tools_instruction([*TOOLS, titled])

    for tool in TOOLS:
        assert f"- {tool.name}: {tool.description}" in text
        assert json.dumps(tool.parameters) in text
    assert '{"type": "object", "properties": {"title": {"type": "string"}}}' in text


# -- on the wire ------------------------------------------------------------------------


@pytest.fixture
def server() -> Iterator[FakeLlmServer]:
    with FakeLlmServer() as fake:
        yield fake


async def _call(
    server: FakeLlmServer,
    provider: str,
    messages: list[ChatMessage],
    json_schema: dict[str, Any] | None = None,
) -> ChatResponse:
    spec = PROVIDERS[provider]
    request = ChatRequest(
        agent="indicator_agent",
        provider=provider,
        messages=messages,
        tools=TOOLS,
        response_schema="QuantDecision" if json_schema else None,
    )
    return await complete(
        request,
        spec=spec,
        model=spec.quick_model,
        api_key="sk-test",
        base_url=server.base_url_openai,
        timeout=5.0,
        images={},
        json_schema=json_schema,
    )


async def test_a_tools_as_text_row_puts_tools_in_the_prompt_and_holds_the_reply_to_the_envelope(
    server: FakeLlmServer,
) -> None:
    server.reply_text('{"name": "compute_rsi", "arguments": {"timeperiod": 14}}')
    conversation = [
        ChatMessage(role="system", content="You are the indicator analyst."),
        ChatMessage(role="user", content="Analyse GOOG."),
        ChatMessage(
            role="assistant",
            tool_calls=[ToolCall(id="a", name="compute_macd", arguments={})],
        ),
        ChatMessage(role="tool", tool_call_id="a", name="compute_macd", content="hist +0.4"),
    ]

    response = await _call(server, "llamacpp", conversation)

    body = server.last_request.body
    assert "tools" not in body
    assert [m["role"] for m in body["messages"]] == [
        "system",
        "user",
        "system",
        "assistant",
        "user",
    ]
    assert body["messages"][2]["content"] == tools_instruction(TOOLS)
    assert body["messages"][4]["content"] == "Result of compute_macd:\nhist +0.4"
    wire_schema = body["response_format"]["json_schema"]["schema"]
    assert wire_schema == capped_for_grammar(envelope_schema(TOOLS, None))
    assert _names_and_arguments(response.tool_calls) == [("compute_rsi", {"timeperiod": 14})]
    assert response.usage.recovered_tool_calls == 1


async def test_each_tools_as_text_round_begins_with_the_whole_prompt_of_the_round_before(
    server: FakeLlmServer,
) -> None:
    # What a server's prompt cache needs to reuse a round's prompt instead of reading it again.
    opening = [
        ChatMessage(role="system", content="You are the indicator analyst."),
        ChatMessage(role="user", content="Analyse GOOG."),
    ]
    rounds = [
        opening,
        [
            *opening,
            ChatMessage(
                role="assistant",
                tool_calls=[ToolCall(id="a", name="compute_macd", arguments={})],
            ),
            ChatMessage(role="tool", tool_call_id="a", name="compute_macd", content="hist +0.4"),
        ],
    ]
    prompts = []
    for conversation in rounds:
        server.reply_text('{"name": "compute_rsi", "arguments": {"timeperiod": 14}}')
        await _call(server, "llamacpp", conversation)
        prompts.append(server.last_request.body["messages"])

    first, second = prompts
    assert first[-1]["content"] == tools_instruction(TOOLS)
    assert second[: len(first)] == first and len(second) == len(first) + 2


async def test_a_tools_as_text_rows_wrapped_answer_is_unwrapped(server: FakeLlmServer) -> None:
    server.reply_text('{"answer": "RSI 28: oversold. Lean long."}')

    response = await _call(server, "llamacpp", [ChatMessage(role="user", content="Analyse.")])

    assert response.text == "RSI 28: oversold. Lean long."
    assert response.tool_calls == []
    assert response.usage.recovered_tool_calls == 0


async def test_a_tools_as_text_row_with_a_reply_schema_keeps_the_structured_answer(
    server: FakeLlmServer,
) -> None:
    answer = {"signal": "LONG", "justification": "oversold"}
    server.reply_json(answer)
    schema = {"type": "object", "properties": {"signal": {"type": "string"}}}

    response = await _call(
        server, "llamacpp", [ChatMessage(role="user", content="Decide.")], schema
    )

    assert json.loads(response.text) == answer
    envelope = server.last_request.body["response_format"]["json_schema"]["schema"]
    assert envelope["anyOf"][-1] == capped_for_grammar(schema)


async def test_a_native_or_text_row_offers_tools_natively_and_recovers_a_fenced_call(
    server: FakeLlmServer,
) -> None:
    server.reply_text(
        'Let me compute it.\n```json\n{"name": "compute_rsi", "arguments": {"timeperiod": 14}}\n```'
    )

    response = await _call(server, "ollama", [ChatMessage(role="user", content="Analyse GOOG.")])

    assert [tool["function"]["name"] for tool in server.last_request.body["tools"]] == [
        "compute_rsi",
        "compute_macd",
    ]
    assert _names_and_arguments(response.tool_calls) == [("compute_rsi", {"timeperiod": 14})]
    assert response.text == "Let me compute it."
    assert response.usage.recovered_tool_calls == 1


async def test_a_native_row_never_reads_calls_from_text(server: FakeLlmServer) -> None:
    text = '{"name": "compute_rsi", "arguments": {"timeperiod": 14}}'
    server.reply_text(text)

    response = await _call(server, "qwen", [ChatMessage(role="user", content="Analyse GOOG.")])

    assert response.tool_calls == []
    assert response.text == text


def _refs(node: Any) -> list[str]:
    if isinstance(node, list):
        return [ref for item in node for ref in _refs(item)]
    if not isinstance(node, dict):
        return []
    own = [node["$ref"]] if "$ref" in node else []
    return own + [ref for value in node.values() for ref in _refs(value)]


def test_the_envelopes_refs_resolve_from_its_root_and_clashing_names_are_kept_apart() -> None:
    from shared.agents.pipeline.schemas import AnalystReport
    from shared.tools.registry import tool_specs

    tools = tool_specs(["get_ohlcv"], fixed=["symbol"])
    answer = AnalystReport.model_json_schema()
    clash = ToolSpec(
        name="pick",
        description="A tool whose own Stance means something else.",
        parameters={
            "type": "object",
            "properties": {"stance": {"$ref": "#/$defs/Stance"}},
            "$defs": {"Stance": {"type": "string", "enum": ["up", "down"]}},
        },
    )

    envelope = envelope_schema([*tools, clash], answer)

    assert all("$defs" not in branch for branch in envelope["anyOf"])
    for ref in _refs(envelope):
        assert ref.removeprefix("#/$defs/") in envelope["$defs"], ref
    # the first to name Stance keeps the name; the answer's own Stance is renamed with its refs
    assert envelope["anyOf"][-2]["properties"]["arguments"]["properties"]["stance"] == {
        "$ref": "#/$defs/Stance"
    }
    assert envelope["$defs"]["Stance"]["enum"] == ["up", "down"]
    assert envelope["$defs"]["Stance_"] == answer["$defs"]["Stance"]
    assert "#/$defs/Stance_" in _refs(envelope["anyOf"][-1]) + _refs(envelope["$defs"])
