"""The vendor clients' structured output, through the official SDKs, against a real local HTTP
server: each row's own mechanism for a response schema, strict and non-strict schemas, names
made wire-safe, refusals, and Anthropic's answer tool beside the data tools."""

from __future__ import annotations

import json
from enum import StrEnum
from typing import Any

import pytest
from pydantic import BaseModel, Field

from shared.errors import InvalidInput
from shared.llm.clients import complete
from shared.llm.contracts import ChatMessage, ChatRequest, ToolCall
from shared.llm.providers import PROVIDERS, Capabilities, StructuredOutput
from tests.fakes.llm_server import FakeLlmServer, FakeToolCall, Scripted
from tests.test_llm_clients import PRICE_TOOL, USER_TURN, _call


class Signal(BaseModel):
    """A small schema with what strict mode must rewrite: optional fields, constraints, a ref."""

    action: Action = Field(description="what to do")
    size: float = Field(ge=0, le=1)
    note: str | None = Field(None, min_length=3)
    tags: list[str] = Field(default_factory=list, min_length=1)


class Action(StrEnum):
    BUY = "buy"
    SELL = "sell"


Signal.model_rebuild()
SIGNAL = {"action": "buy", "size": 0.25, "note": None, "tags": ["momentum"]}
# Signal's schema as strict mode takes it, written out: every property required (note stays
# nullable, tags must be written), no minLength (minItems stays), the described $ref inlined,
# objects closed.
STRICT_SIGNAL = {
    "$defs": {"Action": {"enum": ["buy", "sell"], "title": "Action", "type": "string"}},
    "properties": {
        "action": {
            "description": "what to do",
            "enum": ["buy", "sell"],
            "title": "Action",
            "type": "string",
        },
        "size": {"maximum": 1, "minimum": 0, "title": "Size", "type": "number"},
        "note": {"anyOf": [{"type": "string"}, {"type": "null"}], "title": "Note"},
        "tags": {"items": {"type": "string"}, "minItems": 1, "title": "Tags", "type": "array"},
    },
    "required": ["action", "size", "note", "tags"],
    "title": "Signal",
    "type": "object",
    "description": Signal.__doc__,
    "additionalProperties": False,
}
ANSWER_TOOL = {
    "name": "Signal",
    "description": "Give your final answer: the complete Signal object as this tool's input.",
    "input_schema": Signal.model_json_schema(),
}
JSON_TURN = ChatMessage(role="system", content="Answer with one JSON object.")
# A row of each mechanism: openai and ollama json_schema, anthropic tool, qwen json_object.
STRUCTURED_ROWS = ["openai", "anthropic", "qwen", "ollama"]


def _structured_fields(**fields: Any) -> dict[str, Any]:
    return {"json_schema": Signal.model_json_schema(), "response_schema": "Signal", **fields}


@pytest.mark.parametrize("row", STRUCTURED_ROWS)
async def test_structured_request_uses_the_rows_native_mechanism(fake_llm: FakeLlmServer, row: str):
    fake_llm.reply_json(SIGNAL)

    response = await _call(fake_llm, row, [JSON_TURN, USER_TURN], **_structured_fields())

    assert json.loads(response.text) == SIGNAL
    assert response.tool_calls == []
    sent = fake_llm.last_request.body
    strict = {
        "type": "json_schema",
        "json_schema": {"name": "Signal", "schema": STRICT_SIGNAL, "strict": True},
    }
    expected = {
        "openai": {"response_format": strict},
        "ollama": {"response_format": strict},
        "qwen": {"response_format": {"type": "json_object"}},
        "anthropic": {
            "tools": [ANSWER_TOOL],
            "tool_choice": {"type": "tool", "name": "Signal"},
        },
    }[row]
    assert {key: sent.get(key) for key in expected} == expected
    assert ("response_format" in sent) is (row != "anthropic")


async def test_a_prompt_only_row_sends_no_response_format(fake_llm: FakeLlmServer):
    row = PROVIDERS["vllm"].model_copy(
        update={
            "name": "vllm",
            "capabilities": Capabilities(structured_output=StructuredOutput.PROMPT),
        }
    )
    fake_llm.reply_json(SIGNAL)

    response = await complete(
        ChatRequest(agent="a", provider="vllm", messages=[USER_TURN], response_schema="Signal"),
        spec=row,
        model="local",
        api_key=None,
        base_url=fake_llm.base_url_openai,
        timeout=5.0,
        images={},
        json_schema=Signal.model_json_schema(),
    )

    assert json.loads(response.text) == SIGNAL
    assert "response_format" not in fake_llm.last_request.body
    assert "tools" not in fake_llm.last_request.body


