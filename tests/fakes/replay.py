"""A fake vendor that answers each conversation with what the offline analysts answered it.

Record a run with the offline provider (``recording_chat`` wraps the real ``chat``
activity), then run the same flow through a real vendor client against
``ReplayVendor``: every request arrives over HTTP in the vendor's wire format and
gets the recorded reply for its conversation. The flow runs for real (tool calls,
structured output, the whole graph) with real decisions, through the SDKs, at a
latency of your choice, and the vendor can refuse the key until told it is fixed.

A conversation is known by its system prompt, its opening user prompt (each agent's
and each debate turn's differ) and how many tool results it holds, which are the
same on the wire as in the recorded ``ChatRequest``.
"""

from __future__ import annotations

import hashlib
import json
import threading
from collections.abc import Iterable

from temporalio import activity

from activities.llm import LlmActivities
from shared.llm.contracts import ChatRequest, ChatResponse
from tests.fakes.llm_server import (
    WIRE_BY_PATH,
    FakeLlmServer,
    FakeToolCall,
    RecordedRequest,
    Scripted,
    Wire,
    _Answer,
    _render,
)

REFUSED_KEY = Scripted(status=401, message="Incorrect API key provided: {key}.")


def conversation_key(messages: Iterable[tuple[str, str]]) -> str:
    """Which turn of which agent a conversation is (see the module docstring)."""
    pairs = list(messages)
    system = next((content for role, content in pairs if role == "system"), "")
    user = next((content for role, content in pairs if role == "user"), "")
    tools = sum(1 for role, _ in pairs if role == "tool")
    return hashlib.sha256(json.dumps([system, user, tools]).encode()).hexdigest()


def recording_chat(inner: LlmActivities, replies: dict[str, ChatResponse]) -> object:
    """The ``chat`` activity of ``inner``, keeping each reply under its conversation."""

    @activity.defn(name="chat")
    async def chat(request: ChatRequest) -> ChatResponse:
        response = await inner.chat(request)
        replies[conversation_key((m.role, m.content) for m in request.messages)] = response
        return response

    return chat


class ReplayVendor(FakeLlmServer):
    """Answers each conversation with its recorded reply, after ``latency`` seconds.

    While ``key_valid`` is False every request gets a 401, as a revoked key would.
    ``answered`` counts the conversations replied to, so a test can see none was asked
    twice; ``most_in_flight`` is the most requests it held at once.
    """

    def __init__(self, replies: dict[str, ChatResponse], latency: float = 0.0) -> None:
        super().__init__()
        self.replies = replies
        self.latency = latency
        self.key_valid = True
        self.refused = 0
        self.answered: list[str] = []
        self.in_flight = 0
        self.most_in_flight = 0
        self._count = threading.Lock()

    def answer(self, request: RecordedRequest) -> _Answer:
        wire = WIRE_BY_PATH.get(request.path, Wire.OPENAI)
        body = request.body or {}
        key = conversation_key((m["role"], m.get("content") or "") for m in body["messages"])
        with self._count:
            self.requests.append(request)
            if not self.key_valid:
                self.refused += 1
                return _render(REFUSED_KEY, wire, request)
            self.in_flight += 1
            self.most_in_flight = max(self.most_in_flight, self.in_flight)
        try:
            self.stopping.wait(self.latency)
            recorded = self.replies.get(key)
            if recorded is None:
                return _render(Scripted(status=400, message="no recorded reply"), wire, request)
            with self._count:
                self.answered.append(key)
            calls = tuple(FakeToolCall(c.name, c.arguments, c.id) for c in recorded.tool_calls)
            usage = (recorded.usage.input_tokens, recorded.usage.output_tokens)
            return _render(
                Scripted(text=recorded.text, tool_calls=calls, usage=usage), wire, request
            )
        finally:
            with self._count:
                self.in_flight = max(0, self.in_flight - 1)
