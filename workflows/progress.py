"""Step states for the ``progress`` queries, and tracking one step's state while it runs.

Every workflow reports its graph the same way, so the CLI and the Web UI read
all of them alike.
"""

from __future__ import annotations

from collections.abc import Awaitable, MutableMapping
from enum import StrEnum
from typing import Any


class StepState(StrEnum):
    """Where one step of a graph is."""

    PENDING = "pending"
    RUNNING = "running"
    WAITING = "waiting"
    DONE = "done"
    FAILED = "failed"
    SKIPPED = "skipped"


async def track(steps: MutableMapping[str, StepState], name: str, work: Awaitable[Any]) -> Any:
    """Await ``work`` while ``steps[name]`` shows running, then done or failed."""
    steps[name] = StepState.RUNNING
    try:
        result = await work
    except BaseException:
        steps[name] = StepState.FAILED
        raise
    steps[name] = StepState.DONE
    return result
