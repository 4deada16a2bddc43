"""The vendor clients, through the official SDKs, against a real local HTTP server.

Each behaviour runs for OpenAI, Anthropic and one OpenAI-compatible provider
(qwen), and asserts both what came back and what went over the wire.
"""

from __future__ import annotations

import asyncio
import base64
import json
from collections.abc import Iterator
from datetime import UTC, datetime, timedelta
from email.utils import format_datetime
from enum import StrEnum
from typing import Any

import pytest
from pydantic import BaseModel, Field

from shared.errors import ConfigError, InvalidInput, ProviderError
from shared.llm.clients import ClientPool, anthropic_chat, complete, openai_chat
from shared.llm.clients.errors import retry_after
from shared.llm.contracts import ChatMessage, ChatRequest, ChatResponse, ToolCall, ToolSpec
from shared.llm.providers import PROVIDERS, Capabilities, ClientKind, LlmRole, StructuredOutput
from shared.storage.objects import ObjectRef
from tests.fakes.llm_server import FakeLlmServer, FakeToolCall, Scripted

KEY = "sk-test-SECRET-0123456789"
PROVIDER_NAMES = ["openai", "anthropic", "qwen"]
PNG = b"\x89PNG\r\n\x1a\n" + b"\x00" * 16
CHART = ObjectRef(bucket="charts", key="run-1/chart.png", content_type="image/png")
USER_TURN = ChatMessage(role="user", content="How is AAPL?")
PRICE_TOOL = ToolSpec(
    name="get_price",
    description="Latest close of a symbol.",
    parameters={"type": "object", "properties": {"symbol": {"type": "string"}}},
)


@pytest.fixture
def server() -> Iterator[FakeLlmServer]:
    with FakeLlmServer() as fake:
        yield fake


@pytest.fixture(params=PROVIDER_NAMES)
def provider(request: pytest.FixtureRequest) -> str:
    return request.param


def _base_url(server: FakeLlmServer, provider: str) -> str:
    anthropic = PROVIDERS[provider].client is ClientKind.ANTHROPIC
    return server.base_url_anthropic if anthropic else server.base_url_openai


async def _call(
    server: FakeLlmServer,
    provider: str,
    messages: list[ChatMessage] | None = None,
    *,
    timeout: float = 5.0,
    api_key: str | None = KEY,
    model: str | None = None,
    images: dict[str, bytes] | None = None,
    json_schema: dict[str, Any] | None = None,
    pool: ClientPool | None = None,
    **request_fields: Any,
) -> ChatResponse:
    """One ``complete`` call at the fake server; ``request_fields`` go to ``ChatRequest``."""
    spec = PROVIDERS[provider]
    request = ChatRequest(
        agent="indicator_agent",
        provider=provider,
        messages=messages or [ChatMessage(role="user", content="How is AAPL?")],
        **request_fields,
    )
    return await complete(
        request,
        spec=spec,
        model=model or spec.quick_model,
        api_key=api_key,
        base_url=_base_url(server, provider),
        timeout=timeout,
        images=images or {},
        json_schema=json_schema,
        pool=pool,
    )


async def _failure(server: FakeLlmServer, provider: str, **kwargs: Any) -> ProviderError:
    with pytest.raises(ProviderError) as caught:
        await _call(server, provider, **kwargs)
    return caught.value


# -- success paths ---------------------------------------------------------------------


async def test_plain_text_reply_reports_text_and_usage(server: FakeLlmServer, provider: str):
    server.reply_text("AAPL looks range-bound.", usage=(42, 9))

    response = await _call(server, provider)

    spec = PROVIDERS[provider]
    assert response.text == "AAPL looks range-bound."
    assert (response.usage.calls, response.usage.input_tokens) == (1, 42)
    assert response.usage.output_tokens == 9
    assert (response.provider, response.model) == (provider, spec.quick_model)
    assert response.finish_reason in {"stop", "end_turn"}
    assert response.latency_ms > 0
    sent = server.last_request
    assert sent.body["model"] == spec.quick_model
    assert sent.api_key == KEY


