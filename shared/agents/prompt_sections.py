"""The pieces the Pipeline's and the Scan's user prompts are made of: headed sections.

A prompt's user message is Markdown sections (``## heading`` over their body), the
ones a run has nothing for left out; an empty body says so (``not given``) rather
than leaving a bare heading the model may fill in.
"""

from __future__ import annotations

from collections.abc import Iterable

from shared.llm.contracts import ChatMessage

NOT_GIVEN = "not given"


def section(heading: str, body: str) -> str:
    """``body`` under ``## heading``; ``not given`` when it is blank."""
    return f"## {heading}\n{body.strip() or NOT_GIVEN}"


def user_message(sections: Iterable[str | None]) -> ChatMessage:
    """The user message of ``sections``, the absent ones (None or empty) left out."""
    return ChatMessage(role="user", content="\n\n".join(s for s in sections if s))
