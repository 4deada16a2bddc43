"""Kill the stack's parts while AutoRuns run; count what completed and compare with a calm run.

Starts an embedded stack of its own (`quantdesk up` through the CLI, a temporary
data dir, free loopback ports, the offline provider) and runs the same N small
AutoRuns twice: first fault-free on books ``base-<i>``, then on books
``chaos-<i>`` while a seeded schedule SIGKILLs workers, the Temporal dev server and
the S3 server (the first fault keeps S3 down for ``--s3-outage-seconds``), each
brought back by `quantdesk up` (see ``bench.chaos_faults``). Every run is small:
two tickers at most, the market and news analysts, two Pipelines at once, no
Reflect, on its own ``as_of`` (a seeded weekday in 2010-2017).

It prints runs completed, the time each fault took to heal (kill → `up` returned
with all healthy, kill → next workflow progress), each book's trades against its
fault-free twin (read from the SQL trades table: an order booked twice shows
there) and each run's ticker → rating against its twin's. Exit status 1 when a
goal is missed: every run completed, every `up` after a kill exited 0, no trade
booked twice, the same trades and decisions, S3 down for the whole outage once.
The stack is stopped at the end whatever happens (`quantdesk down`); its data dir
is kept when a goal is missed, so the runs' histories can be read (`quantdesk up`
with ``QUANTDESK_DATA_DIR`` set to it, then `temporal workflow show`).

    .venv/bin/python bench/bench_chaos.py [--runs 20] [--seed 0] [--s3-outage-seconds 45]
"""

from __future__ import annotations

import argparse
import asyncio
import os
import random
import shutil
import statistics
import sys
import tempfile
import time
from dataclasses import dataclass
from datetime import UTC, date, datetime, timedelta
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

from temporalio.client import (  # noqa: E402
    Client,
    WorkflowFailureError,
    WorkflowHandle,
)
from temporalio.exceptions import WorkflowAlreadyStartedError  # noqa: E402
from temporalio.service import RPCError  # noqa: E402

from bench.chaos_compare import Ledger, rating_mismatches  # noqa: E402
from bench.chaos_faults import (  # noqa: E402
    S3,
    TEMPORAL,
    Recovery,
    Watch,
    fault_schedule,
    inflict_all,
)
from bench.chaos_stack import ChaosStack, CliResult, patiently  # noqa: E402
from shared.agents.pipeline.schemas import AnalystKind  # noqa: E402
from workflows.autorun import AutoRunInput, AutoRunResult  # noqa: E402

FIRST_DAY, LAST_DAY = date(2010, 1, 4), date(2017, 12, 29)
BASE, CHAOS = "base", "chaos"


@dataclass(frozen=True)
class Pace:
    """How a phase starts its runs: one every ``every`` seconds, at most ``parallel`` at once."""

    every: float
    parallel: int


@dataclass(frozen=True)
class RunOutcome:
    """One AutoRun as the bench saw it end."""

    index: int
    workflow_id: str
    seconds: float
    result: AutoRunResult | None = None
    error: str | None = None

    @property
    def ratings(self) -> dict[str, str]:
        """Ticker → rating, and ticker → ``failed`` for a ticker the run gave up on."""
        if self.result is None:
            return {}
        ratings = {d.symbol: d.rating.value for d in self.result.decisions}
        return ratings | {f.symbol: "failed" for f in self.result.failures}


@dataclass(frozen=True)
class Phase:
    """Every run of one phase, and how long the phase took."""

    name: str
    runs: list[RunOutcome]
    seconds: float

    @property
    def completed(self) -> int:
        """Runs that returned a result (a ticker the run gave up on still counts: the run
        completed; the decision comparison shows the ticker as ``failed``)."""
        return sum(1 for run in self.runs if run.result is not None)


def small_run(book: str, as_of: datetime) -> AutoRunInput:
    """One run's input: two tickers at most, two analysts, two Pipelines at once, no Reflect."""
    return AutoRunInput(
        portfolio=book,
        as_of=as_of,
        max_tickers=2,
        analysts=[AnalystKind.MARKET, AnalystKind.NEWS],
        concurrency=2,
        reflect=False,
    )


