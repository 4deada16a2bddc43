"""Prompts cut to fit a small model's context window: what is cut first, what never is, the
error when nothing more can be cut, and the ``chat`` activity doing it against a server that
refuses an over-long prompt the way llama.cpp does."""

from __future__ import annotations

from collections.abc import Iterator

import pytest
from temporalio.exceptions import ApplicationError
from temporalio.testing import ActivityEnvironment

from activities.llm import OVERFLOW_RESIZES, LlmActivities
from shared.config import load_settings
from shared.llm.contracts import ChatMessage, ChatRequest
from shared.llm.prompt_budget import (
    KEPT_CHARS,
    LETTERS_PER_TOKEN,
    PromptTooLong,
    estimated_tokens,
    fit_to_context,
    server_overflow,
    text_tokens,
)
from shared.llm.providers import QUEUE_COMPATIBLE
from tests.fakes.llm_server import FakeLlmServer

SYSTEM = ChatMessage(role="system", content="You are the indicator analyst. " * 20)
TASK = ChatMessage(role="user", content="Analyse GOOG on the daily bars.")
LLAMA_OVERFLOW = (
    "request (6120 tokens) exceeds the available context size (4096 tokens), try increasing it"
)


def _tool(name: str, chars: int) -> ChatMessage:
    return ChatMessage(role="tool", name=name, tool_call_id=name, content=f"{name}:" + "7" * chars)


@pytest.mark.parametrize(
    "text",
    ["", "RSI 28.4, MACD -0.12", "Überblick: Kurs 12,5 € → 13 ×2 日本\u00a0ok\t\n", "½²_[]"],
)
def test_every_character_counts_as_a_letter_or_space_or_a_symbol_as_written(text: str) -> None:
    symbols = sum(1 for char in text if not (char.isalpha() or char.isspace()))

    assert text_tokens(text) == symbols + (len(text) - symbols) / LETTERS_PER_TOKEN


def test_a_prompt_that_fits_is_sent_as_it_is() -> None:
    messages = [SYSTEM, TASK, _tool("rsi", 500)]

    fitted, cut = fit_to_context(messages, budget_tokens=10_000, setting="S", fix="")

    assert fitted == messages and cut == 0


def test_tool_results_are_cut_first_oldest_first_and_system_messages_never() -> None:
    messages = [SYSTEM, TASK, _tool("macd", 6000), _tool("rsi", 6000)]
    budget = estimated_tokens(messages) - 1000

    fitted, cut = fit_to_context(messages, budget_tokens=budget, setting="S", fix="")

    # just enough is cut: within the marker's size of the budget
    assert budget - 50 <= estimated_tokens(fitted) <= budget
    assert fitted[0] == SYSTEM and fitted[1] == TASK
    assert len(fitted[2].content) < 6000 and fitted[3] == messages[3]
    assert fitted[2].content.startswith("macd:777")
    assert "characters cut to fit the model's context window" in fitted[2].content
    assert cut == len(messages[2].content) - len(fitted[2].content)


def test_cutting_moves_on_to_assistant_then_user_turns_keeping_a_head_of_each() -> None:
    long_reply = ChatMessage(role="assistant", content="My notes. " * 400)
    long_task = ChatMessage(role="user", content="Read this digest. " * 400)
    messages = [SYSTEM, long_task, long_reply, _tool("rsi", 2000)]
    budget = estimated_tokens(messages) - 2000

    fitted, _ = fit_to_context(messages, budget_tokens=budget, setting="S", fix="")

    assert estimated_tokens(fitted) <= budget
    assert len(fitted[3].content) <= KEPT_CHARS["tool"] + 100
    assert len(fitted[2].content) < len(long_reply.content)
    assert fitted[1].content.startswith("Read this digest.")


def test_a_prompt_that_cannot_fit_names_the_numbers_and_the_fix() -> None:
    messages = [SYSTEM, TASK, _tool("rsi", 4000)]

    with pytest.raises(PromptTooLong) as caught:
        fit_to_context(
            messages, budget_tokens=50, setting="QUANTDESK_X__CONTEXT_TOKENS", fix="Raise it."
        )

    assert "50 are available" in caught.value.message
    assert caught.value.setting == "QUANTDESK_X__CONTEXT_TOKENS"
    assert caught.value.fix == "Raise it."


def test_the_servers_overflow_refusal_says_how_much_smaller() -> None:
    assert server_overflow(LLAMA_OVERFLOW) == (6120, 4096)
    assert server_overflow("rejected the request (HTTP 400): unknown field") is None


