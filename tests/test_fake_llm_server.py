"""The fake vendor refuses and answers structured-output requests the way the vendors do.

Tests of quantdesk's clients are only as good as the fake they run against, so
its vendor behaviour is specified here, over raw HTTP: OpenAI's strict-mode
schema rules (each documented rule refused with OpenAI's 400 body), the "json"
rule of ``json_object``, and Anthropic's ``tool_choice``.
"""

from __future__ import annotations

import json
import urllib.error
import urllib.request
from collections.abc import Iterator
from dataclasses import dataclass
from typing import Any

import pytest

from tests.fakes.llm_server import FakeLlmServer, FakeToolCall, Scripted

CLOSED = {"type": "object", "properties": {"a": {"type": "string"}}, "required": ["a"]}
STRICT_OK = {**CLOSED, "additionalProperties": False}
REPORT = {
    "type": "object",
    "properties": {
        "direction": {"enum": ["up", "down"], "type": "string"},
        "confidence": {"type": "number", "minimum": 0, "maximum": 1},
        "analysis": {"type": "string", "minLength": 1},
    },
    "required": ["direction", "confidence", "analysis"],
}
PRICE = {
    "name": "get_price",
    "description": "Latest close.",
    "input_schema": {"type": "object", "properties": {"symbol": {"type": "string"}}},
}
ANSWER = {"name": "Report", "description": "Answer.", "input_schema": REPORT}
PROSE = "Price bounced off support; I expect it to rise."


@pytest.fixture
def fake() -> Iterator[FakeLlmServer]:
    with FakeLlmServer() as server:
        yield server


@dataclass(frozen=True)
class Answer:
    """An HTTP answer: its status and JSON body."""

    status_code: int
    body: dict[str, Any]

    def json(self) -> dict[str, Any]:
        return self.body


def _post(url: str, body: dict[str, Any], headers: dict[str, str]) -> Answer:
    """POST ``body`` as JSON over plain HTTP, so nothing but the fake shapes the exchange."""
    request = urllib.request.Request(
        url, data=json.dumps(body).encode(), headers={"content-type": "application/json", **headers}
    )
    try:
        with urllib.request.urlopen(request, timeout=5) as response:
            return Answer(response.status, json.loads(response.read()))
    except urllib.error.HTTPError as error:
        return Answer(error.code, json.loads(error.read()))


def _openai(fake: FakeLlmServer, **body: Any) -> Answer:
    messages = [{"role": "user", "content": "Reply in JSON."}]
    return _post(
        f"{fake.base_url_openai}/chat/completions",
        {"model": "gpt-4.1", "messages": messages, **body},
        {"authorization": "Bearer sk-test"},
    )


def _anthropic(fake: FakeLlmServer, **body: Any) -> Answer:
    return _post(
        f"{fake.base_url_anthropic}/v1/messages",
        {
            "model": "claude-sonnet-4-5",
            "max_tokens": 100,
            "messages": [{"role": "user", "content": "How is AAPL?"}],
            **body,
        },
        {"x-api-key": "sk-test"},
    )


def _schema_format(schema: object, *, strict: bool = True, name: str = "Report") -> dict[str, Any]:
    return {
        "type": "json_schema",
        "json_schema": {"name": name, "schema": schema, "strict": strict},
    }


# -- OpenAI ------------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("schema", "says"),
    [
        (
            CLOSED,
            "In context=(), 'additionalProperties' is required to be supplied and to be false",
        ),
        (
            {**STRICT_OK, "required": []},
            "'required' is required to be supplied and to be an array including every key in "
            "properties. Missing 'a'",
        ),
        (
            {**STRICT_OK, "properties": {"a": {"type": "string", "minLength": 1}}},
            "In context=('properties', 'a'), 'minLength' is not permitted",
        ),
        (
            {**STRICT_OK, "properties": {"a": {"type": "string", "default": "x"}}},
            "'default' is not permitted",
        ),
        (
            {
                **STRICT_OK,
                "$defs": {"A": {"type": "string"}},
                "properties": {"a": {"$ref": "#/$defs/A", "description": "an a"}},
            },
            "$ref cannot have keywords ['description']",
        ),
        (
            {**STRICT_OK, "properties": {"a": {"$ref": "#/$defs/Missing"}}},
            "reference '#/$defs/Missing' can't be resolved",
        ),
        (
            {**STRICT_OK, "properties": {"a": {"type": "string", "format": "ticker"}}},
            "'ticker' is not a valid format",
        ),
        (
            {**STRICT_OK, "properties": {"a": {"oneOf": [{"type": "string"}]}}},
            "'oneOf' is not permitted",
        ),
        ({**STRICT_OK, "properties": {"a": {}}}, "schema must have a 'type' key"),
        ({"anyOf": [STRICT_OK]}, "schema must be a JSON Schema of 'type: \"object\"'"),
        (
            {
                **STRICT_OK,
                "properties": {"a": {"type": "object", "additionalProperties": {"type": "number"}}},
            },
            "In context=('properties', 'a'), 'additionalProperties' is required to be supplied",
        ),
    ],
    ids=[
        "open-object",
        "optional-property",
        "minLength",
        "default",
        "ref-with-siblings",
        "dangling-ref",
        "unknown-format",
        "oneOf",
        "untyped",
        "root-anyOf",
        "free-form-map",
    ],
)
def test_openai_refuses_a_strict_schema_that_breaks_a_rule(
    fake: FakeLlmServer, schema: dict[str, Any], says: str
) -> None:
    fake.reply_text("never sent")

    answer = _openai(fake, response_format=_schema_format(schema))

    assert answer.status_code == 400
    error = answer.json()["error"]
    assert error["type"] == "invalid_request_error"
    assert error["param"] == "response_format"
    assert error["message"].startswith("Invalid schema for response_format 'Report': ")
    assert says in error["message"]


