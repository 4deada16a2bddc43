"""Drawing charts in a process of their own.

Matplotlib holds the GIL for about 0.3 s a chart. In a worker that also runs workflow
tasks and model calls (``quantdesk up`` runs every role in one process), every chart
stalled all of them: a desk of 60 names spent a quarter of its GIL time drawing (measured
with py-spy, issue 39). Drawn in a child process, a chart costs the worker a pickle of its
bars and of the PNG. The child is spawned (never forked from a process running Temporal's
threads) on the first chart and serves every chart after; one child draws one chart at a
time, as ``shared.charts.candles.RENDER_LOCK`` did in-process. A child that died (killed,
out of memory) is replaced on the next chart, and the chart that saw it die fails as
retryable. It exits within a second of the process that started it.
"""

from __future__ import annotations

import multiprocessing
import os
import threading
import time
from collections.abc import Callable
from concurrent.futures import ProcessPoolExecutor
from concurrent.futures.process import BrokenProcessPool
from typing import ParamSpec, TypeVar

from shared.errors import ChartProcessLost

P = ParamSpec("P")
T = TypeVar("T")

PARENT_CHECK_SECONDS = 1.0
_lock = threading.Lock()
_pool: ProcessPoolExecutor | None = None


def _leave_with(parent: int) -> None:
    """In the chart process: exit once ``parent`` has (a worker that exits through
    ``os._exit``, or is killed, never tells its pool's processes to stop)."""

    def watch() -> None:
        while os.getppid() == parent:
            time.sleep(PARENT_CHECK_SECONDS)
        os._exit(0)

    threading.Thread(target=watch, name="parent-watch", daemon=True).start()


def _executor() -> ProcessPoolExecutor:
    global _pool
    with _lock:
        if _pool is None:
            _pool = ProcessPoolExecutor(
                1,
                mp_context=multiprocessing.get_context("spawn"),
                initializer=_leave_with,
                initargs=(os.getpid(),),
            )
        return _pool


def _forget(broken: ProcessPoolExecutor) -> None:
    global _pool
    with _lock:
        if _pool is broken:
            _pool = None
    broken.shutdown(wait=False, cancel_futures=True)


def drawn(draw: Callable[P, T], *args: P.args, **kwargs: P.kwargs) -> T:
    """``draw(*args, **kwargs)`` run in the chart process (a module-level function, picklable
    arguments); its errors are raised here as they were raised there."""
    pool = _executor()
    try:
        return pool.submit(draw, *args, **kwargs).result()
    except BrokenProcessPool as error:
        _forget(pool)
        raise ChartProcessLost(f"the chart process died while drawing ({error})") from None
