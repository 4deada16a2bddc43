"""A fake vendor that answers each request by the agent sending it, for whole-flow tests.

A flow's agents call at once (four analysts, three scanners), so one queue of
replies in arrival order would race. ``RoutedFake`` knows an agent by the opening
of its system prompt ("You are the news and macro analyst ..."), which the prompt
builders write from their role tables, and answers from that agent's own script:
queued replies first, then its standing reply, if any. A request from an agent
with nothing left to say gets a 400, so a test can never pass on a reply it did
not script. Every request is kept under its agent, for tests that read what a
later agent was told.

    fake = RoutedFake({"news_analyst": "the news and macro analyst", ...})
    fake.always("news_analyst", Scripted(text="prose, not JSON"))
"""

from __future__ import annotations

from collections import defaultdict, deque
from collections.abc import Mapping
from typing import Any

from tests.fakes.llm_server import (
    WIRE_BY_PATH,
    FakeLlmServer,
    RecordedRequest,
    Scripted,
    Wire,
    _Answer,
    _render,
)


def system_text(body: Mapping[str, Any]) -> str:
    """The request's system prompt, in either wire format."""
    system = body.get("system")
    if isinstance(system, str):
        return system
    if isinstance(system, list):
        return " ".join(block.get("text", "") for block in system)
    return " ".join(
        m["content"] for m in body.get("messages", []) if m["role"] in ("system", "developer")
    )


class RoutedFake(FakeLlmServer):
    """Scripted per agent; ``roles`` maps an agent name to the title its system prompt opens
    with (``You are <title> ...``)."""

    def __init__(self, roles: Mapping[str, str]) -> None:
        super().__init__()
        self.roles = dict(roles)
        self.queued: dict[str, deque[Scripted]] = defaultdict(deque)
        self.standing: dict[str, Scripted] = {}
        self.routed: dict[str, list[RecordedRequest]] = defaultdict(list)

    def on(self, agent: str, *replies: Scripted) -> None:
        """Queue ``replies`` for ``agent``'s next requests, in order."""
        with self._lock:
            self.queued[agent].extend(replies)

    def always(self, agent: str, reply: Scripted) -> None:
        """Answer ``agent`` with ``reply`` whenever nothing is queued for it."""
        with self._lock:
            self.standing[agent] = reply

    def reset(self) -> None:
        """Forget every script and request."""
        with self._lock:
            self.requests.clear()
            self.queued.clear()
            self.standing.clear()
            self.routed.clear()

    def agent_of(self, request: RecordedRequest) -> str:
        """The agent whose system prompt opens the request ("unknown" if none)."""
        system = system_text(request.body or {})
        found = (a for a, title in self.roles.items() if system.startswith(f"You are {title} "))
        return next(found, "unknown")

    def answer(self, request: RecordedRequest) -> _Answer:
        wire = WIRE_BY_PATH.get(request.path, Wire.OPENAI)
        agent = self.agent_of(request)
        with self._lock:
            self.requests.append(request)
            self.routed[agent].append(request)
            queue = self.queued.get(agent)
            script = queue.popleft() if queue else self.standing.get(agent)
        if script is None:
            # 400, not 500: non-retryable, so a gap in a script fails the test at once.
            script = Scripted(status=400, message=f"no scripted reply for {agent!r}")
        return _render(script, wire, request)