def test_a_row_asking_for_a_mechanism_its_wire_cannot_carry_is_refused():
    with pytest.raises(ValueError, match="'openai': structured_output 'tool' is not spoken"):
        PROVIDERS["openai"].model_validate(
            PROVIDERS["openai"].model_dump() | {"capabilities": {"structured_output": "tool"}}
        )


class Scores(BaseModel):
    """A free-form map has no strict form."""

    by_ticker: dict[str, float]


async def test_a_schema_without_a_strict_form_goes_out_with_strict_false(fake_llm: FakeLlmServer):
    fake_llm.reply_json({"by_ticker": {"AAPL": 0.4}})

    await _call(
        fake_llm, "openai", json_schema=Scores.model_json_schema(), response_schema="Scores"
    )

    assert fake_llm.last_request.body["response_format"] == {
        "type": "json_schema",
        "json_schema": {"name": "Scores", "schema": Scores.model_json_schema(), "strict": False},
    }


async def test_schema_names_are_made_wire_safe(fake_llm: FakeLlmServer):
    fake_llm.reply_json(SIGNAL)

    await _call(fake_llm, "openai", **_structured_fields(response_schema="trade.signal v2"))

    assert fake_llm.last_request.body["response_format"]["json_schema"]["name"] == "trade_signal_v2"


async def test_a_strict_mode_refusal_is_the_reply_text(fake_llm: FakeLlmServer):
    refusal = "I can't help with that request."
    completion = {
        "id": "chatcmpl-1",
        "object": "chat.completion",
        "model": "gpt-4.1-mini",
        "choices": [
            {
                "index": 0,
                "finish_reason": "stop",
                "message": {"role": "assistant", "content": None, "refusal": refusal},
            }
        ],
    }
    fake_llm.script(Scripted(raw=json.dumps(completion).encode()))

    response = await _call(fake_llm, "openai", **_structured_fields())

    assert response.text == refusal


async def test_anthropic_tool_loop_offers_the_answer_tool_beside_the_data_tools(
    fake_llm: FakeLlmServer,
):
    fake_llm.reply_tool_call("get_price", {"symbol": "AAPL"}, call_id="c1")
    fake_llm.reply_json(SIGNAL)

    asked = await _call(fake_llm, "anthropic", tools=[PRICE_TOOL], **_structured_fields())
    asked_body = fake_llm.last_request.body
    answered = await _call(fake_llm, "anthropic", tools=[PRICE_TOOL], **_structured_fields())

    assert asked.tool_calls == [ToolCall(id="c1", name="get_price", arguments={"symbol": "AAPL"})]
    assert asked_body["tool_choice"] == {"type": "any"}
    assert [tool["name"] for tool in asked_body["tools"]] == ["get_price", "Signal"]
    assert asked_body["tools"][1] == ANSWER_TOOL
    assert answered.tool_calls == []
    assert json.loads(answered.text) == SIGNAL
    assert answered.finish_reason == "tool_use"


async def test_anthropic_data_calls_beside_an_answer_win(fake_llm: FakeLlmServer):
    fake_llm.script(
        Scripted(
            tool_calls=(
                FakeToolCall("get_price", {"symbol": "AAPL"}, "c1"),
                FakeToolCall("Signal", SIGNAL, "c2"),
            )
        )
    )

    response = await _call(fake_llm, "anthropic", tools=[PRICE_TOOL], **_structured_fields())

    assert [call.name for call in response.tool_calls] == ["get_price"]
    assert response.text == ""


async def test_anthropic_prose_is_impossible_once_the_answer_tool_is_forced(
    fake_llm: FakeLlmServer,
):
    prose = "AAPL looks strong; I would buy a small position."
    fake_llm.reply_text(prose)
    fake_llm.reply_text(prose)

    unforced = await _call(fake_llm, "anthropic")
    forced = await _call(fake_llm, "anthropic", **_structured_fields())

    assert unforced.text == prose
    value = Signal.model_validate_json(forced.text)
    assert value.action is Action.BUY and value.tags == [prose]


async def test_a_data_tool_named_like_the_schema_is_refused_before_any_call(
    fake_llm: FakeLlmServer,
):
    clash = PRICE_TOOL.model_copy(update={"name": "Signal"})

    with pytest.raises(InvalidInput, match="named 'Signal', like the answer tool"):
        await _call(fake_llm, "anthropic", tools=[clash], **_structured_fields())

    assert fake_llm.requests == []