def as_of_dates(seed: int, count: int) -> list[datetime]:
    """``count`` seeded weekdays in 2010-2017, at 00:00 UTC (how quantdesk labels daily bars)."""
    rng = random.Random(f"chaos-dates-{seed}")
    span = (LAST_DAY - FIRST_DAY).days
    days = []
    for _ in range(count):
        day = FIRST_DAY + timedelta(days=rng.randrange(span))
        while day.weekday() >= 5:
            day -= timedelta(days=1)
        days.append(datetime(day.year, day.month, day.day, tzinfo=UTC))
    return days


async def _start(
    client: Client, stack: ChaosStack, run: AutoRunInput, wf_id: str
) -> WorkflowHandle:
    """Start one AutoRun; a start whose answer was lost to a dead server is found by its id."""
    try:
        return await client.start_workflow(
            "AutoRun",
            run,
            id=wf_id,
            task_queue=stack.settings.queues.workflows,
            result_type=AutoRunResult,
        )
    except WorkflowAlreadyStartedError:
        return client.get_workflow_handle(wf_id, result_type=AutoRunResult)


async def _one_run(
    client: Client, stack: ChaosStack, phase: str, index: int, as_of: datetime, deadline: float
) -> RunOutcome:
    """Start run ``index`` of ``phase`` and wait for its end, across server outages."""
    wf_id = f"chaos-bench-{phase}-{index}"
    run = small_run(f"{phase}-{index}", as_of)
    started = time.monotonic()
    try:
        handle = await patiently(lambda: _start(client, stack, run, wf_id), wf_id, deadline)
        result = await asyncio.wait_for(
            patiently(handle.result, wf_id, deadline), deadline - time.monotonic()
        )
    except WorkflowFailureError as error:
        cause = error.cause
        reason = getattr(cause, "message", None) or str(cause or error)
        return RunOutcome(index, wf_id, time.monotonic() - started, error=f"failed: {reason}")
    except TimeoutError as error:
        return RunOutcome(index, wf_id, time.monotonic() - started, error=f"timed out: {error}")
    except RPCError as error:
        return RunOutcome(index, wf_id, time.monotonic() - started, error=f"refused: {error}")
    return RunOutcome(index, wf_id, time.monotonic() - started, result=result)


async def _phase(
    client: Client,
    stack: ChaosStack,
    name: str,
    dates: list[datetime],
    pace: Pace,
    deadline: float,
    in_flight: set[int],
) -> Phase:
    """Every run of ``name``: run ``i`` starts ``i × pace.every`` seconds in, at most
    ``pace.parallel`` in flight; ``in_flight`` holds the runs started and not ended."""
    gate = asyncio.Semaphore(pace.parallel)
    started = time.monotonic()

    async def bounded(index: int, as_of: datetime) -> RunOutcome:
        await asyncio.sleep(index * pace.every)
        async with gate:
            in_flight.add(index)
            try:
                outcome = await _one_run(client, stack, name, index, as_of, deadline)
            finally:
                in_flight.discard(index)
        state = "completed" if outcome.result else outcome.error
        print(f"  {name}-{index}: {state} in {outcome.seconds:.0f} s", flush=True)
        return outcome

    runs = await asyncio.gather(*(bounded(i, day) for i, day in enumerate(dates)))
    return Phase(name, list(runs), time.monotonic() - started)


def _print_recovery(recovery: Recovery) -> None:
    fault = recovery.fault
    ups = ", ".join(f"exit {up.returncode} in {up.seconds:.0f} s" for up in recovery.up_calls)
    print(
        f"  fault at {recovery.at:.0f} s ({recovery.runs_in_flight} runs in flight): "
        f"{fault.component} down {fault.down_for:.0f} s; "
        f"up: {ups}; kill→healthy {_seconds(recovery.to_healthy)}, "
        f"kill→progress {_seconds(recovery.to_progress)}",
        flush=True,
    )
    for up in recovery.up_calls:
        if up.returncode != 0:
            print(_tail(up), flush=True)


def _seconds(value: float | None) -> str:
    return "-" if value is None else f"{value:.1f} s"


