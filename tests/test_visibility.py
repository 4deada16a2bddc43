"""Runs tag themselves with quantdesk's search attributes, so the Web UI filters by ticker.

On the dev server (real visibility store): a Reflect run started with no attributes
at all is found afterwards by flow and symbol, with its as_of, the way the Web UI's
filter bar finds it.
"""

from __future__ import annotations

import asyncio
import uuid
from collections.abc import AsyncIterator
from datetime import UTC, datetime
from pathlib import Path

import pytest
import pytest_asyncio
from rich.console import Console
from temporalio.testing import WorkflowEnvironment

import cli.follow as cli_follow
import cli.runs as cli_runs
import cli.views as cli_views
from activities.llm import LlmActivities
from activities.reflection import ReflectionActivities
from client.errors import Conflict
from client.runs import visibility_query
from shared.config import Settings, load_settings
from shared.llm.providers import QUEUE_OFFLINE
from shared.queues import TOOLS_QUEUE
from tests.servers import running_workers
from workers.main import WorkerPlan
from workflows.reflect import ReflectResult, ReflectWorkflow
from workflows.visibility import AS_OF, FLOW, SYMBOL

pytestmark = pytest.mark.asyncio(loop_scope="session")
QUEUE = "test-visibility"
AS_OF_TIME = datetime(2011, 3, 1, 20, 0, tzinfo=UTC)


@pytest_asyncio.fixture(scope="module", loop_scope="session")
async def workers(
    dev_env: WorkflowEnvironment, tmp_path_factory: pytest.TempPathFactory
) -> AsyncIterator[None]:
    folder: Path = tmp_path_factory.mktemp("visibility")
    settings = Settings(data_dir=folder, database_url=f"sqlite:///{folder / 'memory.db'}")
    plans = [
        WorkerPlan(queue=QUEUE, workflows=[ReflectWorkflow]),
        WorkerPlan(
            queue=TOOLS_QUEUE, activities=ReflectionActivities(settings).activities(), threads=True
        ),
        WorkerPlan(queue=QUEUE_OFFLINE, activities=[LlmActivities(settings, QUEUE_OFFLINE).chat]),
    ]
    async with running_workers(dev_env.client, plans):
        yield


async def test_a_run_is_found_by_flow_and_symbol(dev_env: WorkflowEnvironment, workers: None):
    workflow_id = f"visible-{uuid.uuid4()}"
    await dev_env.client.execute_workflow(
        "Reflect",
        {
            "source": {"workflow_id": "pipeline-GOOG-old", "run_id": "r1"},
            "symbol": "GOOG",
            "as_of": AS_OF_TIME.isoformat(),
            "situation": "GOOG below its 50-day average after a soft quarter.",
            "decisions": {"trader": {"text": "Buy the dip.", "direction": "Buy"}},
        },
        id=workflow_id,
        task_queue=QUEUE,
        result_type=ReflectResult,
    )

    query = f'QuantdeskFlow = "Reflect" AND Symbol = "GOOG" AND WorkflowId = "{workflow_id}"'
    found = []
    for _ in range(100):  # the visibility store is eventually consistent
        found = [run async for run in dev_env.client.list_workflows(query)]
        if found:
            break
        await asyncio.sleep(0.1)
    [run] = found
    attributes = run.typed_search_attributes
    assert (attributes.get(FLOW), attributes.get(SYMBOL)) == ("Reflect", "GOOG")
    assert attributes.get(AS_OF) == AS_OF_TIME
    other = f'Symbol = "MSFT" AND WorkflowId = "{workflow_id}"'
    assert [r async for r in dev_env.client.list_workflows(other)] == []


async def test_the_runs_filter_quotes_what_it_is_given() -> None:
    assert visibility_query("Pipeline", "goog", None, running=True) == (
        'QuantdeskFlow = "Pipeline" AND Symbol = "GOOG" AND ExecutionStatus = \'Running\''
    )
    assert visibility_query(None, None, 'my "book"', running=False) == (
        'Portfolio = "my \\"book\\""'
    )
    assert visibility_query(None, None, None, running=False) == ""


async def test_runs_watch_and_resume_commands_read_the_server(
    dev_env: WorkflowEnvironment, workers: None, monkeypatch: pytest.MonkeyPatch
) -> None:
    shown = Console(record=True, width=200)
    monkeypatch.setattr(cli_views, "console", shown)
    monkeypatch.setattr(cli_runs, "console", shown)
    monkeypatch.setattr(cli_follow, "console", shown)
    settings = load_settings(temporal={"address": dev_env.client.service_client.config.target_host})
    workflow_id = f"visible-{uuid.uuid4()}"
    await dev_env.client.execute_workflow(
        "Reflect",
        {
            "source": {"workflow_id": "pipeline-GOOG-older", "run_id": "r2"},
            "symbol": "GOOG",
            "as_of": AS_OF_TIME.isoformat(),
            "situation": "GOOG rallied through its 50-day average on heavy volume.",
            "decisions": {"trader": {"text": "Sell the rally.", "direction": "Sell"}},
        },
        id=workflow_id,
        task_queue=QUEUE,
        result_type=ReflectResult,
    )

    assert await cli_runs.watch_run(settings, workflow_id) == 0
    text = shown.export_text()
    assert "measure_outcome" in text and "completed" in text
    listed = ""
    for _ in range(100):  # the visibility store is eventually consistent
        shown.print(await cli_runs.list_runs(settings, 'QuantdeskFlow = "Reflect"', 50))
        listed = shown.export_text()
        if workflow_id in listed:
            break
        await asyncio.sleep(0.1)
    assert workflow_id in listed and "GOOG" in listed
    with pytest.raises(Conflict, match="is completed: nothing to resume"):
        await cli_runs.resume_run(settings, workflow_id)
    assert await cli_runs.watch_run(settings, "no-such-run") == 1
