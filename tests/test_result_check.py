"""An activity's result that its workflow could not decode fails the activity, never the task.

A workflow task that cannot decode a result fails again on every retry while the run
shows Running. ``CheckResults`` (on every product worker) makes the same result an
activity failure that names the activity, the type and the field.
"""

from __future__ import annotations

import uuid
from datetime import timedelta

import pytest
from pydantic import BaseModel, Field
from temporalio import activity, workflow
from temporalio.client import WorkflowFailureError
from temporalio.common import RetryPolicy
from temporalio.exceptions import ActivityError, ApplicationError
from temporalio.testing import WorkflowEnvironment

with workflow.unsafe.imports_passed_through():
    from activities.group import ActivityGroup
    from activities.llm import LlmActivities
    from activities.result_check import INVALID_RESULT, result_adapter
    from shared.config import load_settings
    from shared.llm.providers import QUEUE_OFFLINE
    from tests.servers import running_workers
    from workers.main import WorkerPlan, activity_groups


class Shortlist(BaseModel):
    """A result with a rule a copy can break."""

    tickers: list[str] = Field(min_length=1)


@activity.defn(name="emptied_shortlist")
async def emptied_shortlist(ticker: str) -> Shortlist:
    """Breaks the rule the way ``model_copy(update=...)`` can: without validation."""
    return Shortlist(tickers=[ticker]).model_copy(update={"tickers": []})


@activity.defn(name="sound_shortlist")
async def sound_shortlist(ticker: str) -> Shortlist:
    """Keeps the rule."""
    return Shortlist(tickers=[ticker])


@workflow.defn(name="ShortlistProbe")
class ShortlistProbe:
    """Calls one of the two activities, retrying it as a product step would."""

    @workflow.run
    async def run(self, activity_name: str) -> list[str]:
        result = await workflow.execute_activity(
            activity_name,
            "GOOG",
            result_type=Shortlist,
            start_to_close_timeout=timedelta(seconds=10),
            retry_policy=RetryPolicy(maximum_attempts=0),
        )
        return result.tickers


async def _run(env: WorkflowEnvironment, activity_name: str) -> list[str]:
    queue = f"result-check-{uuid.uuid4()}"
    plans = [
        WorkerPlan(queue=queue, workflows=[ShortlistProbe]),
        WorkerPlan(queue=queue, activities=[emptied_shortlist, sound_shortlist]),
    ]
    async with running_workers(env.client, plans):
        return await env.client.execute_workflow(
            "ShortlistProbe",
            activity_name,
            id=f"result-check-{uuid.uuid4()}",
            task_queue=queue,
            result_type=list[str],
            execution_timeout=timedelta(seconds=60),
        )


async def test_a_result_that_breaks_its_type_fails_the_activity_once_naming_the_field(
    ts_env: WorkflowEnvironment,
) -> None:
    with pytest.raises(WorkflowFailureError) as caught:
        await _run(ts_env, "emptied_shortlist")

    failure = caught.value.cause
    assert isinstance(failure, ActivityError)
    cause = failure.cause
    assert isinstance(cause, ApplicationError)
    assert cause.type == INVALID_RESULT and cause.non_retryable
    assert "activity emptied_shortlist returned a result that is not a valid Shortlist" in (
        cause.message
    )
    assert "`tickers`" in cause.message and "at least 1 item" in cause.message


async def test_a_sound_result_passes_unchanged(ts_env: WorkflowEnvironment) -> None:
    assert await _run(ts_env, "sound_shortlist") == ["GOOG"]


def test_every_product_activity_declares_a_result_type_the_check_can_read() -> None:
    settings = load_settings()
    found = [LlmActivities(settings, QUEUE_OFFLINE).chat]
    for source in activity_groups(settings):
        found += source.activities() if isinstance(source, ActivityGroup) else [source]

    unreadable = [
        fn.__name__ for fn in found if result_adapter(getattr(fn, "__func__", fn)) is None
    ]

    assert len(found) > 20 and unreadable == []
