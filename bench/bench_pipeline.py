"""Time the Pipeline's wall clock against its critical path and against the sum of its calls.

Every LLM call is given a fixed latency (the offline answer, delayed by ``--latency``
seconds in the ``chat`` activity), so the numbers show what the graph's shape costs:
the four analysts run at once, so the wall time should be near the *critical path*
(the longest analyst's calls, then every debate turn, manager, trader and PM in
sequence) times the latency, far below the *sum* of all calls. Runs in-process on the
time-skipping server with a real S3, like the tests; no stack is needed.

    .venv/bin/python bench/bench_pipeline.py [--latency 0.5] [--rounds 1] [--symbol GOOG]

Not the HTTP fake of ``tests/fakes/llm_server.py`` (yet): a delayed offline answer
measures the same orchestration without configuring a provider's base URL.
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
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

from temporalio import activity  # noqa: E402
from temporalio.contrib.pydantic import pydantic_data_converter  # noqa: E402
from temporalio.testing import WorkflowEnvironment  # noqa: E402

import activities.tools as tool_activities  # noqa: E402
from activities.llm import LlmActivities  # noqa: E402
from activities.market import MARKET_ACTIVITIES  # noqa: E402
from activities.research import ResearchActivities  # noqa: E402
from activities.tools import run_tool_activity  # noqa: E402
from shared.agents.pipeline.roles import ANALYST_AGENTS  # noqa: E402
from shared.data.factory import build_router  # noqa: E402
from shared.llm.contracts import ChatRequest, ChatResponse  # noqa: E402
from shared.llm.providers import QUEUE_OFFLINE  # noqa: E402
from shared.queues import TOOLS_QUEUE  # noqa: E402
from shared.storage.objects import ObjectStore  # noqa: E402
from shared.tools.registry import ToolServices  # noqa: E402
from tests.servers import running_workers, s3_for_tests  # noqa: E402
from workers.main import WorkerPlan  # noqa: E402
from workflows.debates import DebateWorkflow, RiskWorkflow  # noqa: E402
from workflows.pipeline import PipelineResult, PipelineWorkflow  # noqa: E402

QUEUE = "bench-pipeline"


def _delayed_chat(inner: LlmActivities, latency: float) -> object:
    @activity.defn(name="chat")
    async def chat(request: ChatRequest) -> ChatResponse:
        await asyncio.sleep(latency)
        return await inner.chat(request)

    return chat


async def main(latency: float, rounds: int, symbol: str, as_of: str) -> None:
    with tempfile.TemporaryDirectory() as tmp, s3_for_tests(Path(tmp)) as settings:
        env = await WorkflowEnvironment.start_time_skipping(
            data_converter=pydantic_data_converter,
            test_server_existing_path=str(
                Path(sysconfig.get_path("scripts")) / "temporal-test-server"
            ),
        )
        # run_tool reads through the worker's own settings; here, the temporary S3's.
        tool_activities.tool_services = lambda: ToolServices(
            router=build_router(settings), store=ObjectStore.from_settings(settings)
        )
        plans = [
            WorkerPlan(queue=QUEUE, workflows=[PipelineWorkflow, DebateWorkflow, RiskWorkflow]),
            WorkerPlan(
                queue=TOOLS_QUEUE,
                activities=[
                    run_tool_activity,
                    *MARKET_ACTIVITIES,
                    *ResearchActivities(settings).activities(),
                ],
                threads=True,
            ),
            WorkerPlan(
                queue=QUEUE_OFFLINE,
                activities=[_delayed_chat(LlmActivities(settings, QUEUE_OFFLINE), latency)],
            ),
        ]
        try:
            async with running_workers(env.client, plans):
                started = time.perf_counter()
                result = await env.client.execute_workflow(
                    "Pipeline",
                    {
                        "symbol": symbol,
                        "as_of": as_of,
                        "debate_rounds": rounds,
                        "risk_rounds": rounds,
                    },
                    id=f"bench-pipeline-{uuid.uuid4().hex[:8]}",
                    task_queue=QUEUE,
                    result_type=PipelineResult,
                )
                wall = time.perf_counter() - started
        finally:
            await env.shutdown()
    calls = Counter({agent: u.calls for agent, u in result.usage.by_agent.items()})
    longest = max(calls[agent] for agent in ANALYST_AGENTS.values())
    sequential = sum(n for agent, n in calls.items() if agent not in ANALYST_AGENTS.values())
    critical = longest + sequential
    total = sum(calls.values())
    print(f"{symbol} as of {as_of}, {rounds} round(s), {latency:.2f} s per LLM call")
    print(
        f"calls: {total} in all; critical path {critical} "
        f"(longest analyst {longest} + {sequential} in sequence)"
    )
    print(f"wall time      {wall:6.2f} s")
    print(
        f"critical path  {critical * latency:6.2f} s  (wall/critical {wall / (critical * latency):.2f})"
    )
    print(f"sum of calls   {total * latency:6.2f} s  (wall/sum {wall / (total * latency):.2f})")


if __name__ == "__main__":
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--latency", type=float, default=0.5)
    parser.add_argument("--rounds", type=int, default=1)
    parser.add_argument("--symbol", default="GOOG")
    parser.add_argument("--as-of", default="2012-06-01T00:00:00Z")
    options = parser.parse_args()
    asyncio.run(main(options.latency, options.rounds, options.symbol, options.as_of))
    sys.stdout.flush()
    os._exit(0)  # sdk-python #300: skip the interpreter teardown that can abort
