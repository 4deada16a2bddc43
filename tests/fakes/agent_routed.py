"""A ``FakeLlmServer`` that answers QuantAgent's agents by who is asking: each request is routed
by its system prompt (which names the agent's role), by whether it carries tool results, and by
whether it is a repair turn, so the indicator, pattern and trend agents calling at once never
race. With the readers of a request's parts on either wire and a happy path's script."""

from __future__ import annotations

import base64
import json
from collections import defaultdict, deque
from collections.abc import Iterator
from typing import Any

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

# Routes: which agent a request comes from, and which of its turns it is.
INDICATOR = "indicator"
INDICATOR_RESULTS = "indicator_results"
PATTERN = "pattern"
TREND = "trend"
DECISION = "decision"
DECISION_REPAIR = "decision_repair"
# A phrase of each agent's system prompt (shared.agents.quantagent._system), most specific first.
_ROLE_PHRASES = (
    ("technical indicator analyst", INDICATOR),
    ("chart-pattern recognition specialist", PATTERN),
    ("trend and support/resistance analyst", TREND),
    ("decision maker", DECISION),
)
# How shared.llm.structured.repair_messages opens its repair turn.
REPAIR_PHRASE = "That reply is not valid"

INDICATOR_REPORT = (
    "RSI(14) sits near the middle of its range and MACD is above its signal line after a "
    "crossover three bars ago: momentum is modestly up and the indicators agree. [vendor-test]"
)
PATTERN_REPLY = {
    "pattern": "Ascending Triangle",
    "bias": "bullish",
    "confidence": 0.66,
    "analysis": "Higher lows press against a flat ceiling over the last 40 bars.",
}
TREND_REPLY = {
    "prediction": "up",
    "price_action": "bounce",
    "confidence": 0.61,
    "analysis": "Price bounced off close-based support and holds above it.",
}
DECISION_REPLY = {
    "decision": "LONG",
    "forecast_horizon_bars": 3,
    "justification": "MACD crossover, an ascending triangle and a support bounce all agree.",
    "risk_reward_ratio": 1.5,
}


# -- the routing fake ----------------------------------------------------------


def _system_text(body: dict[str, Any], wire: Wire) -> str:
    if wire is Wire.ANTHROPIC:
        system = body.get("system", "")
        return system if isinstance(system, str) else " ".join(b.get("text", "") for b in system)
    return " ".join(m["content"] for m in body.get("messages", []) if m["role"] == "system")


def blocks(body: dict[str, Any]) -> Iterator[dict[str, Any]]:
    """Every content block of every message (string contents yield nothing)."""
    for message in body.get("messages", []):
        if isinstance(message.get("content"), list):
            yield from message["content"]


def user_text(body: dict[str, Any]) -> str:
    """The text of every user turn, in order (either wire)."""
    texts = []
    for message in body.get("messages", []):
        if message["role"] != "user":
            continue
        content = message["content"]
        if isinstance(content, str):
            texts.append(content)
        else:
            texts += [block["text"] for block in content if block.get("type") == "text"]
    return "\n".join(texts)


def assistant_texts(body: dict[str, Any]) -> list[str]:
    """The text of each assistant turn (either wire)."""
    texts = []
    for message in body.get("messages", []):
        if message["role"] != "assistant":
            continue
        content = message["content"]
        if isinstance(content, str):
            texts.append(content)
        else:
            texts.append("".join(b["text"] for b in content if b.get("type") == "text"))
    return texts


def tool_results(body: dict[str, Any], wire: Wire) -> dict[str, str]:
    """Tool call id -> the tool output the request sends back to the model."""
    if wire is Wire.OPENAI:
        return {m["tool_call_id"]: m["content"] for m in body["messages"] if m["role"] == "tool"}
    return {b["tool_use_id"]: b["content"] for b in blocks(body) if b["type"] == "tool_result"}


def offered_tools(body: dict[str, Any], wire: Wire) -> dict[str, dict[str, Any]]:
    """Tool name -> its argument schema, as offered in the request."""
    if wire is Wire.OPENAI:
        assert all(tool["type"] == "function" for tool in body["tools"])
        return {t["function"]["name"]: t["function"]["parameters"] for t in body["tools"]}
    return {tool["name"]: tool["input_schema"] for tool in body["tools"]}


