"""Workflow input validation that fails the run, never the workflow task.

Workflows take their input as plain JSON (``Any``) and validate it here. If the
SDK decoded straight into the pydantic model, a bad field would fail the
*workflow task*, which Temporal retries forever while the run looks alive.
Raised from the workflow body, the same problem fails the run at once with a
non-retryable error that names the field.
"""

from __future__ import annotations

from typing import Any, TypeVar

from pydantic import BaseModel, ValidationError
from temporalio.exceptions import ApplicationError

M = TypeVar("M", bound=BaseModel)


def _describe(error: ValidationError) -> str:
    parts = []
    for item in error.errors():
        field = ".".join(str(part) for part in item["loc"]) or "(input)"
        parts.append(f"`{field}`: {item['msg']}")
    return "; ".join(parts)


def parse_input(model: type[M], raw: Any) -> M:
    """``raw`` validated as ``model``; a missing input counts as ``{}``."""
    if isinstance(raw, model):
        return raw
    try:
        return model.model_validate({} if raw is None else raw)
    except ValidationError as error:
        raise ApplicationError(
            f"invalid input for {model.__name__}: {_describe(error)}.",
            type="InvalidInput",
            non_retryable=True,
        ) from None
