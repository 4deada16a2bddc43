"""Calling an activity by reference, on the task queue it declares.

``await run_activity(ResearchActivities.resolve_as_of, request, **durable(...))``: the
activity's name and queue come from its definition (``activities.group.activity_on``),
and mypy checks ``request`` against its parameter and the result against its return
type, for methods of a group and plain functions, sync or async alike.
"""

from __future__ import annotations

from collections.abc import Awaitable
from datetime import timedelta
from typing import Any, TypedDict, TypeVar, Unpack, overload

from temporalio import workflow
from temporalio.common import RetryPolicy
from temporalio.types import (
    CallableAsyncSingleParam,
    CallableSyncSingleParam,
    MethodAsyncSingleParam,
    MethodSyncSingleParam,
)

with workflow.unsafe.imports_passed_through():
    from activities.group import declared, queue_of
    from workflows.retries import durable

Request = TypeVar("Request")
Result = TypeVar("Result")
Group = TypeVar("Group")

GroupActivity = MethodSyncSingleParam[Any, Request, Result]
"""A sync activity method of any group, as workflow helpers take one:
``GroupActivity[ChartRequest, ChartResult]``."""


class CallOptions(TypedDict, total=False):
    """What a call site decides: its timeouts and retries (``workflows.retries.durable``)
    and the label the Web UI shows."""

    start_to_close_timeout: timedelta
    schedule_to_close_timeout: timedelta
    heartbeat_timeout: timedelta | None
    retry_policy: RetryPolicy
    summary: str


@overload
async def run_activity(
    activity: MethodAsyncSingleParam[Group, Request, Result],
    request: Request,
    **options: Unpack[CallOptions],
) -> Result: ...


@overload
async def run_activity(
    activity: MethodSyncSingleParam[Group, Request, Result],
    request: Request,
    **options: Unpack[CallOptions],
) -> Result: ...


@overload
async def run_activity(
    activity: CallableAsyncSingleParam[Request, Result],
    request: Request,
    **options: Unpack[CallOptions],
) -> Result: ...


@overload
async def run_activity(
    activity: CallableSyncSingleParam[Request, Result],
    request: Request,
    **options: Unpack[CallOptions],
) -> Result: ...


async def run_activity(activity: Any, request: Any, **options: Any) -> Any:
    """Run ``activity`` with ``request`` on its declared queue and return its result."""
    return await workflow.execute_activity_method(
        activity, request, task_queue=queue_of(activity), **options
    )


def run_labelled(
    activity: GroupActivity[Request, Result], request: Request, start_to_close: timedelta
) -> Awaitable[Result]:
    """``run_activity`` of a group's step, labelled with the activity's name in the Web UI and
    retried for the whole budget (``durable``) with ``start_to_close`` per attempt."""
    return run_activity(
        activity, request, **durable(start_to_close), summary=declared(activity).name
    )