async def test_plain_text_request_uses_vendor_message_shape(server: FakeLlmServer):
    messages = [
        ChatMessage(role="system", content="You are an analyst."),
        ChatMessage(role="system", content="Be brief."),
        ChatMessage(role="user", content="How is AAPL?"),
    ]
    server.reply_text("ok")
    server.reply_text("ok")

    await _call(server, "openai", messages, max_tokens=300, temperature=0.2)
    openai_body = server.last_request.body
    await _call(server, "anthropic", messages, max_tokens=300, temperature=0.2)
    anthropic_body = server.last_request.body

    assert openai_body["messages"][0] == {"role": "system", "content": "You are an analyst."}
    assert openai_body["max_completion_tokens"] == 300
    assert openai_body["temperature"] == 0.2
    assert anthropic_body["system"] == "You are an analyst.\n\nBe brief."
    assert anthropic_body["messages"] == [
        {"role": "user", "content": [{"type": "text", "text": "How is AAPL?"}]}
    ]
    assert anthropic_body["max_tokens"] == 300
    assert "temperature" not in anthropic_body  # the anthropic SDK 2.x has no such parameter


async def test_compatible_provider_sends_max_tokens(server: FakeLlmServer):
    server.reply_text("ok")

    await _call(server, "qwen", max_tokens=300)

    assert server.last_request.path == "/v1/chat/completions"
    assert server.last_request.body["max_tokens"] == 300
    assert "max_completion_tokens" not in server.last_request.body


async def test_anthropic_default_max_tokens_is_sent(server: FakeLlmServer):
    server.reply_text("ok")

    await _call(server, "anthropic")

    assert server.last_request.path == "/v1/messages"
    assert server.last_request.body["max_tokens"] == 4096


async def test_tool_calls_offered_and_returned(server: FakeLlmServer, provider: str):
    server.reply_tool_call("get_price", {"symbol": "AAPL"}, call_id="call-7")

    response = await _call(server, provider, tools=[PRICE_TOOL])

    assert response.tool_calls == [
        ToolCall(id="call-7", name="get_price", arguments={"symbol": "AAPL"})
    ]
    assert response.finish_reason in {"tool_calls", "tool_use"}
    expected = {
        ClientKind.ANTHROPIC: [
            {
                "name": "get_price",
                "description": "Latest close of a symbol.",
                "input_schema": PRICE_TOOL.parameters,
            }
        ],
    }.get(
        PROVIDERS[provider].client,
        [
            {
                "type": "function",
                "function": {
                    "name": "get_price",
                    "description": "Latest close of a symbol.",
                    "parameters": PRICE_TOOL.parameters,
                },
            }
        ],
    )
    assert server.last_request.body["tools"] == expected


def _tool_conversation() -> list[ChatMessage]:
    return [
        ChatMessage(role="user", content="Compare AAPL and MSFT."),
        ChatMessage(
            role="assistant",
            content="Checking.",
            tool_calls=[
                ToolCall(id="c1", name="get_price", arguments={"symbol": "AAPL"}),
                ToolCall(id="c2", name="get_price", arguments={"symbol": "MSFT"}),
            ],
        ),
        ChatMessage(role="tool", tool_call_id="c1", name="get_price", content="190.1"),
        ChatMessage(role="tool", tool_call_id="c2", name="get_price", content="410.5"),
    ]


async def test_tool_results_go_back_in_openai_format(server: FakeLlmServer):
    server.reply_text("AAPL is cheaper.")

    await _call(server, "openai", _tool_conversation(), tools=[PRICE_TOOL])

    assistant, first, second = server.last_request.body["messages"][1:]
    assert assistant["tool_calls"] == [
        {
            "id": "c1",
            "type": "function",
            "function": {"name": "get_price", "arguments": '{"symbol": "AAPL"}'},
        },
        {
            "id": "c2",
            "type": "function",
            "function": {"name": "get_price", "arguments": '{"symbol": "MSFT"}'},
        },
    ]
    assert first == {"role": "tool", "tool_call_id": "c1", "content": "190.1"}
    assert second == {"role": "tool", "tool_call_id": "c2", "content": "410.5"}


