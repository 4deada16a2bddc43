"""The vendor clients, through the official SDKs, against a real local HTTP server.

Each behaviour runs for OpenAI, Anthropic and one OpenAI-compatible provider
(qwen), and asserts both what came back and what went over the wire. Structured output
is test_llm_structured_output.py.
"""

from __future__ import annotations

import asyncio
import base64
import json
from datetime import UTC, datetime, timedelta
from email.utils import format_datetime
from typing import Any

import pytest

from shared.errors import ConfigError, ProviderError
from shared.llm.clients import ClientPool, anthropic_chat, complete, openai_chat
from shared.llm.clients.errors import retry_after
from shared.llm.contracts import ChatMessage, ChatRequest, ChatResponse, ToolCall, ToolSpec
from shared.llm.providers import PROVIDERS, ClientKind, LlmRole
from shared.storage.objects import ObjectRef
from tests.fakes.llm_server import FakeLlmServer, Scripted

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


@pytest.fixture(params=PROVIDER_NAMES)
def provider(request: pytest.FixtureRequest) -> str:
    return request.param


def _base_url(fake_llm: FakeLlmServer, provider: str) -> str:
    anthropic = PROVIDERS[provider].client is ClientKind.ANTHROPIC
    return fake_llm.base_url_anthropic if anthropic else fake_llm.base_url_openai


async def _call(
    fake_llm: FakeLlmServer,
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
        base_url=_base_url(fake_llm, provider),
        timeout=timeout,
        images=images or {},
        json_schema=json_schema,
        pool=pool,
    )


async def _failure(fake_llm: FakeLlmServer, provider: str, **kwargs: Any) -> ProviderError:
    with pytest.raises(ProviderError) as caught:
        await _call(fake_llm, provider, **kwargs)
    return caught.value


# -- success paths ---------------------------------------------------------------------


async def test_plain_text_reply_reports_text_and_usage(fake_llm: FakeLlmServer, provider: str):
    fake_llm.reply_text("AAPL looks range-bound.", usage=(42, 9))

    response = await _call(fake_llm, provider)

    spec = PROVIDERS[provider]
    assert response.text == "AAPL looks range-bound."
    assert (response.usage.calls, response.usage.input_tokens) == (1, 42)
    assert response.usage.output_tokens == 9
    assert (response.provider, response.model) == (provider, spec.quick_model)
    assert response.finish_reason in {"stop", "end_turn"}
    assert response.latency_ms > 0
    sent = fake_llm.last_request
    assert sent.body["model"] == spec.quick_model
    assert sent.api_key == KEY


async def test_plain_text_request_uses_vendor_message_shape(fake_llm: FakeLlmServer):
    messages = [
        ChatMessage(role="system", content="You are an analyst."),
        ChatMessage(role="system", content="Be brief."),
        ChatMessage(role="user", content="How is AAPL?"),
    ]
    fake_llm.reply_text("ok")
    fake_llm.reply_text("ok")

    await _call(fake_llm, "openai", messages, max_tokens=300, temperature=0.2)
    openai_body = fake_llm.last_request.body
    await _call(fake_llm, "anthropic", messages, max_tokens=300, temperature=0.2)
    anthropic_body = fake_llm.last_request.body

    assert openai_body["messages"][0] == {"role": "system", "content": "You are an analyst."}
    assert openai_body["max_completion_tokens"] == 300
    assert openai_body["temperature"] == 0.2
    assert anthropic_body["system"] == "You are an analyst.\n\nBe brief."
    assert anthropic_body["messages"] == [
        {"role": "user", "content": [{"type": "text", "text": "How is AAPL?"}]}
    ]
    assert anthropic_body["max_tokens"] == 300
    assert "temperature" not in anthropic_body  # the anthropic SDK 2.x has no such parameter


async def test_compatible_provider_sends_max_tokens(fake_llm: FakeLlmServer):
    fake_llm.reply_text("ok")

    await _call(fake_llm, "qwen", max_tokens=300)

    assert fake_llm.last_request.path == "/v1/chat/completions"
    assert fake_llm.last_request.body["max_tokens"] == 300
    assert "max_completion_tokens" not in fake_llm.last_request.body


async def test_anthropic_default_max_tokens_is_sent(fake_llm: FakeLlmServer):
    fake_llm.reply_text("ok")

    await _call(fake_llm, "anthropic")

    assert fake_llm.last_request.path == "/v1/messages"
    assert fake_llm.last_request.body["max_tokens"] == 4096


