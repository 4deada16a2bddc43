"""Metrics: a real `quantdesk worker` process exports them, a real Prometheus scrapes them.

The worker is the CLI's own, a process of its own on the session's dev server and S3, with
``QUANTDESK_METRICS__PORT`` set; Prometheus is Debian's, reading its targets from a file.
An offline AutoRun runs on the worker, and what Prometheus then holds is compared with what
the run says of itself. The worker is then restarted and asked about one of its finished
Pipelines, which it answers by replaying the whole history: nothing it replays is counted.
"""

from __future__ import annotations

import uuid
from collections.abc import Iterator

import pytest
from temporalio.testing import WorkflowEnvironment

from shared.config import Settings
from shared.observability.metrics import (
    DECISIONS,
    METRICS,
    MODEL_CALLS,
    ORDERS,
    SDK_METRICS,
    TOOL_CALLS,
)
from tests.prometheus import Prometheus, running_prometheus
from tests.test_alerts_and_dashboard import dashboard_expressions
from tests.worker_process import WorkerProcess
from workers.metrics_exporter import prometheus_config
from workflows.autorun import AutoRunResult
from workflows.pipeline_contracts import PipelineProgress

ROLES = "workflows,tools,charts,broker,llm-offline"
AS_OF = "2012-06-01T00:00:00Z"
START_TIMEOUT = 90.0


# -- the names ---------------------------------------------------------------------------------


def test_no_name_or_label_has_a_dot_which_the_exporter_would_drop() -> None:
    for metric in METRICS:
        assert "." not in metric.name and all("." not in label for label in metric.labels)
    assert len({metric.name for metric in METRICS}) == len(METRICS)


def test_the_genai_metrics_have_the_conventions_names_as_prometheus_writes_them() -> None:
    names = {metric.exported for metric in METRICS}

    assert {"gen_ai_client_token_usage", "gen_ai_client_operation_duration_seconds"} <= names
    assert MODEL_CALLS.exported == "quantdesk_model_calls_total"


def test_the_naming_choice_is_frozen() -> None:
    config = prometheus_config("127.0.0.1:9")

    assert (config.counters_total_suffix, config.unit_suffix) == (True, False)
    assert config.durations_as_seconds
    assert config.histogram_bucket_overrides is not None
    assert config.histogram_bucket_overrides["gen_ai_client_token_usage"][-1] == 4**11


# -- a worker process, scraped ---------------------------------------------------------------


@pytest.fixture(scope="module")
def prometheus(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Prometheus]:
    with running_prometheus(tmp_path_factory.mktemp("prometheus")) as server:
        yield server


@pytest.fixture(scope="module")
def worker(
    dev_env: WorkflowEnvironment, s3_settings: Settings, tmp_path_factory: pytest.TempPathFactory
) -> Iterator[WorkerProcess]:
    process = WorkerProcess(dev_env, s3_settings, tmp_path_factory.mktemp("metrics"), ROLES)
    process.start()
    yield process
    process.stop()


@pytest.mark.integration
@pytest.mark.asyncio(loop_scope="session")
async def test_prometheus_counts_what_the_run_says_and_a_replay_adds_nothing(
    dev_env: WorkflowEnvironment, worker: WorkerProcess, prometheus: Prometheus
) -> None:
    prometheus.scrape(worker.address)
    # The worker's payload converter (large payloads claim-checked in S3), as a user's CLI has.
    client = await worker.client()
    handle = await client.start_workflow(
        "AutoRun",
        {
            "portfolio": f"metered{uuid.uuid4().hex[:6]}",
            "as_of": AS_OF,
            "max_tickers": 2,
            "analysts": ["market", "fundamentals"],
            "reflect": False,
        },
        id=f"metrics-autorun-{uuid.uuid4().hex[:8]}",
        task_queue=worker.queue,
        result_type=AutoRunResult,
    )
    result = await handle.result()
    calls = result.usage.total.calls
    assert calls > 10 and result.decisions

    ok = f'sum({MODEL_CALLS.exported}{{outcome=~"ok|cached"}})'
    assert prometheus.settles_at(ok, calls) == calls
    decisions = f'sum({DECISIONS.exported}{{flow="pipeline"}})'
    assert prometheus.settles_at(decisions, len(result.decisions)) == len(result.decisions)
    filled = f'sum({ORDERS.exported}{{broker="paper",outcome="filled"}}) or vector(0)'
    assert prometheus.settles_at(filled, result.trades) == result.trades
    tools = prometheus.value(f'sum({TOOL_CALLS.exported}{{outcome="ok"}})')
    assert tools is not None and tools > 0
    ratings = {str(s["metric"]["rating"]) for s in prometheus.query(DECISIONS.exported)}  # type: ignore[index]
    assert ratings == {line.rating.value for line in result.decisions}
    # The SDK's own metrics come through the same endpoint, under its prefix: every one the
    # rules and the dashboard read (but those counting failures, which none happened here).
    exported = worker.exposition()
    for name, on_failure_only in SDK_METRICS.items():
        assert on_failure_only or name in exported, name
    # Every panel of the dashboard is a query this Prometheus answers.
    for title, expr in dashboard_expressions().items():
        answer = prometheus.query(expr)
        print(f"{title}: {[(s['metric'], s['value'][1]) for s in answer]}")  # type: ignore[index]

    worker.stop()
    worker.start()
    pipeline = client.get_workflow_handle(str(result.decisions[0].workflow_id))
    progress = await pipeline.query("progress", result_type=PipelineProgress)  # a full replay

    assert progress.phase == "done"
    exposition = worker.exposition()
    # It ran workflow tasks: the replay of the whole history that answered the query.
    assert "temporal_workflow_task_execution_latency_count" in exposition
    assert DECISIONS.exported not in exposition
    assert MODEL_CALLS.exported not in exposition
