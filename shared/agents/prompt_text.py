"""An agent's prompt as text: the messages exactly as a run sends them, under a short header.

What ``quantdesk prompt show`` prints and the golden prompt copies in ``tests/prompts/``
hold: the spec's messages over the given inputs, with the schema instruction last, as
the chat activity appends it, and a header naming the agent, its model role, inputs,
schema, tools, and any notes on where the inputs came from. Images are named by their
object key (a run sends the bytes).
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

from pydantic import BaseModel

from shared.agents.spec import AgentSpec
from shared.llm.contracts import ChatMessage
from shared.llm.structured import with_schema_instruction


def _shown(message: ChatMessage) -> str:
    images = "".join(f"\n[image s3://{ref.bucket}/{ref.key}]" for ref in message.images)
    return f"--- {message.role} ---\n{message.content}{images}"


def render_prompt(spec: AgentSpec[Any, Any], inputs: BaseModel, notes: Sequence[str] = ()) -> str:
    """``spec``'s messages over ``inputs`` as text, under its header and ``notes``."""
    header = [
        f"# {spec.name}: {spec.group}, {spec.llm_role.value} model, inputs "
        f"{spec.inputs.__name__}, answers {spec.schema_name or 'prose'}",
        f"# tools offered: {', '.join(spec.tools) or 'none'}",
        *(f"# {note}" for note in notes),
    ]
    sent = with_schema_instruction(spec.messages(inputs), spec.output)
    return "\n".join(header) + "\n\n" + "\n\n".join(map(_shown, sent)) + "\n"