async def test_tool_calls_offered_and_returned(fake_llm: FakeLlmServer, provider: str):
    fake_llm.reply_tool_call("get_price", {"symbol": "AAPL"}, call_id="call-7")

    response = await _call(fake_llm, provider, tools=[PRICE_TOOL])

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
    assert fake_llm.last_request.body["tools"] == expected


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


async def test_tool_results_go_back_in_openai_format(fake_llm: FakeLlmServer):
    fake_llm.reply_text("AAPL is cheaper.")

    await _call(fake_llm, "openai", _tool_conversation(), tools=[PRICE_TOOL])

    assistant, first, second = fake_llm.last_request.body["messages"][1:]
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


async def test_tool_results_merge_into_one_anthropic_user_turn(fake_llm: FakeLlmServer):
    fake_llm.reply_text("AAPL is cheaper.")

    await _call(fake_llm, "anthropic", _tool_conversation(), tools=[PRICE_TOOL])

    turns = fake_llm.last_request.body["messages"]
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


async def test_malformed_tool_arguments_are_kept_whole(fake_llm: FakeLlmServer, provider: str):
    # OpenAI's arguments are a string that may not parse; on the Anthropic wire a proxy
    # (or fine-grained streaming) can hand over a string input the same way.
    fake_llm.reply_tool_call("get_price", '{"symbol": "AAPL"', call_id="c1")

    response = await _call(fake_llm, provider, tools=[PRICE_TOOL])

    [call] = response.tool_calls
    assert (call.id, call.name) == ("c1", "get_price")
    assert call.unparsed_arguments == '{"symbol": "AAPL"'


async def test_compatible_tool_call_without_type_or_arguments_is_read(fake_llm: FakeLlmServer):
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
    fake_llm.script(Scripted(raw=json.dumps(reply).encode()))

    response = await _call(fake_llm, "qwen", tools=[PRICE_TOOL])

    assert response.tool_calls == [ToolCall(id="c1", name="get_price", arguments={})]
    assert response.usage.calls == 1 and response.usage.input_tokens == 0


async def test_image_is_sent_inline(fake_llm: FakeLlmServer, provider: str):
    fake_llm.reply_text("An uptrend.")
    messages = [ChatMessage(role="user", content="Read this chart.", images=[CHART])]

    await _call(fake_llm, provider, messages, images={CHART.key: PNG})

    encoded = base64.b64encode(PNG).decode()
    content = fake_llm.last_request.body["messages"][0]["content"]
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


async def test_image_without_image_content_type_is_sniffed(fake_llm: FakeLlmServer):
    fake_llm.reply_text("ok")
    untyped = ObjectRef(bucket="charts", key="c.bin")
    messages = [ChatMessage(role="user", content="Chart:", images=[untyped])]

    await _call(fake_llm, "anthropic", messages, images={untyped.key: PNG})

    block = fake_llm.last_request.body["messages"][0]["content"][0]
    assert block["source"]["media_type"] == "image/png"


async def test_keyless_provider_sends_placeholder_key(fake_llm: FakeLlmServer):
    fake_llm.reply_text("ok")

    await _call(fake_llm, "ollama", api_key=None)

    assert fake_llm.last_request.api_key == "not-needed"


async def test_missing_required_key_names_the_variables(fake_llm: FakeLlmServer):
    with pytest.raises(ConfigError, match="DEEPSEEK_API_KEY or QUANTDESK_DEEPSEEK__API_KEY"):
        await _call(fake_llm, "deepseek", api_key=None)

    assert fake_llm.requests == []


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


async def test_rate_limit_is_retryable_after_advertised_delay(
    fake_llm: FakeLlmServer, provider: str
):
    fake_llm.rate_limited(retry_after=7)

    error = await _failure(fake_llm, provider)

    assert error.retryable
    assert error.status == 429
    assert error.retry_after == timedelta(seconds=7)
    assert len(fake_llm.requests) == 1


@pytest.mark.parametrize("status", [500, 529])
async def test_server_errors_are_retryable_and_not_retried_by_sdk(
    fake_llm: FakeLlmServer, provider: str, status: int
):
    fake_llm.script(Scripted(status=status, message="Overloaded"), Scripted(text="retried!"))

    error = await _failure(fake_llm, provider)

    assert error.retryable
    assert error.status == status
    assert len(fake_llm.requests) == 1
    assert fake_llm.pending == 1
    assert fake_llm.last_request.headers["x-stainless-retry-count"] == "0"