# -- in the chat activity -----------------------------------------------------------------


@pytest.fixture
def fake() -> Iterator[FakeLlmServer]:
    with FakeLlmServer() as server:
        yield server


def _activities(fake: FakeLlmServer, **llamacpp: object) -> LlmActivities:
    settings = load_settings(llamacpp={"base_url": fake.base_url_openai, **llamacpp})
    return LlmActivities(settings, QUEUE_COMPATIBLE)


def _request(*messages: ChatMessage) -> ChatRequest:
    return ChatRequest(agent="indicator_agent", provider="llamacpp", messages=list(messages))


def _sent_chars(fake: FakeLlmServer, index: int) -> int:
    return sum(len(m["content"]) for m in fake.requests[index].body["messages"])


async def test_the_activity_cuts_a_long_prompt_and_caps_the_reply() -> None:
    with FakeLlmServer() as fake:
        fake.reply_text("RSI is high.")
        activities = _activities(fake, context_tokens=2048, reply_tokens=512)

        response = await ActivityEnvironment().run(
            activities.chat, _request(SYSTEM, TASK, _tool("rsi", 12_000))
        )

    body = fake.last_request.body
    assert body["max_tokens"] == 512
    assert _sent_chars(fake, 0) < 12_000
    assert response.usage.trimmed_prompts == 1
    assert response.text == "RSI is high."


async def test_a_server_overflow_refusal_cuts_the_prompt_again_by_its_ratio(
    fake: FakeLlmServer,
) -> None:
    fake.fail(400, LLAMA_OVERFLOW)
    fake.reply_text("RSI is high.")
    activities = _activities(fake, context_tokens=4096, reply_tokens=512)

    response = await ActivityEnvironment().run(
        activities.chat, _request(SYSTEM, TASK, _tool("rsi", 9_000))
    )

    assert len(fake.requests) == 2
    # the server counted 6120 tokens; 4096 - 512 leave room for the reply
    assert _sent_chars(fake, 1) < _sent_chars(fake, 0) * (4096 - 512) / 6120
    assert response.text == "RSI is high."


async def test_a_server_that_keeps_refusing_is_cut_again_only_so_often(
    fake: FakeLlmServer,
) -> None:
    # A little over each time: every cut leaves a prompt that could still be sent.
    slightly_over = LLAMA_OVERFLOW.replace("6120 tokens", "3700 tokens")
    for _ in range(OVERFLOW_RESIZES + 1):
        fake.fail(400, slightly_over)
    fake.reply_text("never reached")
    activities = _activities(fake, context_tokens=4096, reply_tokens=512)

    with pytest.raises(ApplicationError) as caught:
        await ActivityEnvironment().run(
            activities.chat, _request(SYSTEM, TASK, _tool("rsi", 9_000))
        )

    # the first try and one per resize, then the server's own refusal stands
    assert len(fake.requests) == OVERFLOW_RESIZES + 1
    assert "exceeds the available context size" in str(caught.value)


async def test_a_prompt_that_cannot_fit_fails_without_retry_and_without_a_call(
    fake: FakeLlmServer,
) -> None:
    huge_system = ChatMessage(role="system", content="Rules. " * 3000)
    activities = _activities(fake, context_tokens=1024, reply_tokens=512)

    with pytest.raises(ApplicationError) as caught:
        await ActivityEnvironment().run(activities.chat, _request(huge_system, TASK))

    assert caught.value.non_retryable
    assert caught.value.type == "PromptTooLong"  # a run waits for resume (RESUMABLE_FAILURES)
    assert "QUANTDESK_LLAMACPP__CONTEXT_TOKENS, now 1024" in str(caught.value)
    assert fake.requests == []


async def test_a_provider_without_a_window_is_never_cut(fake: FakeLlmServer) -> None:
    fake.reply_text("fine")
    settings = load_settings(ollama={"base_url": fake.base_url_openai})
    request = ChatRequest(
        agent="indicator_agent", provider="ollama", messages=[SYSTEM, TASK, _tool("rsi", 30_000)]
    )

    response = await ActivityEnvironment().run(
        LlmActivities(settings, QUEUE_COMPATIBLE).chat, request
    )

    assert _sent_chars(fake, 0) > 30_000
    assert "max_tokens" not in fake.last_request.body
    assert response.usage.trimmed_prompts == 0
