"""The team's language: every agent that writes prose for people is told to write it in the
run's language, on the wire, while what programs read stays canonical.

Each registered agent whose output holds prose (free text, or a schema with text fields)
is sent through the real ``chat`` activity to a stand-in of OpenAI's API in German: the
request that arrives carries the instruction after the agent's own system turn. A German
reply with canonical enums validates into the agent's schema, and an English run's request
is the one it always was.
"""

from __future__ import annotations

import contextlib
import json
from collections.abc import Iterator
from typing import Any

import pytest
from temporalio.exceptions import ApplicationError
from temporalio.testing import ActivityEnvironment

from activities.llm import LlmActivities
from shared.agents.pipeline.schemas import Rating
from shared.agents.schemas import schema_named
from shared.agents.spec import AGENT_SPECS, AgentSpec
from shared.config import Settings, load_settings
from shared.llm.contracts import ChatMessage, ChatRequest, ChatResponse
from shared.llm.language import in_language, language_instruction
from shared.llm.providers import QUEUE_OPENAI
from tests.fakes.llm_server import FakeLlmServer

on_the_loop = pytest.mark.asyncio(loop_scope="session")
KEY = "sk-test-language"


def _writes_prose(spec: AgentSpec[Any, Any]) -> bool:
    """Free text, or a schema with a text field anywhere (a summary, a rationale...)."""
    if spec.schema_name is None:
        return True
    schema = json.dumps(schema_named(spec.schema_name).model_json_schema())
    return '"type": "string"' in schema


PROSE_AGENTS = sorted(name for name, spec in AGENT_SPECS.items() if _writes_prose(spec))


@pytest.fixture
def fake() -> Iterator[FakeLlmServer]:
    with FakeLlmServer() as server:
        yield server


def _settings(fake: FakeLlmServer, **extra: object) -> Settings:
    return load_settings(openai={"api_key": KEY, "base_url": fake.base_url_openai}, **extra)


def _request(spec: AgentSpec[Any, Any], language: str | None) -> ChatRequest:
    return ChatRequest(
        agent=spec.name,
        role=spec.llm_role,
        provider="openai",
        model="gpt-4.1-mini",
        messages=[
            ChatMessage(role="system", content=f"You are {spec.title}. {spec.brief}"),
            ChatMessage(role="user", content="Assess ACME as of 2024-03-28."),
        ],
        response_schema=spec.schema_name,
        language=language,
    )


async def _chat(settings: Settings, request: ChatRequest) -> ChatResponse:
    response: ChatResponse = await ActivityEnvironment().run(
        LlmActivities(settings, QUEUE_OPENAI).chat, request
    )
    return response


def _sent(fake: FakeLlmServer) -> list[dict[str, Any]]:
    messages: list[dict[str, Any]] = fake.last_request.body["messages"]
    return messages


def test_the_prose_agents_are_found() -> None:
    assert {"market_analyst", "bull_researcher", "portfolio_manager"} <= set(PROSE_AGENTS)


@on_the_loop
@pytest.mark.parametrize("agent", PROSE_AGENTS)
async def test_every_prose_agent_is_told_the_language_on_the_wire(
    agent: str, fake: FakeLlmServer
) -> None:
    spec = AGENT_SPECS[agent]
    fake.reply_conforming() if spec.schema_name else fake.reply_text("Ein kurzer Bericht.")

    # What is asked is the point; whether a value of the bare JSON schema also meets the
    # schema's other rules (a stop below its target...) is the repair turns' business.
    with contextlib.suppress(ApplicationError):
        await _chat(_settings(fake), _request(spec, "German"))

    sent = fake.requests[0].body["messages"]
    assert sent[0]["content"].startswith(f"You are {spec.title}.")
    told = [m for m in sent if m["role"] == "system" and m["content"].startswith("Language:")]
    assert told and "in German" in told[0]["content"], sent


@on_the_loop
async def test_the_desks_setting_is_the_default_and_english_adds_nothing(
    fake: FakeLlmServer,
) -> None:
    spec = AGENT_SPECS["market_analyst"]
    fake.reply_conforming()
    await _chat(_settings(fake, language="Deutsch"), _request(spec, None))
    by_setting = _sent(fake)
    fake.reply_conforming()
    await _chat(_settings(fake, language="Deutsch"), _request(spec, "English"))
    english = _sent(fake)

    assert any("in Deutsch" in m["content"] for m in by_setting)
    assert not any("Language:" in m["content"] for m in english)
    assert english[0]["content"] == by_setting[0]["content"]


@on_the_loop
async def test_a_german_reply_with_canonical_enums_still_parses(fake: FakeLlmServer) -> None:
    spec = AGENT_SPECS["portfolio_manager"]
    fake.reply_json(
        {
            "rating": "Buy",
            "executive_summary": "Kaufen: der Umsatz wächst, die Marge steigt.",
            "investment_thesis": "Der Umsatz wächst seit vier Quartalen; das Risiko ist begrenzt.",
            "price_target": 190.0,
            "time_horizon": "3-6 Monate",
        }
    )

    response = await _chat(_settings(fake), _request(spec, "German"))

    decision = schema_named(spec.schema_name or "").model_validate(response.structured)
    assert decision.rating is Rating.BUY  # type: ignore[attr-defined]
    assert decision.executive_summary.startswith("Kaufen")  # type: ignore[attr-defined]


def test_in_language_goes_after_the_system_turns() -> None:
    messages = [
        ChatMessage(role="system", content="You are the trader."),
        ChatMessage(role="user", content="Plan."),
    ]
    told = in_language(messages, "Français")

    assert [m.role for m in told] == ["system", "system", "user"]
    assert told[1].content == language_instruction("Français")
    assert "LONG, SHORT, Buy or Hold" in told[1].content
    assert in_language(messages, "en") == messages and in_language(messages, None) == messages
