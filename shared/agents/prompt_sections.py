"""The pieces the Pipeline's and the Scan's prompts are made of: a grounded system
message, and headed sections for the user message.

A prompt's user message is Markdown sections (``## heading`` over their body), the
ones a run has nothing for left out; an empty body says so (``not given``) rather
than leaving a bare heading the model may fill in.
"""

from __future__ import annotations

from collections.abc import Iterable

from shared.llm.contracts import ChatMessage

NOT_GIVEN = "not given"

GROUNDING = (
    "Base every statement on the data you are given; never invent values, and say so "
    "wherever the data is marked simulated."
)
"""What every Pipeline and Scan agent is held to, whoever it is."""


def system_message(who: str) -> ChatMessage:
    """The system message of the agent ``who`` (its role and its task's subject)."""
    return ChatMessage(role="system", content=f"You are {who}. {GROUNDING}")


def section(heading: str, body: str) -> str:
    """``body`` under ``## heading``; ``not given`` when it is blank."""
    return f"## {heading}\n{body.strip() or NOT_GIVEN}"


def user_message(sections: Iterable[str | None]) -> ChatMessage:
    """The user message of ``sections``, the absent ones (None or empty) left out."""
    return ChatMessage(role="user", content="\n\n".join(s for s in sections if s))
