"""The garbage collector's pauses in a process running workflow workers.

A full collection walks every tracked object and stops the thread that triggered it, a
workflow's included; past 2 s Temporal's deadlock detector fails the workflow task
(TMPRL1101). A worker's heap grows with the runs it keeps cached (each run's workflow
modules are imported again in its own sandbox), so the longest pause is a measure of how
many runs one worker process can hold, and the benches print it beside the memory.
"""

from __future__ import annotations

import gc
import time
from dataclasses import dataclass, field
from typing import Any

DEADLOCK_LIMIT_S = 2.0
"""Temporal's Python SDK fails a workflow task that does not yield for this long."""


@dataclass
class GcPauses:
    """Collections seen while installed: the longest pause and the number of full ones."""

    longest_s: float = 0.0
    longest_generation: int = 0
    full_collections: int = 0
    _started: float | None = field(default=None, repr=False)

    def __enter__(self) -> GcPauses:
        gc.callbacks.append(self._seen)
        return self

    def __exit__(self, *_: object) -> None:
        gc.callbacks.remove(self._seen)

    def _seen(self, phase: str, info: dict[str, Any]) -> None:
        if phase == "start":
            self._started = time.perf_counter()
            return
        if self._started is None:
            return
        pause = time.perf_counter() - self._started
        self._started = None
        if info["generation"] == 2:
            self.full_collections += 1
        if pause > self.longest_s:
            self.longest_s, self.longest_generation = pause, info["generation"]

    def line(self) -> str:
        """One line for a bench's table."""
        return (
            f"GC pauses           longest {self.longest_s:.2f} s (generation "
            f"{self.longest_generation}), {self.full_collections} full collections; "
            f"{len(gc.get_objects())} objects tracked now, {gc.get_freeze_count()} frozen "
            f"(a workflow task stopped {DEADLOCK_LIMIT_S:g} s fails as a deadlock)"
        )