def _tail(result: CliResult, lines: int = 30) -> str:
    return "\n".join((result.stdout + result.stderr).splitlines()[-lines:])


def _spread(values: list[float]) -> str:
    """Median, max and every value, for a handful of timings."""
    if not values:
        return "none"
    return (
        f"median {statistics.median(values):.1f} s, max {max(values):.1f} s "
        f"(n={len(values)}: {', '.join(f'{v:.0f}' for v in values)})"
    )


def _report_runs(base: Phase, chaos: Phase, runs: int) -> bool:
    """Runs completed and how long they took; True when every run of both phases completed."""
    print(
        f"runs completed: fault-free {base.completed}/{runs} in {base.seconds:.0f} s, "
        f"under faults {chaos.completed}/{runs} in {chaos.seconds:.0f} s (goal {runs}/{runs})"
    )
    for phase in (base, chaos):
        took = [run.seconds for run in phase.runs if run.result is not None]
        print(f"  one run, {phase.name}: {_spread(took)}")
        for run in phase.runs:
            if run.error:
                print(f"  {run.workflow_id}: {run.error}")
    return base.completed == runs and chaos.completed == runs


def _report_faults(recoveries: list[Recovery], s3_outage: float) -> bool:
    """Recovery per component killed; True when each `up` healed at once, the S3 outage
    happened and every kind of component was killed while runs were in flight."""
    hit = sorted({r.fault.component for r in recoveries if r.runs_in_flight})
    print(f"faults: {len(recoveries)}; killed while runs were in flight: {', '.join(hit)}")
    for component in sorted({r.fault.component for r in recoveries}):
        mine = [r for r in recoveries if r.fault.component == component]
        healthy = [r.to_healthy for r in mine if r.to_healthy is not None]
        progress = [r.to_progress for r in mine if r.to_progress is not None]
        print(f"  {component} ×{len(mine)}: kill→healthy {_spread(healthy)}")
        print(f"  {' ' * len(component)}    kill→progress {_spread(progress)}")
    healed = sum(r.healed_by_one_up for r in recoveries)
    print(f"`up` after a kill exited 0 the first time: {healed}/{len(recoveries)}")
    outage = any(
        r.fault.component == S3 and r.fault.down_for >= s3_outage and r.runs_in_flight
        for r in recoveries
    )
    print(f"S3 down ≥ {s3_outage:.0f} s while runs were in flight: {'yes' if outage else 'no'}")
    kinds = {S3, TEMPORAL, "worker"} <= {c if c in (S3, TEMPORAL) else "worker" for c in hit}
    print(f"a worker, the dev server and S3 each killed mid-run: {'yes' if kinds else 'no'}")
    return healed == len(recoveries) and outage and kinds


def _report_books(base: Phase, chaos: Phase, ledger: Ledger, runs: int) -> bool:
    """Trades and decisions against the fault-free twins; True when nothing differs."""
    pairs = [(f"{CHAOS}-{i}", f"{BASE}-{i}") for i in range(runs)]
    extra = sum(ledger.extra(book, twin) for book, twin in pairs)
    differing = [(book, twin) for book, twin in pairs if not ledger.same(book, twin)]
    print(
        f"trades: fault-free {sum(ledger.count(twin) for _, twin in pairs)}, under faults "
        f"{sum(ledger.count(book) for book, _ in pairs)}; idempotency keys used twice "
        f"{ledger.keys_used_twice}; trades booked twice {extra} (goal 0); books differing from "
        f"their twin {len(differing)} (goal 0)"
    )
    for book, twin in differing:
        print(f"  {book}: {ledger.fills.get(book, [])}; {twin}: {ledger.fills.get(twin, [])}")
    both = [(b, c) for b, c in zip(base.runs, chaos.runs, strict=True) if b.result and c.result]
    mismatches = {b.index: rating_mismatches(b.ratings, c.ratings) for b, c in both}
    differ = sum(map(len, mismatches.values()))
    compared = sum(len(b.ratings) for b, _ in both)
    print(f"decisions: {compared} ticker ratings compared, {differ} differ (goal 0)")
    for index, found in mismatches.items():
        if found:
            print(f"  run {index}: {'; '.join(found)}")
    return ledger.keys_used_twice == 0 and extra == 0 and not differing and differ == 0


