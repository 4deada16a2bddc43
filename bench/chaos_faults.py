"""The chaos bench's faults: a seeded schedule of SIGKILLs, each healed by `quantdesk up`.

The schedule is a sequence drawn from the seed. The first fault is the S3 server,
kept down for the whole outage (so a storage outage longer than the old retry
budget happens in every bench while runs are in flight); the second is the
Temporal dev server; after that the faults come in rounds, each a seeded order of
the four worker roles the runs use, the dev server and the S3 server, each with a
seeded pause before it and a seeded time down. A fault waits for a run in flight,
so none is wasted on an idle stack. The unused LLM roles (openai, anthropic,
compatible) are never picked: killing them would show nothing.

Each fault is timed from the kill: until `up` returned with every component
healthy, and until the first sign of workflow progress after the kill (any
workflow started or closed later than the kill, read from Temporal's visibility
store with the server's own timestamps, so the poll's own rhythm adds nothing).
"""

from __future__ import annotations

import asyncio
import contextlib
import random
import time
from collections.abc import Callable, Iterator
from dataclasses import dataclass, field
from datetime import UTC, datetime

from temporalio.client import Client

from bench.chaos_stack import ChaosStack, CliResult, patiently

S3, TEMPORAL = "s3", "temporal"
WORKER = "worker"
LATER_FAULTS = (WORKER, TEMPORAL, WORKER, S3)
"""After the first two, the faults come in rounds: each of these, in a seeded order. The one
worker process serves every role `up` starts, so it is killed twice a round."""
FIRST_PAUSE_SECONDS = (3.0, 8.0)
"""Into the chaos phase before the first fault: the first run is past its start, not done."""
PAUSE_SECONDS = (2.0, 8.0)
WORKER_DOWN_SECONDS = (0.0, 5.0)
SERVER_DOWN_SECONDS = (0.0, 15.0)
UP_ATTEMPTS = 3
PROGRESS_POLL_SECONDS = 0.5
IN_FLIGHT_POLL_SECONDS = 0.1


@dataclass(frozen=True)
class Fault:
    """One crash: which component, how long after the last recovery, and how long it stays down."""

    component: str
    pause_before: float
    down_for: float


@dataclass(frozen=True)
class Recovery:
    """What one fault cost: kill → every component healthy, kill → workflow progress."""

    fault: Fault
    at: float = 0.0
    """Seconds into the chaos phase when the component was killed."""
    runs_in_flight: int = 0
    """Runs started and not ended when the component was killed."""
    up_calls: tuple[CliResult, ...] = ()
    to_healthy: float | None = None
    """Until an `up` exited 0; None when none did."""
    to_progress: float | None = None
    """Until a workflow started or closed; None when none did (every run was done)."""

    @property
    def healed_by_one_up(self) -> bool:
        """The goal of issue 14: the first `up` after the kill exits 0."""
        return bool(self.up_calls) and self.up_calls[0].returncode == 0


def fault_schedule(seed: int, s3_outage_seconds: float) -> Iterator[Fault]:
    """The seeded faults, endless: the caller stops when its runs are done."""
    rng = random.Random(f"chaos-faults-{seed}")
    yield Fault(S3, rng.uniform(*FIRST_PAUSE_SECONDS), s3_outage_seconds)
    yield Fault(TEMPORAL, rng.uniform(*PAUSE_SECONDS), rng.uniform(*SERVER_DOWN_SECONDS))
    while True:
        for component in rng.sample(LATER_FAULTS, len(LATER_FAULTS)):
            down = WORKER_DOWN_SECONDS if component == WORKER else SERVER_DOWN_SECONDS
            yield Fault(component, rng.uniform(*PAUSE_SECONDS), rng.uniform(*down))


@dataclass(frozen=True)
class Watch:
    """What a fault is timed against: the phase's start, its deadline, and its runs' end."""

    client: Client
    started: float
    deadline: float
    runs_done: asyncio.Event
    in_flight: set[int] = field(default_factory=set)
    """The runs started and not yet ended (kept by the phase that runs them)."""


async def inflict_all(
    stack: ChaosStack, faults: Iterator[Fault], watch: Watch, told: Callable[[Recovery], None]
) -> list[Recovery]:
    """Inflict ``faults`` one after another, each once its pause is over and a run is in
    flight, until every run is done; ``told`` hears each recovery as it ends."""
    recoveries: list[Recovery] = []
    for fault in faults:
        with contextlib.suppress(TimeoutError):
            await asyncio.wait_for(watch.runs_done.wait(), fault.pause_before)
        while not watch.in_flight and not watch.runs_done.is_set():
            await asyncio.sleep(IN_FLIGHT_POLL_SECONDS)
        if watch.runs_done.is_set() or time.monotonic() > watch.deadline:
            return recoveries
        recoveries.append(await inflict(stack, fault, watch))
        told(recoveries[-1])
    return recoveries


async def inflict(stack: ChaosStack, fault: Fault, watch: Watch) -> Recovery:
    """Kill ``fault.component``, leave it down, heal with `up`, and time the recovery."""
    deadline = watch.deadline
    runs_in_flight = len(watch.in_flight)
    await asyncio.to_thread(stack.kill, fault.component)
    killed, killed_at = time.monotonic(), datetime.now(UTC)
    progress = asyncio.create_task(_first_progress(watch, killed_at))
    try:
        await asyncio.sleep(fault.down_for)
        calls: list[CliResult] = []
        while len(calls) < UP_ATTEMPTS and time.monotonic() < deadline:
            calls.append(await stack.quantdesk("up"))
            if calls[-1].returncode == 0:
                break
        healthy = time.monotonic() - killed if calls and calls[-1].returncode == 0 else None
        first = await progress
    finally:
        progress.cancel()
    return Recovery(
        fault=fault,
        at=killed - watch.started,
        runs_in_flight=runs_in_flight,
        up_calls=tuple(calls),
        to_healthy=healthy,
        to_progress=(first - killed_at).total_seconds() if first else None,
    )


async def _first_progress(watch: Watch, since: datetime) -> datetime | None:
    """When the first workflow started or closed after ``since``, by the server's clock;
    None if none did before every run was done (or the deadline)."""
    stamp = since.isoformat(timespec="microseconds").replace("+00:00", "Z")
    query = f'StartTime > "{stamp}" OR CloseTime > "{stamp}"'
    while True:
        last_look = watch.runs_done.is_set() or time.monotonic() > watch.deadline
        moments = await patiently(
            lambda: _moments(watch.client, query, since), "watching for progress", watch.deadline
        )
        if moments or last_look:
            return min(moments, default=None)
        await asyncio.sleep(PROGRESS_POLL_SECONDS)


async def _moments(client: Client, query: str, since: datetime) -> list[datetime]:
    """The starts and closes later than ``since`` of the workflows ``query`` finds."""
    moments = []
    async for execution in client.list_workflows(query, limit=100):
        for moment in (execution.start_time, execution.close_time):
            if moment is not None and moment > since:
                moments.append(moment)
    return moments
