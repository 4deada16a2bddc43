"""What every ``progress`` query answers, step states, and tracking one step while it runs.

Every workflow reports its graph the same way (``RunProgress``, which some extend
with their own fields), so ``quantdesk watch``, the CLI's live views and the Web
UI's query tab read all of them alike: the phase, each step's state, how many
are done, what waits for a fix, tokens and cost so far, elapsed time and an
estimate of what is left.
"""

from __future__ import annotations

from collections.abc import Awaitable, Mapping, MutableMapping
from enum import StrEnum
from typing import Any, Self, TypeVar

from pydantic import BaseModel, Field
from temporalio import workflow

with workflow.unsafe.imports_passed_through():
    from shared.agents.missing import MissingStep
    from shared.llm.contracts import UsageReport

T = TypeVar("T")


class StepState(StrEnum):
    """Where one step of a graph is."""

    PENDING = "pending"
    RUNNING = "running"
    WAITING = "waiting"
    DONE = "done"
    FAILED = "failed"
    SKIPPED = "skipped"
    MISSING = "missing"
    """Ran, gave no usable output, and the run went on without it (see the result's missing)."""


FINISHED: frozenset[StepState] = frozenset({StepState.DONE, StepState.SKIPPED, StepState.MISSING})


class RunProgress(BaseModel):
    """A run's progress: the common answer of every workflow's ``progress`` query."""

    phase: str = Field("", description="what the run is doing now")
    steps: dict[str, StepState]
    done: int = Field(description="steps done or skipped (or the flow's own units done)")
    total: int = Field(description="steps known so far (or the flow's own units)")
    waiting: dict[str, str] = Field(
        default_factory=dict, description="calls waiting for `resume`, with the reason"
    )
    children: dict[str, str] = Field(
        default_factory=dict,
        description='running child runs: workflow id → the step it runs as ("" for none), so '
        "a reader can show a step whose child's workflow task keeps failing",
    )
    usage: UsageReport
    elapsed_seconds: float
    estimate_seconds: float | None = Field(
        None, description="time left at the pace so far; None before the first step is done"
    )

    @classmethod
    def of(
        cls,
        steps: Mapping[str, StepState],
        usage: UsageReport,
        *,
        phase: str = "",
        waiting: Mapping[str, str] | None = None,
        children: Mapping[str, str] | None = None,
        done: int | None = None,
        total: int | None = None,
        **extra: Any,
    ) -> Self:
        """The progress of the running workflow (call from its query handler). ``done`` and
        ``total`` count steps unless given in other units (windows, tickers)."""
        if done is None or total is None:
            done = sum(1 for state in steps.values() if state in FINISHED)
            total = len(steps)
        elapsed = (workflow.now() - workflow.info().start_time).total_seconds()
        estimate = elapsed / done * (total - done) if done else None
        return cls(
            phase=phase,
            steps=dict(steps),
            done=done,
            total=total,
            waiting=dict(waiting or {}),
            children=dict(children or {}),
            usage=usage,
            elapsed_seconds=round(elapsed, 1),
            estimate_seconds=round(estimate, 1) if estimate is not None else None,
            **extra,
        )


async def track(steps: MutableMapping[str, StepState], name: str, work: Awaitable[T]) -> T:
    """Await ``work`` while ``steps[name]`` shows running, then done or failed."""
    steps[name] = StepState.RUNNING
    try:
        result = await work
    except BaseException:
        steps[name] = StepState.FAILED
        raise
    steps[name] = StepState.DONE
    return result


def mark_missing(steps: MutableMapping[str, StepState], missing: MissingStep) -> None:
    """Show ``missing.step`` as missing, and log why: the run goes on without it."""
    steps[missing.step] = StepState.MISSING
    workflow.logger.warning("going on without %s: %s", missing.step, missing.reason)
