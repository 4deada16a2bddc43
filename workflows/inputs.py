"""Workflow input validation that fails the run, never the workflow task.

Workflows take their input as plain JSON (``Any``) and validate it here. If the
SDK decoded straight into the pydantic model, a bad field would fail the
*workflow task*, which Temporal retries forever while the run looks alive.
Raised from the workflow body, the same problem fails the run at once with a
non-retryable error that names the field.
"""

from __future__ import annotations

from datetime import datetime
from typing import Any, TypeVar

from pydantic import BaseModel, ValidationError
from temporalio import workflow
from temporalio.common import SearchAttributeKey
from temporalio.exceptions import ApplicationError

from shared.validation_errors import describe_validation_error

M = TypeVar("M", bound=BaseModel)
SCHEDULED_START_TIME = SearchAttributeKey.for_datetime("TemporalScheduledStartTime")
"""Set by the server on every run a Schedule starts."""


def parse_input(model: type[M], raw: Any) -> M:
    """``raw`` validated as ``model``; a missing input counts as ``{}``.

    The error names each bad field with the value given, e.g. ``timeframe '7x' is
    not one of '1m', '5m', ...`` (see ``shared.validation_errors``).
    """
    if isinstance(raw, model):
        return raw
    try:
        return model.model_validate({} if raw is None else raw)
    except ValidationError as error:
        raise ApplicationError(
            f"invalid input for {model.__name__}: {describe_validation_error(error)}.",
            type="InvalidInput",
            non_retryable=True,
        ) from None


def scheduled_time() -> datetime | None:
    """The time a Temporal Schedule meant this run to start, if a Schedule started it.

    A run without ``as_of`` reads "the latest data"; a scheduled one reads the latest
    data *at its scheduled time*, so a run that starts late (a worker was down, a
    catch-up after an outage) never sees what happened after the moment it stands for.
    """
    return workflow.info().typed_search_attributes.get(SCHEDULED_START_TIME)