async def test_tool_results_merge_into_one_anthropic_user_turn(server: FakeLlmServer):
    server.reply_text("AAPL is cheaper.")

    await _call(server, "anthropic", _tool_conversation(), tools=[PRICE_TOOL])

    turns = server.last_request.body["messages"]
    assert [turn["role"] for turn in turns] == ["user", "assistant", "user"]
    assert turns[1]["content"] == [
        {"type": "text", "text": "Checking."},
        {"type": "tool_use", "id": "c1", "name": "get_price", "input": {"symbol": "AAPL"}},
        {"type": "tool_use", "id": "c2", "name": "get_price", "input": {"symbol": "MSFT"}},
    ]
    assert turns[2]["content"] == [
        {"type": "tool_result", "tool_use_id": "c1", "content": "190.1"},
        {"type": "tool_result", "tool_use_id": "c2", "content": "410.5"},
    ]


async def test_malformed_tool_arguments_are_kept_whole(server: FakeLlmServer, provider: str):
    # OpenAI's arguments are a string that may not parse; on the Anthropic wire a proxy
    # (or fine-grained streaming) can hand over a string input the same way.
    server.reply_tool_call("get_price", '{"symbol": "AAPL"', call_id="c1")

    response = await _call(server, provider, tools=[PRICE_TOOL])

    [call] = response.tool_calls
    assert (call.id, call.name) == ("c1", "get_price")
    assert call.unparsed_arguments == '{"symbol": "AAPL"'


async def test_compatible_tool_call_without_type_or_arguments_is_read(server: FakeLlmServer):
    call = {"id": "c1", "function": {"name": "get_price", "arguments": None}}
    reply = {
        "id": "chatcmpl-1",
        "model": "qwen-plus",
        "choices": [
            {
                "index": 0,
                "finish_reason": "tool_calls",
                "message": {"role": "assistant", "content": None, "tool_calls": [call]},
            }
        ],
    }
    server.script(Scripted(raw=json.dumps(reply).encode()))

    response = await _call(server, "qwen", tools=[PRICE_TOOL])

    assert response.tool_calls == [ToolCall(id="c1", name="get_price", arguments={})]
    assert response.usage.calls == 1 and response.usage.input_tokens == 0


async def test_image_is_sent_inline(server: FakeLlmServer, provider: str):
    server.reply_text("An uptrend.")
    messages = [ChatMessage(role="user", content="Read this chart.", images=[CHART])]

    await _call(server, provider, messages, images={CHART.key: PNG})

    encoded = base64.b64encode(PNG).decode()
    content = server.last_request.body["messages"][0]["content"]
    expected = {
        ClientKind.ANTHROPIC: {
            "type": "image",
            "source": {"type": "base64", "media_type": "image/png", "data": encoded},
        },
    }.get(
        PROVIDERS[provider].client,
        {"type": "image_url", "image_url": {"url": f"data:image/png;base64,{encoded}"}},
    )
    assert expected in content
    assert {"type": "text", "text": "Read this chart."} in content


async def test_image_without_image_content_type_is_sniffed(server: FakeLlmServer):
    server.reply_text("ok")
    untyped = ObjectRef(bucket="charts", key="c.bin")
    messages = [ChatMessage(role="user", content="Chart:", images=[untyped])]

    await _call(server, "anthropic", messages, images={untyped.key: PNG})

    block = server.last_request.body["messages"][0]["content"][0]
    assert block["source"]["media_type"] == "image/png"


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
async def test_structured_request_uses_the_rows_native_mechanism(server: FakeLlmServer, row: str):
    server.reply_json(SIGNAL)

    response = await _call(server, row, [JSON_TURN, USER_TURN], **_structured_fields())

    assert json.loads(response.text) == SIGNAL
    assert response.tool_calls == []
    sent = server.last_request.body
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


