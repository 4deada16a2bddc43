"""Time an offline evaluation of 100 windows, and its overhead per window over a bare analysis.

Starts its own Temporal dev server and S3 server on free ports and runs every
worker in this process (offline provider), so no stack is needed. The windows are
cut from the bundled data (half ^GSPC daily, half EURUSD hourly, seed 0) and
written in QuantAgent's benchmark layout, which is what ``Evaluate`` reads. Three
measurements:

- bare: one QuantAgent workflow at a time on a window's visible bars, started
  directly: what one analysis costs with nothing around it;
- ``Evaluate`` with concurrency 1: its wall time per window minus the bare time is
  the evaluation's own overhead (loading, pages, child start, scoring, plot);
- ``Evaluate`` with ``--concurrency``: windows per second.

    .venv/bin/python bench/bench_evaluate.py [--windows 100] [--concurrency 8] [--bare-runs 20]

With ``QUANTDESK_CODEC__ENABLED=true`` and ``QUANTDESK_CODEC__KEYS`` set, every payload is
encrypted as on an external cluster (``workers.converter``): the same numbers, with the codec.
"""

from __future__ import annotations

import argparse
import asyncio
import os
import statistics
import sys
import tempfile
import time
import uuid
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

from temporalio.api.enums.v1 import EventType  # noqa: E402
from temporalio.client import Client, WorkflowHistory  # noqa: E402
from temporalio.testing import WorkflowEnvironment  # noqa: E402

from activities.llm import LlmActivities  # noqa: E402
from shared.config import Settings  # noqa: E402
from shared.evaluation.sources import CutWindows, cut_windows  # noqa: E402
from shared.evaluation.windows import Window  # noqa: E402
from shared.llm.providers import QUEUE_OFFLINE  # noqa: E402
from tests.servers import evaluate_plans, running_workers, s3_for_tests, tools_reading  # noqa: E402
from tests.test_evaluation import write_benchmark_file  # noqa: E402
from workers.converter import data_converter  # noqa: E402
from workers.main import WorkerPlan  # noqa: E402
from workers.namespace_setup import ensure_search_attributes  # noqa: E402
from workflows.evaluate import EvaluateResult  # noqa: E402
from workflows.quantagent import QuantAgentInput  # noqa: E402

QUEUE = "bench-evaluate"
ASSETS = (("^GSPC", "1d"), ("EURUSD", "1h"))


def _plans(settings: Settings) -> list[WorkerPlan]:
    chat = LlmActivities(settings, QUEUE_OFFLINE).chat
    return evaluate_plans(QUEUE, settings, [WorkerPlan(queue=QUEUE_OFFLINE, activities=[chat])])


