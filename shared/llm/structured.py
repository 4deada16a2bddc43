"""Structured output: ask for JSON, find it in the reply, validate it, ask to repair it.

Vendors differ in how (and whether) they enforce a schema, so quantdesk never
trusts them: every reply is parsed and validated against the named pydantic
model on the worker, and a failed validation gets repair turns (the chat
activity's ``REPAIR_TURNS``) that quote the exact errors. Unlike the peers we
never guess a default when parsing fails: what can be derived is derived by the
schema itself, the rest is the model's to fix.
"""

from __future__ import annotations

import functools
import json
from typing import Any

from pydantic import BaseModel, ValidationError

from shared.llm.contracts import ChatMessage


@functools.cache
def _schema_text(model: type[BaseModel]) -> str:
    """``model``'s JSON schema as compact JSON, built once per model: pydantic takes ~5 ms to
    build one here, and every chat call asked for it two or three times."""
    return json.dumps(model.model_json_schema(), separators=(",", ":"))


def json_schema(model: type[BaseModel]) -> dict[str, Any]:
    """``model``'s JSON schema, a fresh copy the caller may change."""
    result: dict[str, Any] = json.loads(_schema_text(model))
    return result


def schema_instruction(model: type[BaseModel]) -> str:
    """The system-prompt paragraph that asks for one JSON object of ``model``."""
    schema = _schema_text(model)
    return (
        f"Answer with exactly one JSON object that validates against the JSON schema of "
        f"`{model.__name__}` below. No prose before or after it, no code fences.\n{schema}"
    )


def with_schema_instruction(
    messages: list[ChatMessage], schema: type[BaseModel] | None
) -> list[ChatMessage]:
    """The messages as sent: with the schema instruction last, when a schema is asked for."""
    if schema is None:
        return messages
    return [*messages, ChatMessage(role="system", content=schema_instruction(schema))]


def extract_json(text: str) -> Any:
    """The JSON value in ``text``: the whole reply, or the outermost ``{...}`` in it."""
    stripped = text.strip()
    try:
        return json.loads(stripped)
    except json.JSONDecodeError:
        pass
    start, end = stripped.find("{"), stripped.rfind("}")
    if start < 0 or end <= start:
        raise ValueError("the reply holds no JSON object")
    try:
        return json.loads(stripped[start : end + 1])
    except json.JSONDecodeError as error:
        raise ValueError(
            f"the JSON in the reply does not parse: {error.msg} at {error.pos}"
        ) from None


def validate_reply(model: type[BaseModel], text: str) -> tuple[dict[str, Any] | None, str | None]:
    """``(validated object, None)`` or ``(None, what is wrong)``; never a guessed value."""
    try:
        value = extract_json(text)
        return model.model_validate(value).model_dump(mode="json"), None
    except ValueError as error:
        if isinstance(error, ValidationError):
            problems = "; ".join(
                f"{'.'.join(map(str, e['loc'])) or '(root)'}: {e['msg']}" for e in error.errors()
            )
            return None, problems
        return None, str(error)


def repair_messages(reply: str, problem: str) -> list[ChatMessage]:
    """The two turns appended for the repair call: the bad reply, and what to fix."""
    return [
        ChatMessage(role="assistant", content=reply),
        ChatMessage(
            role="user",
            content=(
                f"That reply is not valid: {problem}. Reply again with only the corrected "
                "JSON object, keeping your analysis."
            ),
        ),
    ]
