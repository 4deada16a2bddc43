"""The opt-in reply cache: replays without calling the vendor, misses on any change, keeps no key.

The vendor is the fake OpenAI server (its request log is what "no call" means);
the cache lives in the real S3 server. Every test asks about its own symbol, so
entries another test stored can never answer it.
"""

from __future__ import annotations

import dataclasses
import hashlib
import uuid
from collections.abc import AsyncIterator, Iterator

import pytest
import pytest_asyncio
from temporalio.exceptions import ApplicationError
from temporalio.testing import ActivityEnvironment, WorkflowEnvironment

from activities.llm import LlmActivities
from activities.tools import TOOL_ACTIVITIES
from shared.agents.schemas import AnalystNote
from shared.config import Settings, load_settings
from shared.llm.contracts import ChatMessage, ChatRequest, ChatResponse, LlmChoice, SpendScope
from shared.llm.providers import OFFLINE_MODEL, QUEUE_OFFLINE, QUEUE_OPENAI
from shared.llm.reply_cache import ReplyCache, cache_key, key_material
from shared.spending.ledger import Limit, Spend, SpendLedger, run_scope
from shared.storage.buckets import CHARTS_BUCKET
from shared.storage.objects import ObjectRef, ObjectStore
from tests.fakes.llm_server import FakeLlmServer
from tests.flows import ProbeResult, ToolLoopProbe
from tests.probe_tools import TEST_TOOLS_QUEUE
from tests.servers import running_workers
from workers.main import WorkerPlan

pytestmark = pytest.mark.asyncio(loop_scope="session")
KEY = "sk-test-NEVER-IN-THE-CACHE-7"
NOTE = {"stance": "bullish", "confidence": 0.6, "key_points": ["closes rose"], "summary": "Up."}
QUEUE = "test-reply-cache"


@pytest.fixture(scope="module")
def fake() -> Iterator[FakeLlmServer]:
    with FakeLlmServer() as server:
        yield server


def _settings(fake: FakeLlmServer, s3: Settings, *, cache: bool = True) -> Settings:
    return load_settings(
        data_dir=s3.data_dir,
        s3=s3.s3.model_dump(),
        openai={"api_key": KEY, "base_url": fake.base_url_openai},
        llm_cache=cache,
    )


def _symbol() -> str:
    return f"T{uuid.uuid4().hex[:8].upper()}"


def _request(symbol: str, *, provider: str = "openai", **fields: object) -> ChatRequest:
    return ChatRequest(
        agent="cache_probe",
        provider=provider,
        messages=[ChatMessage(role="user", content=f"Assess {symbol}.")],
        response_schema="AnalystNote",
        **fields,
    )


async def _chat(
    settings: Settings, request: ChatRequest, queue: str = QUEUE_OPENAI
) -> ChatResponse:
    return await ActivityEnvironment().run(LlmActivities(settings, queue).chat, request)


async def test_an_identical_request_is_answered_from_the_cache_identically(
    fake: FakeLlmServer, s3_settings: Settings
) -> None:
    settings, symbol = _settings(fake, s3_settings), _symbol()
    fake.reply_json(NOTE)
    sent = len(fake.requests)

    first = await _chat(settings, _request(symbol))
    again = await _chat(settings, _request(symbol))

    assert len(fake.requests) == sent + 1
    assert again.structured == first.structured == NOTE and again.text == first.text
    assert again.usage.total_tokens == first.usage.total_tokens
    assert first.usage.cost_usd > 0 and again.usage.cost_usd == 0  # the replay was free


async def test_a_different_message_or_model_misses(
    fake: FakeLlmServer, s3_settings: Settings
) -> None:
    settings, symbol = _settings(fake, s3_settings), _symbol()
    for _ in range(3):
        fake.reply_json(NOTE)
    sent = len(fake.requests)

    await _chat(settings, _request(symbol))
    await _chat(settings, _request(f"{symbol}X"))
    await _chat(settings, _request(symbol, model="gpt-other"))

    assert len(fake.requests) == sent + 3


async def test_without_the_setting_every_request_reaches_the_vendor(
    fake: FakeLlmServer, s3_settings: Settings
) -> None:
    settings, symbol = _settings(fake, s3_settings, cache=False), _symbol()
    fake.reply_json(NOTE)
    fake.reply_json(NOTE)
    sent = len(fake.requests)

    await _chat(settings, _request(symbol))
    await _chat(settings, _request(symbol))

    assert len(fake.requests) == sent + 2


async def test_the_key_and_the_stored_reply_hold_no_secret(
    fake: FakeLlmServer, s3_settings: Settings
) -> None:
    settings, symbol = _settings(fake, s3_settings), _symbol()
    fake.reply_json(NOTE)
    request = _request(symbol)
    response = await _chat(settings, request)

    schema = AnalystNote.model_json_schema()
    material = key_material(request, response.model, {}, schema)
    key = cache_key(request, response.model, {}, schema)
    store = ObjectStore.from_settings(settings)
    stored = store.get_bytes(ReplyCache(store).ref(key))

    assert fake.last_request.api_key == KEY  # the vendor got the key...
    assert KEY not in material and KEY not in stored.decode()  # ...the cache never did
    assert key == hashlib.sha256(material.encode()).hexdigest()
    assert ChatResponse.model_validate_json(stored).structured == NOTE


async def test_images_count_by_their_bytes_not_their_object_keys() -> None:
    def request(key: str) -> ChatRequest:
        chart = ObjectRef(bucket=CHARTS_BUCKET, key=key, content_type="image/png")
        message = ChatMessage(role="user", content="Read the chart.", images=[chart])
        return ChatRequest(agent="trend_agent", provider="openai", messages=[message])

    one, other = request("run-1/trend.png"), request("run-2/trend.png")

    same = cache_key(one, "m", {"run-1/trend.png": b"png"}, None)
    assert cache_key(other, "m", {"run-2/trend.png": b"png"}, None) == same
    assert cache_key(other, "m", {"run-2/trend.png": b"other png"}, None) != same


