"""Heartbeats for long activities, so a dead worker is noticed in seconds.

Temporal retries an attempt whose worker died only when the attempt times out. A
step allowed minutes (a chart render, loading a benchmark, scoring an evaluation)
would sit that long after a ``kill -9``; with a heartbeat timeout of half a minute
the retry starts on a live worker as soon as the beats stop. The beats come from a
side thread (or, for async activities, a task), so the step's own code needs no
changes, and they stop with the step.

The first beat comes after ``BEAT_EVERY_SECONDS``, not at the start: the server counts the
heartbeat timeout from the attempt's start, so an early beat tells it nothing, and most
steps (a model call, a round of tools) end before one is due. Beating at the start cost
the server a call and a write for every activity (4,200 of them in a 100-name desk).
"""

from __future__ import annotations

import asyncio
import contextvars
import inspect
import threading
from collections.abc import AsyncIterator, Callable, Iterator
from contextlib import asynccontextmanager, contextmanager
from functools import wraps
from typing import Any, ParamSpec, TypeVar

from temporalio import activity

BEAT_EVERY_SECONDS = 5.0
"""Well inside the workflows' heartbeat timeout (``workflows.retries.HEARTBEAT``)."""

P = ParamSpec("P")
R = TypeVar("R")


@contextmanager
def keep_alive(every: float = BEAT_EVERY_SECONDS) -> Iterator[None]:
    """Heartbeat every ``every`` seconds until the block ends (see ``heartbeating``)."""
    stop = threading.Event()
    # The activity's context (which heartbeat reads) lives in this thread's context vars.
    context = contextvars.copy_context()

    def beat() -> None:
        while not stop.wait(every):
            try:
                context.run(activity.heartbeat)
            except TimeoutError:
                # The SDK waits 10 s for the worker's event loop to take a beat; on a busy
                # machine it may not, and an uncaught error would end this thread and every
                # later beat. One beat missed is within the heartbeat timeout: beat again.
                continue

    thread = threading.Thread(target=beat, name="heartbeat", daemon=True)
    # A cancelled sync activity gets its CancelledError raised into its thread at any
    # bytecode. Landing inside threading's own start or join, it could leave an internal
    # lock held, and every later thread start in the process then waits for ever (seen:
    # a worker whose shutdown hung on an activity stuck in Thread.start). Shielded, the
    # error is raised once the thread bookkeeping is done.
    with activity.shield_thread_cancel_exception():
        thread.start()
    try:
        yield
    finally:
        with activity.shield_thread_cancel_exception():
            stop.set()
            thread.join()


@asynccontextmanager
async def keep_alive_async(every: float = BEAT_EVERY_SECONDS) -> AsyncIterator[None]:
    """``keep_alive`` for async activities: the beats come from a task on the worker's loop."""

    async def beat() -> None:
        while True:
            await asyncio.sleep(every)
            activity.heartbeat()

    task = asyncio.create_task(beat())
    try:
        yield
    finally:
        task.cancel()


def heartbeating(step: Callable[P, R]) -> Callable[P, R]:
    """Run an activity, sync or async, while it heartbeats (put it below ``@activity.defn``).
    Called as a plain function (a unit test), it just runs."""
    if inspect.iscoroutinefunction(step):

        @wraps(step)
        async def run_async(*args: P.args, **kwargs: P.kwargs) -> Any:
            if not activity.in_activity():
                return await step(*args, **kwargs)  # type: ignore[misc]
            async with keep_alive_async():
                return await step(*args, **kwargs)  # type: ignore[misc]

        return run_async  # type: ignore[return-value]

    @wraps(step)
    def run(*args: P.args, **kwargs: P.kwargs) -> R:
        if not activity.in_activity():
            return step(*args, **kwargs)
        with keep_alive():
            return step(*args, **kwargs)

    return run
