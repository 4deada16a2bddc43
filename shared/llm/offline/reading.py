"""What the offline engine reads: the request's context and the tool results so far."""

from __future__ import annotations

import json
from typing import Any

from pydantic import BaseModel, Field

from shared.llm.contracts import ChatRequest


class ToolOutput(BaseModel):
    """One tool result the conversation holds, parsed back from its text."""

    name: str
    ok: bool
    data: Any = Field(description="the parsed JSON, or the raw text if it is not JSON")


class OfflineInput(BaseModel):
    """Everything an offline analyst may base its answer on."""

    agent: str
    inputs: dict[str, Any] = Field(description="the agent's inputs, as the request carries them")
    tool_outputs: list[ToolOutput]
    asked: str = Field(description="the last user message: the question being answered")
    has_images: bool


def _parse(text: str) -> Any:
    try:
        return json.loads(text)
    except json.JSONDecodeError:
        return text


def read_request(request: ChatRequest) -> OfflineInput:
    """Collect the context, tool outputs and question of ``request``."""
    outputs = [
        ToolOutput(
            name=message.name or "tool",
            ok=not message.content.startswith("error:"),
            data=_parse(message.content),
        )
        for message in request.messages
        if message.role == "tool"
    ]
    users = [message for message in request.messages if message.role == "user"]
    return OfflineInput(
        agent=request.agent,
        inputs=request.inputs,
        tool_outputs=outputs,
        asked=users[-1].content if users else "",
        has_images=any(message.images for message in request.messages),
    )


def tools_already_called(request: ChatRequest) -> bool:
    """Whether the conversation already holds tool results since the last question."""
    for message in reversed(request.messages):
        if message.role == "tool":
            return True
        if message.role == "user":
            return False
    return False
