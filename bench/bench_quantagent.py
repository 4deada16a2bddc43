"""Time offline QuantAgent runs end to end on a running stack (`quantdesk up` first).

Prints the wall time of sequential runs (latency) and of a concurrent batch
(throughput) through the real workers, Temporal server and S3.

    .venv/bin/python bench/bench_quantagent.py [--runs 5] [--concurrent 8]
"""

from __future__ import annotations

import argparse
import asyncio
import os
import statistics
import sys
import time
import uuid
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

from shared.config import load_settings  # noqa: E402
from workers.client import connect  # noqa: E402

SYMBOLS = (("GOOG", "1d"), ("EURUSD", "1h"), ("EURUSD", "4h"), ("BTCUSD", "1mo"))


async def _one(client: object, queue: str, symbol: str, timeframe: str) -> float:
    started = time.perf_counter()
    await client.execute_workflow(  # type: ignore[attr-defined]
        "QuantAgent",
        {"symbol": symbol, "timeframe": timeframe},
        id=f"bench-{symbol}-{uuid.uuid4().hex[:8]}",
        task_queue=queue,
    )
    return time.perf_counter() - started


async def main(runs: int, concurrent: int) -> None:
    settings = load_settings()
    client = await connect(settings)
    queue = settings.queues.workflows
    await _one(client, queue, "GOOG", "1d")  # warm the workers' imports and caches
    latencies = [await _one(client, queue, *SYMBOLS[i % len(SYMBOLS)]) for i in range(runs)]
    print(
        f"sequential: {runs} runs, median {statistics.median(latencies):.2f} s, "
        f"min {min(latencies):.2f} s, max {max(latencies):.2f} s"
    )
    started = time.perf_counter()
    await asyncio.gather(
        *(_one(client, queue, *SYMBOLS[i % len(SYMBOLS)]) for i in range(concurrent))
    )
    elapsed = time.perf_counter() - started
    print(
        f"concurrent: {concurrent} runs in {elapsed:.2f} s "
        f"({concurrent / elapsed:.2f} runs/s, {elapsed / concurrent:.2f} s per run)"
    )


if __name__ == "__main__":
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--runs", type=int, default=5)
    parser.add_argument("--concurrent", type=int, default=8)
    options = parser.parse_args()
    asyncio.run(main(options.runs, options.concurrent))
    sys.stdout.flush()
    os._exit(0)  # sdk-python #300: skip the interpreter teardown that can abort