async def test_a_repeat_misses_the_first_runs_entry_and_a_first_run_keeps_its_key() -> None:
    first = _request("GOOG")
    assert "sample" not in key_material(first, "m", {}, None)
    again = first.model_copy(update={"sample": 1})
    assert cache_key(again, "m", {}, None) != cache_key(first, "m", {}, None)


async def test_the_offline_provider_is_never_cached(s3_settings: Settings) -> None:
    settings = load_settings(
        data_dir=s3_settings.data_dir, s3=s3_settings.s3.model_dump(), llm_cache=True
    )
    request = _request(_symbol(), provider="offline", context={"symbol": "ACME"})

    await _chat(settings, request, QUEUE_OFFLINE)

    key = cache_key(request, OFFLINE_MODEL, {}, AnalystNote.model_json_schema())
    assert ReplyCache(ObjectStore.from_settings(settings)).get(key) is None


# --- a whole run, twice -----------------------------------------------------------------


@pytest_asyncio.fixture(scope="module", loop_scope="session")
async def workers(
    ts_env: WorkflowEnvironment, fake: FakeLlmServer, s3_settings: Settings
) -> AsyncIterator[None]:
    plans = [
        WorkerPlan(queue=QUEUE, workflows=[ToolLoopProbe]),
        WorkerPlan(queue=TEST_TOOLS_QUEUE, activities=[*TOOL_ACTIVITIES], threads=True),
        WorkerPlan(
            queue=QUEUE_OPENAI,
            activities=[LlmActivities(_settings(fake, s3_settings), QUEUE_OPENAI).chat],
        ),
    ]
    async with running_workers(ts_env.client, plans):
        yield


async def _probe(env: WorkflowEnvironment, symbol: str, closes: list[float]) -> ProbeResult:
    return await env.client.execute_workflow(
        "ToolLoopProbe",
        {"symbol": symbol, "closes": closes, "llm": LlmChoice(provider="openai").model_dump()},
        id=f"cache-{uuid.uuid4()}",
        task_queue=QUEUE,
        result_type=ProbeResult,
    )


async def test_a_second_identical_run_makes_no_request_and_returns_the_same_result(
    ts_env: WorkflowEnvironment, fake: FakeLlmServer, workers: None
) -> None:
    symbol = _symbol()
    fake.reply_tool_call("get_price_history", {"symbol": symbol})
    fake.reply_json(NOTE)
    first = await _probe(ts_env, symbol, [1, 2, 3])
    sent = len(fake.requests)

    again = await _probe(ts_env, symbol, [1, 2, 3])

    assert len(fake.requests) == sent  # nothing was scripted: a vendor call would fail the run
    assert (again.note, again.tool_contents, again.rounds) == (first.note, first.tool_contents, 2)
    assert again.usage.total.total_tokens == first.usage.total.total_tokens
    assert again.usage.total.cost_usd == 0 < first.usage.total.cost_usd


async def test_a_run_whose_tool_answers_differently_misses_from_that_turn_on(
    ts_env: WorkflowEnvironment, fake: FakeLlmServer, workers: None
) -> None:
    symbol = _symbol()
    fake.reply_tool_call("get_price_history", {"symbol": symbol})
    fake.reply_json(NOTE)
    await _probe(ts_env, symbol, [1, 2, 3])
    sent = len(fake.requests)
    fake.reply_json({**NOTE, "stance": "bearish"})

    changed = await _probe(ts_env, symbol, [3, 2, 1])

    # The opening turn is the same (replayed); the tool result differs, so the next turn is new.
    assert len(fake.requests) == sent + 1
    assert changed.note.stance == "bearish" and "[3.0, 2.0, 1.0]" in changed.tool_contents[0]


async def test_a_cached_reply_holds_nothing_and_comes_even_at_the_limit(
    fake: FakeLlmServer, s3_settings: Settings
) -> None:
    """A hit holds nothing in the spending ledger (the run paid once), a run at its limit still
    gets a reply the cache has, and the limit still stops what the cache cannot answer."""
    settings, symbol = _settings(fake, s3_settings), _symbol()
    run = f"cache-run-{uuid.uuid4().hex[:8]}"
    asked = _request(symbol, spend=SpendScope(run=run))
    ledger = SpendLedger.from_settings(settings)
    fake.reply_json(NOTE)
    first = await _attempt(settings, asked, "1")
    spent = ledger.run_totals(run)
    sent = len(fake.requests)

    again = await _attempt(settings, asked, "2")
    assert again.structured == first.structured and again.usage.cost_usd == 0
    assert ledger.run_totals(run) == spent
    assert ledger.run_standing(run).spent.tokens == spent.tokens  # no hold left behind

    ledger.raise_limit(
        run_scope(run), Limit(tokens=spent.tokens + 1), Spend(usd=spent.usd, tokens=spent.tokens)
    )
    assert (await _attempt(settings, asked, "3")).structured == first.structured
    with pytest.raises(ApplicationError, match="SpendingLimitReached: token limit reached"):
        await _attempt(settings, _request(_symbol(), spend=SpendScope(run=run)), "4")
    assert len(fake.requests) == sent


async def _attempt(settings: Settings, request: ChatRequest, activity_id: str) -> ChatResponse:
    """``chat`` as activity ``activity_id`` of one run (each call holds under its own key)."""
    env = ActivityEnvironment()
    env.info = dataclasses.replace(env.info, activity_id=activity_id)
    return await env.run(LlmActivities(settings, QUEUE_OPENAI).chat, request)