def images(body: dict[str, Any], wire: Wire) -> list[tuple[str, bytes]]:
    """(media type, decoded bytes) of every image in the request."""
    found = []
    for block in blocks(body):
        if wire is Wire.OPENAI and block["type"] == "image_url":
            header, _, data = block["image_url"]["url"].partition(",")
            assert header.startswith("data:") and header.endswith(";base64")
            found.append(
                (header.removeprefix("data:").removesuffix(";base64"), base64.b64decode(data))
            )
        elif wire is Wire.ANTHROPIC and block["type"] == "image":
            assert block["source"]["type"] == "base64"
            found.append((block["source"]["media_type"], base64.b64decode(block["source"]["data"])))
    return found


def route(request: RecordedRequest) -> str:
    """Which agent, and which of its turns, a request is."""
    wire = WIRE_BY_PATH[request.path]
    system = _system_text(request.body, wire)
    agent = next((name for phrase, name in _ROLE_PHRASES if phrase in system), "unknown")
    if agent == INDICATOR and tool_results(request.body, wire):
        return INDICATOR_RESULTS
    if agent == DECISION and REPAIR_PHRASE in user_text(request.body):
        return DECISION_REPAIR
    return agent


class AgentRoutedFake(FakeLlmServer):
    """A FakeLlmServer whose replies are queued per route, so concurrent agents never race."""

    def __init__(self) -> None:
        super().__init__()
        self.replies: dict[str, deque[Scripted]] = defaultdict(deque)
        self.routed: dict[str, list[RecordedRequest]] = defaultdict(list)

    def on(self, name: str, *replies: Scripted) -> None:
        """Queue ``replies`` for the requests of route ``name``, in order."""
        with self._lock:
            self.replies[name].extend(replies)

    def instead(self, name: str, *replies: Scripted) -> None:
        """Replace whatever was queued for route ``name`` with ``replies``."""
        with self._lock:
            self.replies[name] = deque(replies)

    def reset(self) -> None:
        with self._lock:
            self.requests.clear()
            self.replies.clear()
            self.routed.clear()

    def answer(self, request: RecordedRequest) -> _Answer:
        wire = WIRE_BY_PATH.get(request.path)
        name = route(request) if wire is not None and request.body else "unknown"
        with self._lock:
            self.requests.append(request)
            self.routed[name].append(request)
            queue = self.replies.get(name)
            # 400, not the base class's 500: non-retryable, so a gap in a script fails fast.
            script = (
                queue.popleft()
                if queue
                else Scripted(status=400, message=f"no scripted reply for route {name!r}")
            )
        return _render(script, wire or Wire.OPENAI, request)

    def only(self, name: str) -> RecordedRequest:
        """The single request of route ``name``."""
        [request] = self.routed[name]
        return request


# -- scripts -------------------------------------------------------------------


def call_id(provider: str, tool: str) -> str:
    """The id ``provider`` gives its model's first call of ``tool``."""
    return f"{'call_' if provider == 'openai' else 'toolu_'}{tool}_1"


def script_happy_path(fake: AgentRoutedFake, provider: str, *, decision: object = None) -> None:
    """Every agent's replies: two tool calls then a report; the two charts; the decision."""
    fake.on(
        INDICATOR,
        Scripted(
            tool_calls=(
                FakeToolCall("compute_rsi", {"timeperiod": 14}, call_id(provider, "rsi")),
                FakeToolCall("compute_macd", {}, call_id(provider, "macd")),
            )
        ),
    )
    fake.on(INDICATOR_RESULTS, Scripted(text=INDICATOR_REPORT))
    fake.on(PATTERN, Scripted(text=json.dumps(PATTERN_REPLY)))
    fake.on(TREND, Scripted(text=json.dumps(TREND_REPLY)))
    fake.on(DECISION, Scripted(text=json.dumps(decision or DECISION_REPLY)))
