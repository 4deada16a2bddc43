"""Running workflow branches side by side, all or nothing.

``asyncio.gather`` lets the other branches run on when one fails, so a failed run
would leave activities in flight until their timeouts (and, on the time-skipping
test server, hold its clock). ``gather_all`` cancels the siblings first, which
Temporal turns into activity cancellation requests, then re-raises the failure.
"""

from __future__ import annotations

import asyncio
from collections.abc import Awaitable, Callable, Iterable
from typing import Any, TypeVar, overload

T = TypeVar("T")
A = TypeVar("A")
B = TypeVar("B")
C = TypeVar("C")


@overload
async def gather_all(first: Awaitable[A], second: Awaitable[B], /) -> tuple[A, B]: ...


@overload
async def gather_all(
    first: Awaitable[A], second: Awaitable[B], third: Awaitable[C], /
) -> tuple[A, B, C]: ...


@overload
async def gather_all(*branches: Awaitable[T]) -> tuple[T, ...]: ...


async def gather_all(*branches: Awaitable[Any]) -> tuple[Any, ...]:
    """The results of every branch, in order, or the first failure after the others are
    cancelled."""
    tasks = [asyncio.ensure_future(branch) for branch in branches]
    try:
        return tuple(await asyncio.gather(*tasks))
    except BaseException:
        for task in tasks:
            task.cancel()
        await asyncio.gather(*tasks, return_exceptions=True)
        raise


async def run_bounded(items: Iterable[T], limit: int, work: Callable[[T], Awaitable[None]]) -> None:
    """``work(item)`` for every item, at most ``limit`` at once, in order of start.

    ``limit`` lanes share one iterator, each taking the next item when its last is
    done, so a slow item never holds a free lane back; a failure in ``work`` stops
    every lane (``gather_all``), so ``work`` records what it can forgive itself.
    """
    pending = iter(items)

    async def lane() -> None:
        for item in pending:
            await work(item)

    await gather_all(*(lane() for _ in range(max(1, limit))))


def root_message(error: BaseException) -> str:
    """The innermost cause's message: the one that names the field or the setting."""
    while error.__cause__ is not None:
        error = error.__cause__
    return getattr(error, "message", None) or str(error)
