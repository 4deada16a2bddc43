"""What every door that starts a run builds the same way: its workflow id, its as-of time, its LLM
choice and run terms, and the check of its input against the flow's model before anything starts."""

from __future__ import annotations

import uuid
from datetime import UTC, datetime
from typing import Any

from pydantic import BaseModel, ValidationError

from shared.config import Settings
from shared.validation_errors import invalid_input


def run_terms(budget: float | None, tokens: int | None, language: str | None) -> dict[str, Any]:
    """The input fields every flow shares (``workflows.run_terms``), those given."""
    given = {"budget_usd": budget, "budget_tokens": tokens, "language": language}
    return {name: value for name, value in given.items() if value is not None}


def new_workflow_id(*parts: str) -> str:
    """``<parts>-<UTC stamp>-<6 hex>``: readable in the Web UI's list, unique per start."""
    stamp = datetime.now(UTC).strftime("%Y%m%dT%H%M%S")
    return "-".join([*parts, stamp, uuid.uuid4().hex[:6]])


def utc_iso(moment: datetime) -> str:
    """An option's time as ISO 8601; a time given without a zone is taken as UTC."""
    return (moment if moment.tzinfo else moment.replace(tzinfo=UTC)).isoformat()


def llm_choice(settings: Settings, provider: str | None, **models: str | None) -> dict[str, Any]:
    """The ``llm`` input: the provider (default: the settings') and the models given."""
    return {"provider": provider or settings.default_provider, **models}


def check_input(
    model: type[BaseModel], payload: dict[str, Any], *, as_of: datetime | None = None
) -> None:
    """Validate ``payload`` as the workflow will, so a bad option fails at once, without a
    server, naming the field and the value given (``timeframe '7x' is not one of ...``).
    An ``as_of`` given is set first (UTC ISO); none leaves the workflow's default."""
    if as_of is not None:
        payload["as_of"] = utc_iso(as_of)
    try:
        model.model_validate(payload)
    except ValidationError as error:
        raise invalid_input(error) from None
