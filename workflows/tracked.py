"""A run that shows its progress: its phase, each step's state and its usage, in one place.

Every flow's workflow keeps the same three things for its ``progress`` query (see
``workflows/progress.py``) and tracks its steps the same way; ``TrackedRun`` holds
them, so a workflow adds only its own fields and its progress model's extras.
"""

from __future__ import annotations

from collections.abc import Awaitable
from datetime import timedelta
from typing import Any, TypeVar

from temporalio import workflow
from temporalio.types import MethodAsyncSingleParam

with workflow.unsafe.imports_passed_through():
    from activities.group import declared
    from shared.llm.contracts import UsageReport
    from workflows.activity_calls import GroupActivity, Request, Result, run_labelled
    from workflows.progress import RunProgress, StepState, track
    from workflows.resume import Resumable

T = TypeVar("T")
Arg = TypeVar("Arg")
ChildResult = TypeVar("ChildResult")
ProgressT = TypeVar("ProgressT", bound=RunProgress)


class TrackedRun(Resumable):
    """A resumable workflow with a ``phase``, its ``steps`` (``pending`` ones shown from the
    start) and its ``usage``: what its ``progress`` query reports (``progress_as``)."""

    def __init__(self, *pending: str, phase: str = "starting") -> None:
        self.phase = phase
        self.steps: dict[str, StepState] = {name: StepState.PENDING for name in pending}
        self.usage = UsageReport()

    def progress_as(self, model: type[ProgressT], **extra: Any) -> ProgressT:
        """This run's progress as the flow's ``model``, with that model's ``extra`` fields."""
        return model.of(
            self.steps,
            self.usage,
            phase=self.phase,
            waiting=self.waiting_steps(),
            children=self.running_children(),
            **extra,
        )

    async def _step(self, name: str, work: Awaitable[T]) -> T:
        """Await ``work`` while ``name`` shows running, then done or failed."""
        return await track(self.steps, name, work)

    async def _child_step(
        self,
        step: str,
        run: MethodAsyncSingleParam[Any, Arg, ChildResult],
        arg: Arg,
        *,
        child_id: str,
        summary: str,
    ) -> ChildResult:
        """The child run ``child_id`` of ``run``'s flow, shown as ``step``: ``resume`` reaches
        it while it runs, and the progress names it (``children``), so a reader can show the
        step stuck when the child's workflow task keeps failing."""
        self.child_started(child_id, step)
        try:
            return await self._step(
                step, workflow.execute_child_workflow(run, arg, id=child_id, static_summary=summary)
            )
        finally:
            self.child_finished(child_id)

    def _activity_step(
        self,
        activity: GroupActivity[Request, Result],
        request: Request,
        start_to_close: timedelta,
        step: str | None = None,
    ) -> Awaitable[Result]:
        """One activity of the flow's group (``run_labelled``), shown as ``step`` (default:
        its name)."""
        work = run_labelled(activity, request, start_to_close)
        return self._step(step or declared(activity).name, work)
