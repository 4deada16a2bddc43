"""The ``chat`` activity: checks before any call, images from S3, structured output, retries.

The vendors are the fake server speaking their wire formats through the official
SDKs; S3 is the real SeaweedFS server; the retry tests run on the real dev server.
"""

from __future__ import annotations

import base64
import json
import uuid
from collections.abc import AsyncIterator, Iterator
from datetime import timedelta

import pytest
import pytest_asyncio
from temporalio.exceptions import ApplicationError
from temporalio.testing import ActivityEnvironment, WorkflowEnvironment

from activities.llm import LlmActivities
from shared.config import Settings, load_settings
from shared.llm.contracts import ChatMessage, ChatRequest, LlmChoice
from shared.llm.providers import QUEUE_ANTHROPIC, QUEUE_OFFLINE, QUEUE_OPENAI
from shared.storage.buckets import CHARTS_BUCKET, PAYLOADS_BUCKET
from shared.storage.objects import ObjectRef, ObjectStore
from tests.fakes.llm_server import FakeLlmServer
from tests.flows import ProbeResult, ToolLoopProbe
from tests.probe_tools import TEST_TOOLS_QUEUE
from tests.servers import running_workers
from workers.main import WorkerPlan

pytestmark = pytest.mark.asyncio(loop_scope="session")
KEY = "sk-test-DO-NOT-LEAK-42"
NOTE = {
    "stance": "bullish",
    "confidence": 0.7,
    "key_points": ["closes rose 8%"],
    "summary": "Momentum is up.",
}


@pytest.fixture
def fake() -> Iterator[FakeLlmServer]:
    with FakeLlmServer() as server:
        yield server


def _settings(fake: FakeLlmServer, s3: Settings | None = None, **extra: object) -> Settings:
    fields: dict[str, object] = {
        "openai": {"api_key": KEY, "base_url": fake.base_url_openai},
        "anthropic": {"api_key": KEY, "base_url": fake.base_url_anthropic},
    }
    if s3 is not None:
        fields |= {"data_dir": s3.data_dir, "s3": s3.s3.model_dump()}
    return load_settings(**(fields | extra))


def _request(provider: str = "openai", **fields: object) -> ChatRequest:
    return ChatRequest(
        agent="test_agent",
        provider=provider,
        messages=[ChatMessage(role="user", content="Assess ACME.")],
        **fields,
    )


async def _chat(settings: Settings, queue: str, request: ChatRequest) -> object:
    return await ActivityEnvironment().run(LlmActivities(settings, queue).chat, request)


