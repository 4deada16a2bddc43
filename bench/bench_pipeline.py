"""Time the Pipeline's wall clock against its critical path and against the sum of its calls.

Every LLM call goes over HTTP to the fake vendor of ``tests/fakes/llm_server.py``
through the official OpenAI SDK, and the fake answers each after a fixed
``--latency``. So the numbers show what the graph's shape costs: the four analysts
run at once, so the wall time should be near the *critical path* (the longest
analyst's calls, then every debate turn, manager, trader and PM in sequence) times
the latency, far below the *sum* of all calls (what a sequential graph costs).

It measures ``--runs`` Pipelines one after another on the same workers, after a warm-up
run, and prints each one's ratio to the critical path and their median, with where the
median run's time went (``bench.timeline``): while an LLM call was in flight, in workflow
tasks, in other activities (tools, research), and between them.

What the fake answers is what the offline analysts answered the same prompts in a
first, unmeasured run: the replay is keyed on the conversation as it arrives on the
wire, so the measured run is the real graph with real decisions, and its final
decision must equal the offline one. Runs in-process on the time-skipping server with
a real S3, like the tests; no stack is needed.

    .venv/bin/python bench/bench_pipeline.py [--latency 0.5] [--rounds 1] [--runs 5] [--symbol GOOG] [--stack]
        [--observe off|metrics|tracing]

With ``--stack`` the measured runs go through a stack started as `quantdesk up` starts it (a
temporary data dir on free ports; its workers are processes of their own, its OpenAI role
keyed and pointed at the stand-in), stopped after: the deployed path.

With ``QUANTDESK_CODEC__ENABLED=true`` and ``QUANTDESK_CODEC__KEYS`` set, every payload is
encrypted as on an external cluster (``workers.converter``): the same numbers, with the codec.
"""

from __future__ import annotations

import argparse
import asyncio
import os
import sys
import sysconfig
import tempfile
import time
import uuid
from collections import Counter
from collections.abc import AsyncIterator
from contextlib import asynccontextmanager
from dataclasses import dataclass
from functools import cache
from pathlib import Path
from typing import Any

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

from temporalio.client import Client  # noqa: E402
from temporalio.testing import WorkflowEnvironment  # noqa: E402

import activities.tools as tool_activities  # noqa: E402
from activities.llm import LlmActivities  # noqa: E402
from activities.market import MARKET_ACTIVITIES  # noqa: E402
from activities.research import ResearchActivities  # noqa: E402
from activities.tools import TOOL_ACTIVITIES  # noqa: E402
from bench.timeline import Breakdown, breakdown  # noqa: E402
from shared.agents.pipeline.roles import ANALYST_AGENTS  # noqa: E402
from shared.config import (  # noqa: E402
    ENV_PREFIX,
    MetricsSettings,
    OtelSettings,
    Settings,
    load_settings,
)
from shared.data.factory import build_router  # noqa: E402
from shared.llm.contracts import ChatResponse  # noqa: E402
from shared.llm.providers import QUEUE_OFFLINE, QUEUE_OPENAI  # noqa: E402
from shared.queues import TOOLS_QUEUE  # noqa: E402
from shared.storage.objects import ObjectStore  # noqa: E402
from shared.tools.registry import ToolServices  # noqa: E402
from tests.cli_process import free_stack_base, run_quantdesk, stack_env, stack_settings  # noqa: E402
from tests.fakes.otlp import OtlpReceiver  # noqa: E402
from tests.fakes.replay import ReplayVendor, recording_chat  # noqa: E402
from tests.prometheus import free_port  # noqa: E402
from tests.servers import running_workers, s3_for_tests  # noqa: E402
from workers.client import connect  # noqa: E402
from workers.converter import data_converter  # noqa: E402
from workers.main import WorkerPlan, freeze_startup_heap  # noqa: E402
from workers.metrics_exporter import metrics_runtime  # noqa: E402
from workers.namespace_setup import ensure_search_attributes  # noqa: E402
from workers.tracing import flush_traces, tracing_interceptors  # noqa: E402
from workflows.debates import DebateWorkflow, RiskWorkflow  # noqa: E402
from workflows.pipeline import PipelineWorkflow  # noqa: E402
from workflows.pipeline_contracts import PipelineResult  # noqa: E402

QUEUE = "bench-pipeline"
KEY = "sk-bench-not-a-real-key"


@asynccontextmanager
async def _workers(client: Client, settings: Settings, chat: WorkerPlan) -> AsyncIterator[None]:
    plans = [
        WorkerPlan(
            queue=QUEUE,
            workflows=[PipelineWorkflow, DebateWorkflow, RiskWorkflow],
            sandboxed=settings.workflow_sandbox,
        ),
        WorkerPlan(
            queue=TOOLS_QUEUE,
            activities=[
                *TOOL_ACTIVITIES,
                *MARKET_ACTIVITIES,
                *ResearchActivities(settings).activities(),
            ],
            threads=True,
        ),
        chat,
    ]
    async with running_workers(client, plans):
        yield