async def _bench(options: argparse.Namespace, stack: ChaosStack) -> bool:
    """Both phases on a stack that is up; True when every goal is met."""
    started = time.monotonic()
    deadline = started + options.timeout_minutes * 60
    dates = as_of_dates(options.seed, options.runs)
    client = await stack.client()
    print(f"fault-free phase: {options.runs} AutoRuns on books {BASE}-<i>", flush=True)
    base = await _phase(client, stack, BASE, dates, Pace(0, options.parallel), deadline, set())
    print(f"chaos phase: the same {options.runs} AutoRuns on books {CHAOS}-<i>", flush=True)
    watch = Watch(client, time.monotonic(), deadline, asyncio.Event())

    async def runs_then_stop() -> Phase:
        try:
            pace = Pace(options.start_every, options.parallel)
            return await _phase(client, stack, CHAOS, dates, pace, deadline, watch.in_flight)
        finally:
            watch.runs_done.set()

    faults = fault_schedule(options.seed, options.s3_outage_seconds)
    # A task group: if either side fails, the other is cancelled before `down` runs.
    async with asyncio.TaskGroup() as group:
        running = group.create_task(runs_then_stop())
        injecting = group.create_task(inflict_all(stack, faults, watch, _print_recovery))
    chaos, recoveries = running.result(), injecting.result()
    ledger = await asyncio.to_thread(Ledger.read, stack.settings)
    print()
    met = [
        _report_runs(base, chaos, options.runs),
        _report_faults(recoveries, options.s3_outage_seconds),
        _report_books(base, chaos, ledger, options.runs),
    ]
    print(f"total wall time: {time.monotonic() - started:.0f} s")
    return all(met)


async def main(options: argparse.Namespace) -> int:
    """Start the stack, run the bench, stop the stack; the exit status."""
    data_dir = Path(tempfile.mkdtemp(prefix="qd-chaos-")) / "data"
    stack = ChaosStack.in_dir(data_dir)
    print(
        f"chaos bench: {options.runs} AutoRuns × 2 (max_tickers 2, analysts market,news, "
        f"concurrency 2, no reflect), {options.parallel} at once, seed {options.seed}; stack in "
        f"{data_dir}, Temporal {stack.settings.temporal.address}, S3 {stack.settings.s3.endpoint}",
        flush=True,
    )
    met = False
    try:
        up = await stack.quantdesk("up")
        print(f"first `up`: exit {up.returncode} in {up.seconds:.0f} s", flush=True)
        if up.returncode != 0:
            print(_tail(up))
            return 1
        met = await _bench(options, stack)
    finally:
        down = await stack.quantdesk("down")
        print(f"`down`: exit {down.returncode}", flush=True)
        if met and not options.keep:
            shutil.rmtree(data_dir.parent, ignore_errors=True)
        else:
            print(f"data dir kept: {data_dir}")
    print("all goals met" if met else "GOAL MISSED")
    return 0 if met else 1


if __name__ == "__main__":
    parser = argparse.ArgumentParser(
        description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter
    )
    parser.add_argument("--runs", type=int, default=20, help="AutoRuns per phase")
    parser.add_argument("--seed", type=int, default=0, help="seeds the dates and the faults")
    parser.add_argument(
        "--s3-outage-seconds", type=float, default=45.0, help="the first fault's S3 outage"
    )
    parser.add_argument("--parallel", type=int, default=4, help="AutoRuns in flight at once")
    parser.add_argument(
        "--start-every",
        type=float,
        default=8.0,
        help="seconds between two starts under faults, so faults meet runs all along "
        "(the fault-free runs start at once)",
    )
    parser.add_argument(
        "--timeout-minutes", type=float, default=60.0, help="the whole bench's deadline"
    )
    parser.add_argument(
        "--keep", action="store_true", help="keep the data dir even when all goals are met"
    )
    status = asyncio.run(main(parser.parse_args()))
    sys.stdout.flush()
    sys.stderr.flush()
    os._exit(status)  # sdk-python #300: skip the interpreter teardown that can abort