async def test_missing_key_fails_before_any_call_and_names_the_variable(
    fake: FakeLlmServer, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.delenv("OPENAI_API_KEY", raising=False)
    settings = load_settings(openai={"base_url": fake.base_url_openai})

    with pytest.raises(ApplicationError) as caught:
        await _chat(settings, QUEUE_OPENAI, _request())

    assert caught.value.non_retryable
    assert "OPENAI_API_KEY" in caught.value.message
    assert fake.requests == []


async def test_vendor_key_variable_is_honoured(
    fake: FakeLlmServer, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("OPENAI_API_KEY", KEY)
    monkeypatch.setenv("OPENAI_BASE_URL", fake.base_url_openai)
    fake.reply_text("fine")

    response = await _chat(load_settings(), QUEUE_OPENAI, _request())

    assert response.text == "fine"
    assert fake.last_request.api_key == KEY


async def test_default_model_of_the_role_comes_from_settings(fake: FakeLlmServer) -> None:
    fake.reply_text("deep thoughts")
    settings = _settings(
        fake,
        openai={"api_key": KEY, "base_url": fake.base_url_openai, "deep_model": "gpt-test-deep"},
    )

    response = await _chat(settings, QUEUE_OPENAI, _request(role="deep"))

    assert fake.last_request.body["model"] == "gpt-test-deep"
    assert response.model == "gpt-test-deep"


async def test_the_provider_block_s_sampling_goes_on_the_wire_unless_the_call_sets_it(
    fake: FakeLlmServer,
) -> None:
    fake.reply_text("same every time")
    fake.reply_text("warmer")
    block = {"api_key": KEY, "base_url": fake.base_url_openai, "temperature": 0, "seed": 7}
    settings = _settings(fake, openai=block)

    await _chat(settings, QUEUE_OPENAI, _request())
    default = fake.last_request.body
    await _chat(settings, QUEUE_OPENAI, _request(temperature=0.5))
    chosen = fake.last_request.body

    assert (default["temperature"], default["seed"]) == (0, 7)
    assert (chosen["temperature"], chosen["seed"]) == (0.5, 7)


async def test_images_are_fetched_from_s3_and_sent_as_png(
    fake: FakeLlmServer, s3_settings: Settings
) -> None:
    settings = _settings(fake, s3_settings)
    chart = ObjectRef(
        bucket=CHARTS_BUCKET, key=f"{uuid.uuid4()}/trend.png", content_type="image/png"
    )
    png = b"\x89PNG\r\n\x1a\n" + b"chart-bytes"
    ObjectStore.from_settings(settings).put_bytes(chart, png)
    fake.reply_text("I see a rising wedge.")
    request = ChatRequest(
        agent="trend_agent",
        provider="anthropic",
        role="vision",
        messages=[ChatMessage(role="user", content="Read the chart.", images=[chart])],
    )

    response = await _chat(settings, QUEUE_ANTHROPIC, request)

    blocks = fake.last_request.body["messages"][0]["content"]
    [image] = [block for block in blocks if block["type"] == "image"]
    assert image["source"] == {
        "type": "base64",
        "media_type": "image/png",
        "data": base64.b64encode(png).decode(),
    }
    assert response.text == "I see a rising wedge."


async def test_images_for_a_provider_without_vision_are_refused(fake: FakeLlmServer) -> None:
    settings = _settings(fake, deepseek={"api_key": KEY})
    chart = ObjectRef(bucket="charts", key="k.png", content_type="image/png")
    request = ChatRequest(
        agent="pattern_agent",
        provider="deepseek",
        role="vision",
        model="deepseek-chat",
        messages=[ChatMessage(role="user", content="Look.", images=[chart])],
    )

    with pytest.raises(ApplicationError) as caught:
        await _chat(settings, "llm-openai-compatible", request)

    assert caught.value.non_retryable
    assert "does not accept images" in caught.value.message


async def test_structured_reply_is_validated(fake: FakeLlmServer) -> None:
    fake.reply_json(NOTE)

    response = await _chat(_settings(fake), QUEUE_OPENAI, _request(response_schema="AnalystNote"))

    assert response.structured == NOTE
    schema_turn = fake.last_request.body["messages"][-1]
    assert schema_turn["role"] == "system" and "AnalystNote" in schema_turn["content"]


async def test_invalid_structured_reply_gets_a_repair_call(fake: FakeLlmServer) -> None:
    fake.reply_json({**NOTE, "confidence": 170})
    fake.reply_json(NOTE)

    response = await _chat(_settings(fake), QUEUE_OPENAI, _request(response_schema="AnalystNote"))

    assert response.structured == NOTE
    assert len(fake.requests) == 2
    repair = fake.requests[1].body["messages"][-1]["content"]
    assert "confidence" in repair and "less than or equal to 1" in repair
    assert response.usage.calls == 2


async def test_a_second_repair_turn_quotes_the_new_problems_and_its_reply_is_used(
    fake: FakeLlmServer,
) -> None:
    fake.reply_text("prose first")
    fake.reply_json({**NOTE, "confidence": 170})
    fake.reply_json(NOTE)

    response = await _chat(_settings(fake), QUEUE_OPENAI, _request(response_schema="AnalystNote"))

    assert response.structured == NOTE
    assert response.usage.calls == 3
    second = fake.requests[2].body["messages"]
    first_repair, second_repair = [m["content"] for m in second if m["role"] == "user"][-2:]
    assert "holds no JSON object" in first_repair
    assert "confidence" in second_repair and "less than or equal to 1" in second_repair
    assert [m["content"] for m in second if m["role"] == "assistant"][-2:] == [
        "prose first",
        json.dumps({**NOTE, "confidence": 170}),
    ]


async def test_reply_still_invalid_after_two_repairs_is_kept_in_s3_and_fails(
    fake: FakeLlmServer, s3_settings: Settings
) -> None:
    settings = _settings(fake, s3_settings)
    fake.reply_text("I think it goes up, no JSON for you")
    fake.reply_text("still prose")
    fake.reply_text("prose, a third time")
    raw = ObjectRef(bucket=PAYLOADS_BUCKET, key=f"{uuid.uuid4()}/raw.txt")

    with pytest.raises(ApplicationError) as caught:
        await _chat(
            settings, QUEUE_OPENAI, _request(response_schema="AnalystNote", raw_reply_key=raw)
        )

    assert caught.value.non_retryable
    assert caught.value.type == "StructuredOutputError"
    assert raw.key in caught.value.message
    # The worker's default model was used: the fix names the setting that chooses another.
    assert "QUANTDESK_OPENAI__QUICK_MODEL" in caught.value.message
    schema, problem, key = caught.value.details
    assert (schema, key) == ("AnalystNote", f"s3://{raw.bucket}/{raw.key}")
    assert "no JSON object" in problem and "after 2 repair turns" in problem
    assert len(fake.requests) == 3
    assert ObjectStore.from_settings(settings).get_bytes(raw) == b"prose, a third time"


@pytest.mark.parametrize(
    ("status", "retryable"), [(500, True), (529, True), (401, False), (404, False)]
)
async def test_vendor_statuses_map_to_retryable_or_not(
    fake: FakeLlmServer, status: int, retryable: bool
) -> None:
    fake.fail(status, "vendor says no to {key}")

    with pytest.raises(ApplicationError) as caught:
        await _chat(_settings(fake), QUEUE_ANTHROPIC, _request("anthropic"))

    assert caught.value.non_retryable is not retryable
    assert KEY not in caught.value.message


async def test_rate_limit_sets_the_next_retry_delay(fake: FakeLlmServer) -> None:
    fake.rate_limited(7)

    with pytest.raises(ApplicationError) as caught:
        await _chat(_settings(fake), QUEUE_OPENAI, _request())

    assert not caught.value.non_retryable
    assert caught.value.next_retry_delay == timedelta(seconds=7)


async def test_unknown_offline_model_is_refused(fake: FakeLlmServer) -> None:
    with pytest.raises(ApplicationError) as caught:
        await _chat(load_settings(), QUEUE_OFFLINE, _request("offline", model="gpt-9"))

    assert caught.value.non_retryable
    assert "`llm.model`" in caught.value.message


async def test_a_call_routed_to_the_wrong_queue_is_refused() -> None:
    with pytest.raises(ApplicationError, match="served on 'llm-openai'"):
        await _chat(load_settings(), QUEUE_OFFLINE, _request("openai"))


# --- retries on a real server ---------------------------------------------------------------

QUEUE = "chat-retry-workflows"


@pytest_asyncio.fixture(loop_scope="session")
async def retry_workers(dev_env: WorkflowEnvironment, fake: FakeLlmServer) -> AsyncIterator[None]:
    from activities.tools import TOOL_ACTIVITIES

    settings = _settings(
        fake, openai={"api_key": KEY, "base_url": fake.base_url_openai, "timeout_seconds": 1.0}
    )
    plans = [
        WorkerPlan(queue=QUEUE, workflows=[ToolLoopProbe]),
        WorkerPlan(queue=TEST_TOOLS_QUEUE, activities=[*TOOL_ACTIVITIES], threads=True),
        WorkerPlan(queue=QUEUE_OPENAI, activities=[LlmActivities(settings, QUEUE_OPENAI).chat]),
    ]
    async with running_workers(dev_env.client, plans):
        yield


async def _probe(env: WorkflowEnvironment) -> ProbeResult:
    return await env.client.execute_workflow(
        "ToolLoopProbe",
        {"symbol": "ACME", "closes": [1, 2], "llm": LlmChoice(provider="openai").model_dump()},
        id=f"retry-{uuid.uuid4()}",
        task_queue=QUEUE,
        result_type=ProbeResult,
        execution_timeout=timedelta(seconds=60),
    )


@pytest.mark.integration
async def test_429_is_retried_after_the_advertised_delay(
    dev_env: WorkflowEnvironment, fake: FakeLlmServer, retry_workers: None
) -> None:
    fake.rate_limited(2)
    fake.reply_json(NOTE)

    result = await _probe(dev_env)

    first, second = fake.requests
    assert second.received_at - first.received_at >= 2.0
    assert result.note.summary == "Momentum is up."


@pytest.mark.integration
async def test_a_reply_slower_than_the_timeout_is_retried(
    dev_env: WorkflowEnvironment, fake: FakeLlmServer, retry_workers: None
) -> None:
    fake.slow(3.0)
    fake.reply_json(NOTE)

    result = await _probe(dev_env)

    assert len(fake.requests) == 2
    assert result.note.stance == "bullish"


async def test_each_reply_is_priced_at_the_workers_table(
    fake: FakeLlmServer, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("QUANTDESK_PRICES", '{"house-model": {"input": 1, "output": 3}}')
    fake.reply_text("priced", usage=(1_000, 200))
    fake.reply_text("custom", usage=(1_000, 200))
    fake.reply_text("unknown", usage=(1_000, 200))
    settings = _settings(fake)

    default = await _chat(settings, QUEUE_OPENAI, _request(model="gpt-4.1-mini"))
    custom = await _chat(settings, QUEUE_OPENAI, _request(model="house-model"))
    unpriced = await _chat(settings, QUEUE_OPENAI, _request(model="gpt-9-preview"))

    assert default.usage.cost_usd == pytest.approx((1_000 * 0.4 + 200 * 1.6) / 1e6)
    assert custom.usage.cost_usd == pytest.approx((1_000 * 1 + 200 * 3) / 1e6)
    assert (unpriced.usage.cost_usd, unpriced.usage.unpriced_calls) == (0.0, 1)
    assert settings.price_of("gpt-4.1") is not None  # the defaults survive the override
    total = default.usage + custom.usage + unpriced.usage
    assert (total.calls, total.unpriced_calls) == (3, 1)
    assert total.cost_usd == pytest.approx(default.usage.cost_usd + custom.usage.cost_usd)