async def _pipeline(client: Client, payload: dict[str, Any], queue: str = QUEUE) -> PipelineResult:
    return await client.execute_workflow(
        "Pipeline",
        payload,
        id=f"bench-pipeline-{uuid.uuid4().hex[:8]}",
        task_queue=queue,
        result_type=PipelineResult,
    )


async def _timed(
    client: Client, payload: dict[str, Any], queue: str
) -> tuple[PipelineResult, Breakdown]:
    """One Pipeline, and where its time went by the histories of it and its debates."""
    result = await _pipeline(client, payload, queue)
    ids = [result.workflow_id, *(f"{result.workflow_id}-{step}" for step in ("debate", "risk"))]
    return result, await breakdown(client, ids if result.abort_reason is None else ids[:1])


@dataclass
class Measured:
    """The measured runs (wall seconds and where the time went), the warm-up's seconds, and
    what the stand-in vendor saw."""

    result: PipelineResult
    timed: list[tuple[float, Breakdown]]
    cold: float
    http_requests: int
    most_in_flight: int


async def _measure(
    client: Client, queue: str, measured: dict[str, Any], runs: int, vendor: ReplayVendor
) -> Measured:
    """A warm-up run, then ``runs`` timed ones, one after another."""
    # A desk's chat worker has long paid its one-time costs (the SDK's first imports and
    # client, about 0.2 s here) by the time a Pipeline runs; the measured runs come after.
    started = time.perf_counter()
    await _pipeline(client, measured, queue)
    cold = time.perf_counter() - started
    warm_up = len(vendor.requests)
    timed = []
    for _ in range(runs):
        started = time.perf_counter()
        result, spent = await _timed(client, measured, queue)
        timed.append((time.perf_counter() - started, spent))
    requests = (len(vendor.requests) - warm_up) // runs
    return Measured(result, timed, cold, requests, vendor.most_in_flight)


async def _on_stack(
    replies: dict[str, ChatResponse], latency: float, measured: dict[str, Any], runs: int
) -> Measured:
    """The runs on a stack started as `quantdesk up` starts it (its own data dir and free
    ports), its OpenAI role keyed and pointed at the stand-in; `down` at the end."""
    with (
        tempfile.TemporaryDirectory(prefix="bench-pipeline-") as folder,
        ReplayVendor(replies, latency) as vendor,
    ):
        data_dir = Path(folder) / "data"
        base = free_stack_base(data_dir)
        own, settings = stack_settings(data_dir, base)
        env = stack_env(
            own,
            OPENAI_API_KEY=KEY,
            **{f"{ENV_PREFIX}OPENAI__BASE_URL": vendor.base_url_openai},
        )
        up = run_quantdesk(env, "up")
        try:
            if up.returncode != 0:
                raise SystemExit(f"`up` failed:\n{up.stdout}\n{up.stderr}")
            client = await connect(settings)
            return await _measure(client, settings.queues.workflows, measured, runs, vendor)
        finally:
            run_quantdesk(env, "down")


async def _observed(
    env: WorkflowEnvironment, s3: Settings, observe: str, collector: OtlpReceiver
) -> Client:
    """The client the measured workers run on: the environment's own (``off``), or one of
    the same server exporting Prometheus metrics (``metrics``) or tracing to ``collector``
    (``tracing``), as a worker process does with those settings."""
    if observe == "off":
        return env.client
    runtime = metrics_runtime(MetricsSettings(port=free_port())) if observe == "metrics" else None
    otel = OtelSettings(endpoint=collector.endpoint if observe == "tracing" else None)
    return await Client.connect(
        env.client.service_client.config.target_host,
        namespace=env.client.namespace,
        data_converter=env.client.data_converter,
        runtime=runtime,
        interceptors=tracing_interceptors(otel),
    )


@dataclass(frozen=True)
class Options:
    """The bench's command line."""

    latency: float
    rounds: int
    runs: int
    symbol: str
    as_of: str
    stack: bool
    observe: str = "off"


