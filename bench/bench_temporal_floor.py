"""What Temporal alone costs here: the desk's shape of load with nothing of quantdesk in it.

``--chains`` workflows each run ``--steps`` activities one after another, each sleeping
``--latency`` seconds, on a queue limited to ``--rps`` (the server's task-queue limit, as a
provider's ``REQUESTS_PER_SECOND`` sets it). No payload converter of ours, no codec, no S3,
no tools: a workflow task, an activity and a tiny result per step, on the same dev server
(``dev_server_arguments``) and an unsandboxed workflow worker, as ``quantdesk up`` runs them.

It prints the wall time against the bound, the CPU each process spent per step (the dev
server's and this process's, ``bench.cpu_use``), and how long each activity waited from
the server recording its start to its code running. With the desk's numbers
(``bench/bench_desk.py``), it tells what is Temporal's floor on this machine and what is
ours: issue 39's notes (docs/light-desk.md) use it so.

    .venv/bin/python bench/bench_temporal_floor.py [--chains 100] [--steps 16] [--rps 50]
        [--latency 1] [--children 0]

``--children N`` splits each chain's steps over N child runs started in turn, as a
Pipeline's two debates are: the difference in the dev server's CPU is what a child run costs.
"""

from __future__ import annotations

import argparse
import asyncio
import os
import statistics
import sys
import time
import uuid
from dataclasses import dataclass
from datetime import timedelta
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

from temporalio import activity, workflow  # noqa: E402
from temporalio.testing import WorkflowEnvironment  # noqa: E402
from temporalio.worker import UnsandboxedWorkflowRunner, Worker  # noqa: E402

from bench import cpu_use  # noqa: E402
from shared.server_settings import dev_server_arguments  # noqa: E402
from tests.servers import server_binary  # noqa: E402

WORKFLOW_QUEUE = "floor-workflows"
CALL_QUEUE = "floor-calls"
RESULT = "x" * 2000
"""A result about the size of a chat reply kept inline."""
START_LAGS: list[float] = []
"""Seconds from the server's ActivityTaskStarted to each activity's code, as it ran."""


@activity.defn
async def call(latency: float) -> str:
    """A vendor's call: wait ``latency`` seconds, after noting how late it began."""
    START_LAGS.append(time.time() - activity.info().started_time.timestamp())
    await asyncio.sleep(latency)
    return RESULT


@workflow.defn
class Chain:
    """``steps`` calls one after another, or split over ``children`` child runs in turn (as a
    Pipeline's debates are)."""

    @workflow.run
    async def run(self, steps: int, latency: float, children: int) -> int:
        if children:
            for part in range(children):
                share = steps // children + (part < steps % children)
                await workflow.execute_child_workflow(
                    Chain.run, args=[share, latency, 0], task_queue=WORKFLOW_QUEUE
                )
            return steps
        for _ in range(steps):
            await workflow.execute_activity(
                call, latency, task_queue=CALL_QUEUE, start_to_close_timeout=timedelta(minutes=1)
            )
        return steps


@dataclass(frozen=True)
class FloorConfig:
    chains: int
    steps: int
    rps: float
    latency: float
    children: int = 0

    @property
    def calls(self) -> int:
        return self.chains * self.steps

    @property
    def bound(self) -> float:
        """The larger of what the rate limit allows and one chain's calls in sequence."""
        return max(self.calls / self.rps, self.steps * self.latency)


async def run_floor(config: FloorConfig) -> tuple[float, dict[str, float]]:
    """The wall time of every chain, and the CPU each process spent over it."""
    env = await WorkflowEnvironment.start_local(
        dev_server_existing_path=server_binary("temporal"),
        ui=False,
        dev_server_extra_args=dev_server_arguments(),
    )
    try:
        client = env.client
        workers = (
            Worker(
                client,
                task_queue=WORKFLOW_QUEUE,
                workflows=[Chain],
                workflow_runner=UnsandboxedWorkflowRunner(),
            ),
            Worker(
                client,
                task_queue=CALL_QUEUE,
                activities=[call],
                max_concurrent_activities=config.chains,
                max_task_queue_activities_per_second=config.rps,
            ),
        )
        async with workers[0], workers[1]:
            before, started = cpu_use.sample(), time.monotonic()
            handles = [
                await client.start_workflow(
                    Chain.run,
                    args=[config.steps, config.latency, config.children],
                    id=f"floor-{uuid.uuid4()}",
                    task_queue=WORKFLOW_QUEUE,
                )
                for _ in range(config.chains)
            ]
            await asyncio.gather(*(handle.result() for handle in handles))
            return time.monotonic() - started, cpu_use.sample().since(before)
    finally:
        await env.shutdown()


def report(config: FloorConfig, wall: float, cpu: dict[str, float]) -> list[str]:
    """The printed table."""
    per_step = ", ".join(f"{name} {1000 * s / config.calls:.1f}" for name, s in cpu.items())
    lags = sorted(START_LAGS)
    return [
        f"load                {config.chains} chains × {config.steps} steps of "
        f"{config.latency:g} s, {config.rps:g} requests/s"
        + (f", each chain's steps in {config.children} child runs" if config.children else ""),
        f"wall time           {wall:8.2f} s",
        f"bound               {config.bound:8.2f} s; wall/bound {wall / config.bound:.2f}",
        f"{cpu_use.line(cpu, config.calls)}",
        f"CPU per step        {per_step} ms",
        f"start lag           mean {1000 * statistics.mean(lags):.0f} ms, median "
        f"{1000 * statistics.median(lags):.0f}, 95th {1000 * lags[int(0.95 * len(lags))]:.0f}, "
        f"max {1000 * lags[-1]:.0f} (server's start to the activity's code)",
    ]


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--chains", type=int, default=100)
    parser.add_argument("--steps", type=int, default=16)
    parser.add_argument("--rps", type=float, default=50.0, help="the queue's requests/s")
    parser.add_argument("--latency", type=float, default=1.0, help="s per call")
    parser.add_argument(
        "--children", type=int, default=0, help="child runs per chain, its steps split over them"
    )
    args = parser.parse_args()
    if min(args.chains, args.steps) < 1 or min(args.rps, args.latency) <= 0:
        parser.error("--chains and --steps must be at least 1, --rps and --latency positive")
    if not 0 <= args.children <= args.steps:
        parser.error("--children must be from 0 (none) to --steps")
    config = FloorConfig(args.chains, args.steps, args.rps, args.latency, args.children)
    wall, cpu = asyncio.run(run_floor(config))
    print("\n".join(report(config, wall, cpu)), flush=True)
    return 0


if __name__ == "__main__":
    # A process that used a Temporal client can abort at exit (sdk-python #300).
    os._exit(main())