async def test_unauthorized_names_key_variable_and_hides_key(
    fake_llm: FakeLlmServer, provider: str
):
    fake_llm.unauthorized()

    error = await _failure(fake_llm, provider)

    spec = PROVIDERS[provider]
    assert not error.retryable
    assert error.status == 401
    assert spec.key_env in str(error)
    assert f"QUANTDESK_{provider.upper()}__API_KEY" in str(error)
    assert "***" in str(error)  # the fake echoes the key; it must come back redacted
    assert KEY not in str(error) and KEY not in repr(error.args)
    assert error.__cause__ is None


async def test_a_pooled_client_serves_its_destination_and_keeps_each_key(
    fake_llm: FakeLlmServer, provider: str
):
    pool = ClientPool()
    sdk = openai_chat.VENDOR.sdk if provider != "anthropic" else anthropic_chat.VENDOR.sdk
    url = _base_url(fake_llm, provider)
    fake_llm.reply_text("first")
    fake_llm.reply_text("second")
    fake_llm.reply_text("other key")

    first = await _call(fake_llm, provider, pool=pool)
    second = await _call(fake_llm, provider, pool=pool)
    client = pool.client(sdk, api_key=KEY, base_url=url, timeout=5.0)
    await _call(fake_llm, provider, pool=pool, api_key="sk-other-key")

    assert (first.text, second.text) == ("first", "second")
    assert client is pool.client(sdk, api_key=KEY, base_url=url, timeout=5.0)
    assert client is not pool.client(sdk, api_key="sk-other-key", base_url=url, timeout=5.0)
    assert [r.api_key for r in fake_llm.requests] == [KEY, KEY, "sk-other-key"]


async def test_a_pooled_client_fails_as_a_fresh_one(fake_llm: FakeLlmServer, provider: str):
    fake_llm.unauthorized()

    error = await _failure(fake_llm, provider, pool=ClientPool())

    assert (error.retryable, error.status) == (False, 401)
    assert KEY not in str(error) and "***" in str(error)


def test_a_pool_gives_each_event_loop_its_own_clients():
    pool = ClientPool()

    async def client() -> object:
        return pool.client(openai_chat.VENDOR.sdk, api_key=KEY, base_url=None, timeout=5.0)

    assert asyncio.run(client()) is not asyncio.run(client())


async def test_timeout_is_retryable(fake_llm: FakeLlmServer, provider: str):
    fake_llm.slow(seconds=3)

    error = await _failure(fake_llm, provider, timeout=0.5)

    assert error.retryable
    assert "0.5 s" in str(error)
    assert f"QUANTDESK_{provider.upper()}__TIMEOUT_SECONDS" in str(error)


@pytest.mark.parametrize(
    "body",
    [b'{"id": "chatcmpl-1", "choices": [ <html>', b"{}", b'"just text"', b'{"choices": [{}]}'],
    ids=["not-json", "empty-object", "json-string", "wrong-shape"],
)
async def test_malformed_body_is_retryable(fake_llm: FakeLlmServer, provider: str, body: bytes):
    fake_llm.malformed(body)

    error = await _failure(fake_llm, provider)

    assert error.retryable
    assert "not a chat reply" in str(error)


async def test_unknown_model_is_not_retryable_and_names_model(
    fake_llm: FakeLlmServer, provider: str
):
    fake_llm.unknown_model()

    error = await _failure(fake_llm, provider, model="gpt-9-imaginary", role=LlmRole.DEEP)

    assert not error.retryable
    assert error.status == 404
    assert "'gpt-9-imaginary'" in str(error)
    assert f"QUANTDESK_{provider.upper()}__DEEP_MODEL" in str(error)


async def test_image_refusal_says_model_cannot_see(fake_llm: FakeLlmServer, provider: str):
    fake_llm.fail(400, "Invalid content type. image_url is only supported by certain models.")
    messages = [ChatMessage(role="user", content="Chart:", images=[CHART])]

    error = await _failure(fake_llm, provider, messages=messages, images={CHART.key: PNG})

    assert not error.retryable
    assert "does not accept images" in str(error)
    assert f"QUANTDESK_{provider.upper()}__VISION_MODEL" in str(error)


async def test_other_bad_request_carries_vendor_message(fake_llm: FakeLlmServer, provider: str):
    fake_llm.fail(400, "temperature: must be at most 1.0")

    error = await _failure(fake_llm, provider)

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