async def main(options: Options) -> None:
    latency, runs, observe = options.latency, options.runs, options.observe
    rounds = options.rounds
    payload = {
        "symbol": options.symbol,
        "as_of": options.as_of,
        "debate_rounds": rounds,
        "risk_rounds": rounds,
    }
    measured = {**payload, "llm": {"provider": "openai"}}
    replies: dict[str, ChatResponse] = {}
    with tempfile.TemporaryDirectory() as tmp, s3_for_tests(Path(tmp)) as s3:
        env = await WorkflowEnvironment.start_time_skipping(
            data_converter=data_converter(s3),
            test_server_existing_path=str(
                Path(sysconfig.get_path("scripts")) / "temporal-test-server"
            ),
        )
        await ensure_search_attributes(env.client)
        # run_tool reads through the worker's own settings; here, the temporary S3's, built
        # once as a worker builds its own.
        tool_activities.tool_services = cache(
            lambda: ToolServices(router=build_router(s3), store=ObjectStore.from_settings(s3))
        )
        try:
            offline = WorkerPlan(
                queue=QUEUE_OFFLINE,
                activities=[recording_chat(LlmActivities(s3, QUEUE_OFFLINE), replies)],
            )
            async with _workers(env.client, s3, offline):
                recorded = await _pipeline(env.client, payload)
            if not options.stack:
                with ReplayVendor(replies, latency) as vendor, OtlpReceiver() as collector:
                    settings = load_settings(
                        data_dir=s3.data_dir,
                        s3=s3.s3.model_dump(),
                        openai={"api_key": KEY, "base_url": vendor.base_url_openai},
                    )
                    chat = WorkerPlan(
                        queue=QUEUE_OPENAI, activities=[LlmActivities(settings, QUEUE_OPENAI).chat]
                    )
                    client = await _observed(env, s3, observe, collector)
                    async with _workers(client, settings, chat):
                        freeze_startup_heap()  # as a worker process does once it is built
                        outcome = await _measure(client, QUEUE, measured, runs, vendor)
                    flush_traces()
                    seen = (
                        f", {len(collector.spans)} spans received" if observe == "tracing" else ""
                    )
                    print(f"observed: {observe}{seen}")
        finally:
            await env.shutdown()
    if options.stack:
        outcome = await _on_stack(replies, latency, measured, runs)
    _report(outcome, recorded, options)


def _report(outcome: Measured, recorded: PipelineResult, options: Options) -> None:
    latency, runs = options.latency, options.runs
    result = outcome.result
    calls = Counter({agent: u.calls for agent, u in result.usage.by_agent.items()})
    longest = max(calls[agent] for agent in ANALYST_AGENTS.values())
    sequential = sum(n for agent, n in calls.items() if agent not in ANALYST_AGENTS.values())
    critical = longest + sequential
    total = sum(calls.values())
    same = result.decision == recorded.decision
    path = critical * latency
    timed = sorted(outcome.timed, key=lambda run: run[0])
    wall, spent = timed[len(timed) // 2]
    where = "`quantdesk up`'s stack (worker processes)" if options.stack else "in-process workers"
    print(
        f"{options.symbol} as of {options.as_of}, {options.rounds} round(s), {latency:.2f} s per "
        "LLM call over HTTP, "
        f"on {where}"
    )
    print(
        f"calls: {total} in all ({outcome.http_requests} HTTP requests, at most "
        f"{outcome.most_in_flight} at once); critical path {critical} (longest analyst "
        f"{longest} + {sequential} in sequence)"
    )
    print(f"decision {result.decision.rating.value}, identical to the offline run's: {same}")
    print(f"critical path  {path:6.2f} s;  sum of calls {total * latency:6.2f} s")
    ratios = " ".join(f"{w / path:.2f}" for w, _ in timed)
    print(
        f"wall/critical  {ratios}  ({runs} runs, sorted; the warm-up run: "
        f"{outcome.cold / path:.2f})"
    )
    print(
        f"median run     {wall:6.2f} s  (wall/critical {wall / path:.2f}, "
        f"wall/sum {wall / (total * latency):.2f})"
    )
    print(f"where it went  {spent.line()}")


if __name__ == "__main__":
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--latency", type=float, default=0.5)
    parser.add_argument("--rounds", type=int, default=1)
    parser.add_argument("--runs", type=int, default=5, help="measured runs (after a warm-up)")
    parser.add_argument("--symbol", default="GOOG")
    parser.add_argument("--as-of", default="2012-06-01T00:00:00Z")
    parser.add_argument(
        "--stack", action="store_true", help="measure on a stack `quantdesk up` starts"
    )
    parser.add_argument(
        "--observe",
        choices=("off", "metrics", "tracing"),
        default="off",
        help="in-process: the workers export Prometheus metrics, or trace over OTLP to a "
        "receiver on loopback (bench/bench_observability.py compares them)",
    )
    options = parser.parse_args()
    if options.runs < 1:
        parser.error("--runs must be at least 1")
    asyncio.run(main(Options(**vars(options))))
    sys.stdout.flush()
    os._exit(0)  # sdk-python #300: skip the interpreter teardown that can abort