def _benchmark_dir(root: Path, windows: int) -> list[Window]:
    """``windows`` windows cut from the bundled data, written in QuantAgent's layout."""
    counts = [windows // len(ASSETS) + (i < windows % len(ASSETS)) for i in range(len(ASSETS))]
    cut = []
    for (symbol, timeframe), count in zip(ASSETS, counts, strict=True):
        spec = CutWindows(symbols=[symbol], timeframe=timeframe, count=count)
        for n, window in enumerate(cut_windows(spec), 1):
            write_benchmark_file(root / symbol / f"{symbol}_{timeframe}_{n}.csv", window.bars)
            cut.append(window)
    return cut


async def _bare(client: Client, window: Window) -> float:
    """One QuantAgent run on the window's visible bars, started directly; its wall time."""
    started = time.perf_counter()
    await client.execute_workflow(
        "QuantAgent",
        QuantAgentInput(
            symbol=window.asset,
            timeframe=window.timeframe,
            bars=window.visible,
            lookback=len(window.visible),
        ),
        id=f"bench-bare-{uuid.uuid4().hex[:8]}",
        task_queue=QUEUE,
    )
    return time.perf_counter() - started


async def _evaluate(
    client: Client, root: Path, concurrency: int
) -> tuple[float, EvaluateResult, WorkflowHistory]:
    """One Evaluate of the directory; its wall time, result and history."""
    started = time.perf_counter()
    handle = await client.start_workflow(
        "Evaluate",
        {"windows": {"kind": "directory", "path": str(root)}, "concurrency": concurrency},
        id=f"bench-eval-{uuid.uuid4().hex[:8]}",
        task_queue=QUEUE,
        result_type=EvaluateResult,
    )
    result = await handle.result()
    return time.perf_counter() - started, result, await handle.fetch_history()


def _timeline(history: WorkflowHistory) -> dict[str, float]:
    """Seconds spent before the first child, after the last one, in and between children."""
    times = {event.event_id: event.event_time.ToDatetime() for event in history.events}
    initiated = [
        times[e.event_id]
        for e in history.events
        if e.event_type == EventType.EVENT_TYPE_START_CHILD_WORKFLOW_EXECUTION_INITIATED
    ]
    closed = [
        times[e.event_id]
        for e in history.events
        if e.event_type == EventType.EVENT_TYPE_CHILD_WORKFLOW_EXECUTION_COMPLETED
    ]
    first, last = (
        history.events[0].event_time.ToDatetime(),
        history.events[-1].event_time.ToDatetime(),
    )
    spans = [(end - begin).total_seconds() for begin, end in zip(initiated, closed, strict=True)]
    gaps = [
        (begin - end).total_seconds() for end, begin in zip(closed, initiated[1:], strict=False)
    ]
    return {
        "before_children": (initiated[0] - first).total_seconds(),
        "after_children": (last - closed[-1]).total_seconds(),
        "child_span": statistics.mean(spans),
        "gap": statistics.mean(gaps) if gaps else 0.0,
    }


async def main(windows: int, concurrency: int, bare_runs: int) -> None:
    temporal = str(Path(sys.executable).parent / "temporal")
    with (
        tempfile.TemporaryDirectory() as tmp,
        s3_for_tests(Path(tmp) / "s3") as settings,
        tools_reading(settings),  # the bench's S3, not the credentials `quantdesk up` wrote
    ):
        root = Path(tmp) / "benchmark"
        cut = _benchmark_dir(root, windows)
        env = await WorkflowEnvironment.start_local(
            data_converter=data_converter(settings), dev_server_existing_path=temporal, ui=False
        )
        await ensure_search_attributes(env.client)
        try:
            async with running_workers(env.client, _plans(settings)):
                client = env.client
                await _bare(client, cut[0])  # warm the imports, caches and connections
                # Windows spread over the whole set, so both assets are in the bare mean.
                sample = [cut[i * len(cut) // bare_runs] for i in range(bare_runs)]
                bare = [await _bare(client, window) for window in sample]
                bare_mean = statistics.mean(bare)
                print(
                    f"bare QuantAgent, one at a time: {bare_runs} runs, mean {bare_mean:.3f} s, "
                    f"median {statistics.median(bare):.3f} s"
                )
                serial, result, history = await _evaluate(client, root, 1)
                per_window = serial / result.summary.windows
                print(
                    f"Evaluate, concurrency 1: {result.summary.windows} windows in {serial:.1f} s "
                    f"= {per_window:.3f} s per window; overhead over bare "
                    f"{per_window - bare_mean:+.3f} s per window ({per_window / bare_mean - 1:+.1%})"
                )
                parts = _timeline(history)
                print(
                    f"  of which: load {parts['before_children']:.2f} s once, score and plot "
                    f"{parts['after_children']:.2f} s once; each child {parts['child_span']:.3f} s "
                    f"from start request to result, {parts['gap']:.3f} s between children"
                )
                wall, result, _ = await _evaluate(client, root, concurrency)
                overall = result.summary.overall
                print(
                    f"Evaluate, concurrency {concurrency}: {result.summary.windows} windows in "
                    f"{wall:.1f} s = {result.summary.windows / wall:.2f} windows/s; "
                    f"accuracy {overall.accuracy:.1%} on {overall.n}, {overall.failed} failed"
                )
        finally:
            await env.shutdown()


if __name__ == "__main__":
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--windows", type=int, default=100)
    parser.add_argument("--concurrency", type=int, default=8)
    parser.add_argument("--bare-runs", type=int, default=20)
    options = parser.parse_args()
    asyncio.run(main(options.windows, options.concurrency, options.bare_runs))
    sys.stdout.flush()
    os._exit(0)  # sdk-python #300: skip the interpreter teardown that can abort