async def test_a_prompt_only_row_sends_no_response_format(server: FakeLlmServer):
    row = PROVIDERS["vllm"].model_copy(
        update={
            "name": "vllm",
            "capabilities": Capabilities(structured_output=StructuredOutput.PROMPT),
        }
    )
    server.reply_json(SIGNAL)

    response = await complete(
        ChatRequest(agent="a", provider="vllm", messages=[USER_TURN], response_schema="Signal"),
        spec=row,
        model="local",
        api_key=None,
        base_url=server.base_url_openai,
        timeout=5.0,
        images={},
        json_schema=Signal.model_json_schema(),
    )

    assert json.loads(response.text) == SIGNAL
    assert "response_format" not in server.last_request.body
    assert "tools" not in server.last_request.body


def test_a_row_asking_for_a_mechanism_its_wire_cannot_carry_is_refused():
    with pytest.raises(ValueError, match="'openai': structured_output 'tool' is not spoken"):
        PROVIDERS["openai"].model_validate(
            PROVIDERS["openai"].model_dump() | {"capabilities": {"structured_output": "tool"}}
        )


class Scores(BaseModel):
    """A free-form map has no strict form."""

    by_ticker: dict[str, float]


async def test_a_schema_without_a_strict_form_goes_out_with_strict_false(server: FakeLlmServer):
    server.reply_json({"by_ticker": {"AAPL": 0.4}})

    await _call(server, "openai", json_schema=Scores.model_json_schema(), response_schema="Scores")

    assert server.last_request.body["response_format"] == {
        "type": "json_schema",
        "json_schema": {"name": "Scores", "schema": Scores.model_json_schema(), "strict": False},
    }


async def test_schema_names_are_made_wire_safe(server: FakeLlmServer):
    server.reply_json(SIGNAL)

    await _call(server, "openai", **_structured_fields(response_schema="trade.signal v2"))

    assert server.last_request.body["response_format"]["json_schema"]["name"] == "trade_signal_v2"


async def test_a_strict_mode_refusal_is_the_reply_text(server: FakeLlmServer):
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
    server.script(Scripted(raw=json.dumps(completion).encode()))

    response = await _call(server, "openai", **_structured_fields())

    assert response.text == refusal


async def test_anthropic_tool_loop_offers_the_answer_tool_beside_the_data_tools(
    server: FakeLlmServer,
):
    server.reply_tool_call("get_price", {"symbol": "AAPL"}, call_id="c1")
    server.reply_json(SIGNAL)

    asked = await _call(server, "anthropic", tools=[PRICE_TOOL], **_structured_fields())
    asked_body = server.last_request.body
    answered = await _call(server, "anthropic", tools=[PRICE_TOOL], **_structured_fields())

    assert asked.tool_calls == [ToolCall(id="c1", name="get_price", arguments={"symbol": "AAPL"})]
    assert asked_body["tool_choice"] == {"type": "any"}
    assert [tool["name"] for tool in asked_body["tools"]] == ["get_price", "Signal"]
    assert asked_body["tools"][1] == ANSWER_TOOL
    assert answered.tool_calls == []
    assert json.loads(answered.text) == SIGNAL
    assert answered.finish_reason == "tool_use"


async def test_anthropic_data_calls_beside_an_answer_win(server: FakeLlmServer):
    server.script(
        Scripted(
            tool_calls=(
                FakeToolCall("get_price", {"symbol": "AAPL"}, "c1"),
                FakeToolCall("Signal", SIGNAL, "c2"),
            )
        )
    )

    response = await _call(server, "anthropic", tools=[PRICE_TOOL], **_structured_fields())

    assert [call.name for call in response.tool_calls] == ["get_price"]
    assert response.text == ""


