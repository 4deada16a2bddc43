"""The claim check: large tool answers travel as claims on S3 objects, small ones inline.

Real SeaweedFS throughout: a claim resolves to its text, a small value is never stored,
the same value is one object however often it is claimed, a sealed one shows nothing
of its text in the bucket, and a chat whose tool turn is a claim survives the store
restarting between the claim and the call. Old requests (no claims) decode as before.
"""

from __future__ import annotations

import json
import uuid
from collections.abc import Iterator
from datetime import UTC, datetime
from pathlib import Path

import pytest
from temporalio.api.history.v1 import History
from temporalio.exceptions import ApplicationError
from temporalio.testing import ActivityEnvironment, WorkflowEnvironment

from activities.llm import LlmActivities
from shared.config import Settings, load_settings
from shared.data.sim import SimVendor
from shared.errors import ClaimMismatch, ConfigError
from shared.llm.contracts import ChatMessage, ChatRequest, ToolResult
from shared.llm.providers import QUEUE_OPENAI
from shared.payload_keys import PayloadKeys, new_key_line, parse_key_lines
from shared.storage.claim_check import ClaimCheck
from shared.storage.objects import ObjectStore
from tests.fakes.llm_server import FakeLlmServer
from tests.histories.record import ROLES
from tests.servers import isolated_settings, running_workers, tools_reading
from tests.test_storage_outage import KillableS3, killable_s3
from workers.main import plan_for

LIMIT = 1024
ANSWER = json.dumps({"rows": [[i, 100.0 + i, 101.0 + i] for i in range(200)]})
KEY = "sk-test-claims"


def _claims(settings: Settings, keys: PayloadKeys | None = None) -> ClaimCheck:
    return ClaimCheck(ObjectStore.from_settings(settings), inline_max=LIMIT, keys=keys)


def _ring(key_id: str = "claims") -> PayloadKeys:
    return PayloadKeys(parse_key_lines(new_key_line(key_id)), source="QUANTDESK_CODEC__KEYS")


def test_a_value_over_the_limit_is_stored_and_its_claim_resolves(s3_settings: Settings) -> None:
    claims = _claims(s3_settings)

    claim = claims.claim(ANSWER)

    assert claim is not None and claim.size == len(ANSWER.encode())
    assert claim.ref.key.startswith("claims/v1/") and claim.digest in claim.ref.key
    assert claims.redeem(claim) == ANSWER


def test_a_value_at_the_limit_stays_inline(s3_settings: Settings) -> None:
    assert _claims(s3_settings).claim("x" * LIMIT) is None


def test_the_same_value_is_one_object_however_often_it_is_claimed(s3_settings: Settings) -> None:
    claims = _claims(s3_settings)

    first, again = claims.claim(ANSWER), claims.claim(ANSWER)
    other = claims.claim(ANSWER + " ")

    assert first == again and first is not None and other is not None
    assert other.ref != first.ref
    assert claims.redeem(first) == ANSWER


def test_a_sealed_value_shows_neither_its_text_nor_its_hash_in_the_bucket(
    s3_settings: Settings,
) -> None:
    ring = _ring()
    claims = _claims(s3_settings, ring)

    claim = claims.claim(ANSWER)

    assert claim is not None and claim.key_id == "claims"
    stored = claims.store.get_bytes(claim.ref)
    assert b"rows" not in stored
    assert claim.digest != _claims(s3_settings).put(ANSWER.encode()).digest
    assert claims.redeem(claim) == ANSWER
    with pytest.raises(ConfigError, match="QUANTDESK_CODEC__KEYS"):
        _claims(s3_settings).redeem(claim)


def test_a_replaced_object_fails_its_claim(s3_settings: Settings) -> None:
    claims = _claims(s3_settings)
    claim = claims.claim(ANSWER + "swap")
    assert claim is not None
    claims.store.put_bytes(claim.ref, b"something else entirely")

    with pytest.raises(ClaimMismatch):
        claims.redeem(claim)


def test_requests_and_results_recorded_before_claims_decode_inline() -> None:
    old_message = {"role": "tool", "content": ANSWER, "tool_call_id": "c1", "name": "get_ohlcv"}
    old_result = {"call_id": "c1", "name": "get_ohlcv", "content": ANSWER}

    message = ChatMessage.model_validate(old_message)
    result = ToolResult.model_validate(old_result)

    assert message.stored is None and message.content == ANSWER
    assert result.stored is None and result.message().content == ANSWER


# --- the chat activity reads its claims through an S3 restart ---------------------------------


@pytest.fixture
def s3(tmp_path: Path) -> Iterator[KillableS3]:
    with killable_s3(tmp_path / "s3") as server:
        yield server


@pytest.fixture
def fake() -> Iterator[FakeLlmServer]:
    with FakeLlmServer() as server:
        yield server


@pytest.mark.asyncio(loop_scope="session")
async def test_a_claimed_tool_turn_survives_an_s3_restart_between_claim_and_chat(
    s3: KillableS3, fake: FakeLlmServer
) -> None:
    access, secret = s3.settings.s3_credentials()
    settings = load_settings(
        s3={**s3.settings.s3.model_dump(), "access_key": access, "secret_key": secret},
        openai={"api_key": KEY, "base_url": fake.base_url_openai},
        inline_max_bytes=LIMIT,
    )
    claim = ClaimCheck.from_settings(settings, ObjectStore.from_settings(settings)).claim(ANSWER)
    assert claim is not None
    request = ChatRequest(
        agent="market_analyst",
        provider="openai",
        messages=[
            ChatMessage(role="user", content="Read the bars."),
            ToolResult(call_id="c1", name="get_ohlcv", content="", stored=claim).message(),
        ],
    )
    fake.reply_text("read")
    chat = LlmActivities(settings, QUEUE_OPENAI).chat

    s3.kill()
    with pytest.raises(ApplicationError) as down:
        await ActivityEnvironment().run(chat, request)
    s3.start()
    response = await ActivityEnvironment().run(chat, request)

    assert down.value.type == "StorageUnavailable" and not down.value.non_retryable
    assert response.text == "read"
    assert fake.last_request.body["messages"][-1]["content"] == ANSWER


# --- what it buys: a Pipeline's history --------------------------------------------------------

PIPELINE_HISTORY_LIMIT = 165_000
"""Bytes of one offline Pipeline's own history (4 analysts, sim ticker): 195 KB before the
claim check, 158 KB with tool answers claimed. Issue 25's goal is 100 KB; the rest needs
the prompts and the managers' inputs claimed too (see the issue's notes)."""


@pytest.mark.asyncio(loop_scope="session")
async def test_a_pipelines_history_stays_within_its_limit(
    ts_env: WorkflowEnvironment, s3_settings: Settings, tmp_path: Path
) -> None:
    settings = isolated_settings(s3_settings, tmp_path / "desk", "test-claims")
    symbol = SimVendor().universe(datetime(2012, 6, 1, tzinfo=UTC))[0].symbol
    with tools_reading(settings):
        async with running_workers(ts_env.client, [plan_for(r, settings) for r in ROLES]):
            handle = await ts_env.client.start_workflow(
                "Pipeline",
                {"symbol": symbol, "as_of": "2012-06-01T00:00:00Z"},
                id=f"claims-{uuid.uuid4().hex[:8]}",
                task_queue="test-claims",
            )
            await handle.result()
            history = await handle.fetch_history()

    size = len(History(events=history.events).SerializeToString())
    print(f"Pipeline history: {len(history.events)} events, {size} bytes")
    assert size <= PIPELINE_HISTORY_LIMIT
