"""Every activity's result is checked against its declared type before it leaves the worker.

A workflow decodes an activity's result into the type the activity declares. A
result that does not decode (a model built with ``model_copy(update=...)``, which
skips validation, leaving a list empty that must not be) would fail the *workflow
task* instead, which Temporal retries for ever while the run looks alive and its
parent waits. Checked here, the same result is an activity failure that names the
activity, the type and each bad field: non-retryable, since running the same code
on the same request gives the same result, and the workflow handles it like any
other failed step.

The check decodes the result exactly as the workflow will (pydantic JSON, as the
``pydantic_data_converter`` writes and reads it), so it passes what the workflow can
read and refuses what it cannot.
"""

from __future__ import annotations

import typing
from functools import cache
from typing import Any

from pydantic import TypeAdapter, ValidationError
from pydantic_core import to_json
from temporalio import activity
from temporalio.exceptions import ApplicationError
from temporalio.worker import ActivityInboundInterceptor, ExecuteActivityInput, Interceptor

from shared.validation_errors import describe_validation_error

INVALID_RESULT = "InvalidResult"
"""The failure type of an activity whose result does not decode as its declared type."""


@cache
def result_adapter(fn: Any) -> TypeAdapter[Any] | None:
    """The adapter of ``fn``'s declared return type; None when it declares none (or ``None``,
    or ``Any``): there is nothing to hold the result to."""
    declared = typing.get_type_hints(fn).get("return")
    if declared in (None, type(None), Any):
        return None
    return TypeAdapter(declared)


def checked_result(fn: Any, result: Any) -> Any:
    """``result`` if it decodes as ``fn``'s declared return type; else the activity's failure."""
    adapter = result_adapter(getattr(fn, "__func__", fn))
    if adapter is None:
        return result
    try:
        adapter.validate_json(to_json(result))
    except ValidationError as error:
        name = activity.info().activity_type
        raise ApplicationError(
            f"activity {name} returned a result that is not a valid {error.title}: "
            f"{describe_validation_error(error)}. This is a bug in the activity's code: "
            "fix it, then reset or restart the run.",
            type=INVALID_RESULT,
            non_retryable=True,
        ) from None
    return result


class _CheckedInbound(ActivityInboundInterceptor):
    async def execute_activity(self, input: ExecuteActivityInput) -> Any:
        return checked_result(input.fn, await super().execute_activity(input))


class CheckResults(Interceptor):
    """Installed on every worker that runs activities (see the module docstring)."""

    def intercept_activity(self, next: ActivityInboundInterceptor) -> ActivityInboundInterceptor:
        return _CheckedInbound(next)