def test_openai_refuses_objects_nested_deeper_than_ten(fake: FakeLlmServer) -> None:
    schema: dict[str, Any] = {"type": "string"}
    for _ in range(11):
        schema = {
            "type": "object",
            "properties": {"x": schema},
            "required": ["x"],
            "additionalProperties": False,
        }

    answer = _openai(fake, response_format=_schema_format(schema))

    assert answer.status_code == 400
    assert "nest 11 levels deep" in answer.json()["error"]["message"]


def test_openai_takes_any_schema_when_not_strict(fake: FakeLlmServer) -> None:
    fake.reply_text("prose, since nothing was enforced")

    answer = _openai(fake, response_format=_schema_format(REPORT, strict=False))

    assert answer.status_code == 200
    assert answer.json()["choices"][0]["message"]["content"] == "prose, since nothing was enforced"


def test_openai_refuses_a_bad_schema_name(fake: FakeLlmServer) -> None:
    answer = _openai(fake, response_format=_schema_format(STRICT_OK, name="trade.signal"))

    assert answer.status_code == 400
    assert answer.json()["error"]["param"] == "response_format.json_schema.name"


def test_openai_json_object_needs_the_word_json_in_the_messages(fake: FakeLlmServer) -> None:
    fake.reply_json({"a": "b"})
    messages = [{"role": "user", "content": "How is AAPL?"}]

    refused = _openai(fake, response_format={"type": "json_object"}, messages=messages)
    accepted = _openai(fake, response_format={"type": "json_object"})

    assert refused.status_code == 400
    assert "must contain the word 'json'" in refused.json()["error"]["message"]
    assert accepted.status_code == 200


def test_openai_conforming_reply_is_a_value_of_the_schema(fake: FakeLlmServer) -> None:
    strict = {**REPORT, "additionalProperties": False}
    strict["properties"] = {**REPORT["properties"], "analysis": {"type": "string"}}
    fake.reply_conforming(PROSE)

    answer = _openai(fake, response_format=_schema_format(strict))

    content = json.loads(answer.json()["choices"][0]["message"]["content"])
    assert content == {"direction": "up", "confidence": 0.5, "analysis": PROSE}


# -- Anthropic ---------------------------------------------------------------------------


def test_anthropic_answers_prose_when_no_tool_is_forced(fake: FakeLlmServer) -> None:
    fake.reply_text(PROSE)

    reply = _anthropic(fake, tools=[ANSWER]).json()

    assert reply["content"] == [{"type": "text", "text": PROSE}]
    assert reply["stop_reason"] == "end_turn"


def test_anthropic_forced_tool_turns_prose_into_a_tool_use(fake: FakeLlmServer) -> None:
    fake.reply_text(PROSE)

    reply = _anthropic(fake, tools=[ANSWER], tool_choice={"type": "tool", "name": "Report"}).json()

    [block] = reply["content"]
    assert block["type"] == "tool_use" and block["name"] == "Report"
    assert block["input"] == {"direction": "up", "confidence": 0.5, "analysis": PROSE}
    assert reply["stop_reason"] == "tool_use"


def test_anthropic_forced_tool_carries_scripted_json_as_given(fake: FakeLlmServer) -> None:
    inconsistent = {"direction": "down", "confidence": 7, "analysis": ""}
    fake.reply_json(inconsistent)

    reply = _anthropic(fake, tools=[ANSWER], tool_choice={"type": "tool", "name": "Report"}).json()

    assert reply["content"][0]["input"] == inconsistent


def test_anthropic_any_calls_the_scripted_tool_or_answers_through_the_last(
    fake: FakeLlmServer,
) -> None:
    fake.script(Scripted(tool_calls=(FakeToolCall("get_price", {"symbol": "AAPL"}, "t1"),)))
    fake.reply_json({"direction": "up", "confidence": 0.9, "analysis": "ok"})

    data = _anthropic(fake, tools=[PRICE, ANSWER], tool_choice={"type": "any"}).json()
    answer = _anthropic(fake, tools=[PRICE, ANSWER], tool_choice={"type": "any"}).json()

    assert [(b["type"], b["name"]) for b in data["content"]] == [("tool_use", "get_price")]
    assert [(b["type"], b["name"]) for b in answer["content"]] == [("tool_use", "Report")]
    assert answer["content"][0]["input"]["confidence"] == 0.9


@pytest.mark.parametrize(
    ("body", "says"),
    [
        ({"tool_choice": {"type": "any"}}, "tool_choice may only be specified while providing"),
        (
            {"tools": [PRICE], "tool_choice": {"type": "tool", "name": "Report"}},
            "Tool 'Report' not found",
        ),
        ({"tools": [PRICE, PRICE]}, "Tool names must be unique"),
        ({"tools": [{**PRICE, "input_schema": {"type": "string"}}]}, "Input should be 'object'"),
        ({"tools": [{**PRICE, "name": "get price"}]}, "tools.0.name: String should match"),
    ],
    ids=["choice-without-tools", "unknown-forced-tool", "duplicate", "non-object", "bad-name"],
)
def test_anthropic_refuses_bad_tool_requests(
    fake: FakeLlmServer, body: dict[str, Any], says: str
) -> None:
    fake.reply_text("never sent")

    answer = _anthropic(fake, **body)

    assert answer.status_code == 400
    assert answer.json()["type"] == "error"
    assert answer.json()["error"]["type"] == "invalid_request_error"
    assert says in answer.json()["error"]["message"]