async def test_anthropic_prose_is_impossible_once_the_answer_tool_is_forced(
    server: FakeLlmServer,
):
    prose = "AAPL looks strong; I would buy a small position."
    server.reply_text(prose)
    server.reply_text(prose)

    unforced = await _call(server, "anthropic")
    forced = await _call(server, "anthropic", **_structured_fields())

    assert unforced.text == prose
    value = Signal.model_validate_json(forced.text)
    assert value.action is Action.BUY and value.tags == [prose]


async def test_a_data_tool_named_like_the_schema_is_refused_before_any_call(
    server: FakeLlmServer,
):
    clash = PRICE_TOOL.model_copy(update={"name": "Signal"})

    with pytest.raises(InvalidInput, match="named 'Signal', like the answer tool"):
        await _call(server, "anthropic", tools=[clash], **_structured_fields())

    assert server.requests == []


async def test_keyless_provider_sends_placeholder_key(server: FakeLlmServer):
    server.reply_text("ok")

    await _call(server, "ollama", api_key=None)

    assert server.last_request.api_key == "not-needed"


async def test_missing_required_key_names_the_variables(server: FakeLlmServer):
    with pytest.raises(ConfigError, match="DEEPSEEK_API_KEY or QUANTDESK_DEEPSEEK__API_KEY"):
        await _call(server, "deepseek", api_key=None)

    assert server.requests == []


async def test_offline_client_is_not_served_here():
    request = ChatRequest(agent="a", messages=[ChatMessage(role="user", content="x")])
    with pytest.raises(ValueError, match="offline"):
        await complete(
            request,
            spec=PROVIDERS["offline"],
            model="offline-analyst",
            api_key=None,
            base_url=None,
            timeout=1.0,
            images={},
        )


# -- failures --------------------------------------------------------------------------


async def test_rate_limit_is_retryable_after_advertised_delay(server: FakeLlmServer, provider: str):
    server.rate_limited(retry_after=7)

    error = await _failure(server, provider)

    assert error.retryable
    assert error.status == 429
    assert error.retry_after == timedelta(seconds=7)
    assert len(server.requests) == 1


@pytest.mark.parametrize("status", [500, 529])
async def test_server_errors_are_retryable_and_not_retried_by_sdk(
    server: FakeLlmServer, provider: str, status: int
):
    server.script(Scripted(status=status, message="Overloaded"), Scripted(text="retried!"))

    error = await _failure(server, provider)

    assert error.retryable
    assert error.status == status
    assert len(server.requests) == 1
    assert server.pending == 1
    assert server.last_request.headers["x-stainless-retry-count"] == "0"


async def test_unauthorized_names_key_variable_and_hides_key(server: FakeLlmServer, provider: str):
    server.unauthorized()

    error = await _failure(server, provider)

    spec = PROVIDERS[provider]
    assert not error.retryable
    assert error.status == 401
    assert spec.key_env in str(error)
    assert f"QUANTDESK_{provider.upper()}__API_KEY" in str(error)
    assert "***" in str(error)  # the fake echoes the key; it must come back redacted
    assert KEY not in str(error) and KEY not in repr(error.args)
    assert error.__cause__ is None


async def test_a_pooled_client_serves_its_destination_and_keeps_each_key(
    server: FakeLlmServer, provider: str
):
    pool = ClientPool()
    sdk = openai_chat.VENDOR.sdk if provider != "anthropic" else anthropic_chat.VENDOR.sdk
    url = _base_url(server, provider)
    server.reply_text("first")
    server.reply_text("second")
    server.reply_text("other key")

    first = await _call(server, provider, pool=pool)
    second = await _call(server, provider, pool=pool)
    client = pool.client(sdk, api_key=KEY, base_url=url, timeout=5.0)
    await _call(server, provider, pool=pool, api_key="sk-other-key")

    assert (first.text, second.text) == ("first", "second")
    assert client is pool.client(sdk, api_key=KEY, base_url=url, timeout=5.0)
    assert client is not pool.client(sdk, api_key="sk-other-key", base_url=url, timeout=5.0)
    assert [r.api_key for r in server.requests] == [KEY, KEY, "sk-other-key"]


async def test_a_pooled_client_fails_as_a_fresh_one(server: FakeLlmServer, provider: str):
    server.unauthorized()

    error = await _failure(server, provider, pool=ClientPool())

    assert (error.retryable, error.status) == (False, 401)
    assert KEY not in str(error) and "***" in str(error)


def test_a_pool_gives_each_event_loop_its_own_clients():
    pool = ClientPool()

    async def client() -> object:
        return pool.client(openai_chat.VENDOR.sdk, api_key=KEY, base_url=None, timeout=5.0)

    assert asyncio.run(client()) is not asyncio.run(client())


async def test_timeout_is_retryable(server: FakeLlmServer, provider: str):
    server.slow(seconds=3)

    error = await _failure(server, provider, timeout=0.5)

    assert error.retryable
    assert "0.5 s" in str(error)
    assert f"QUANTDESK_{provider.upper()}__TIMEOUT_SECONDS" in str(error)


@pytest.mark.parametrize(
    "body",
    [b'{"id": "chatcmpl-1", "choices": [ <html>', b"{}", b'"just text"', b'{"choices": [{}]}'],
    ids=["not-json", "empty-object", "json-string", "wrong-shape"],
)
async def test_malformed_body_is_retryable(server: FakeLlmServer, provider: str, body: bytes):
    server.malformed(body)

    error = await _failure(server, provider)

    assert error.retryable
    assert "not a chat reply" in str(error)


async def test_unknown_model_is_not_retryable_and_names_model(server: FakeLlmServer, provider: str):
    server.unknown_model()

    error = await _failure(server, provider, model="gpt-9-imaginary", role=LlmRole.DEEP)

    assert not error.retryable
    assert error.status == 404
    assert "'gpt-9-imaginary'" in str(error)
    assert f"QUANTDESK_{provider.upper()}__DEEP_MODEL" in str(error)


async def test_image_refusal_says_model_cannot_see(server: FakeLlmServer, provider: str):
    server.fail(400, "Invalid content type. image_url is only supported by certain models.")
    messages = [ChatMessage(role="user", content="Chart:", images=[CHART])]

    error = await _failure(server, provider, messages=messages, images={CHART.key: PNG})

    assert not error.retryable
    assert "does not accept images" in str(error)
    assert f"QUANTDESK_{provider.upper()}__VISION_MODEL" in str(error)


async def test_other_bad_request_carries_vendor_message(server: FakeLlmServer, provider: str):
    server.fail(400, "temperature: must be at most 1.0")

    error = await _failure(server, provider)

    assert not error.retryable
    assert "temperature: must be at most 1.0" in str(error)


async def test_unreachable_server_is_retryable(provider: str):
    with FakeLlmServer() as stopped:
        base_url = _base_url(stopped, provider)
    spec = PROVIDERS[provider]
    request = ChatRequest(agent="a", messages=[ChatMessage(role="user", content="x")])

    with pytest.raises(ProviderError) as caught:
        await complete(
            request,
            spec=spec,
            model=spec.quick_model,
            api_key=KEY,
            base_url=base_url,
            timeout=2.0,
            images={},
        )

    assert caught.value.retryable
    assert "unreachable" in str(caught.value)


# -- Retry-After parsing ---------------------------------------------------------------


def test_retry_after_reads_milliseconds_before_seconds():
    assert retry_after({"retry-after-ms": "1500", "retry-after": "9"}) == timedelta(seconds=1.5)


def test_retry_after_reads_http_date():
    when = datetime.now(UTC) + timedelta(seconds=30)

    delay = retry_after({"retry-after": format_datetime(when, usegmt=True)})

    assert delay is not None
    assert timedelta(seconds=28) <= delay <= timedelta(seconds=30)


def test_retry_after_ignores_garbage_and_past_dates():
    assert retry_after({"retry-after": "soon"}) is None
    assert retry_after({}) is None
    assert retry_after({"retry-after": "Mon, 01 Jan 2001 00:00:00 GMT"}) == timedelta(0)
