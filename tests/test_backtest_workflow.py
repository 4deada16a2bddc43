"""The Backtest workflow offline: time-skipping server, real S3, real SQLite memory, real data.

A three-step Pipeline walk over GOOG's bundled January 2010 bars (market analyst
only, to stay quick) checks the order that keeps memory honest: each step's
lessons are recorded before the next step starts, and a step's prompts hold
lessons of earlier steps only. A QuantAgent walk checks the other flow and the
no-short rule; bad input fails naming the field.
"""

from __future__ import annotations

import re
import urllib.request
import uuid
from collections.abc import AsyncIterator
from datetime import UTC, date, datetime
from pathlib import Path
from typing import Any

import pytest
import pytest_asyncio
from rich.console import Console
from sqlalchemy import create_engine, select
from temporalio.api.enums.v1 import EventType
from temporalio.client import WorkflowFailureError
from temporalio.exceptions import ApplicationError
from temporalio.testing import WorkflowEnvironment

import activities.tools as tool_activities
import cli.backtest as cli_backtest
import cli.views as cli_views
from activities.backtest import BacktestActivities
from activities.charts import ChartActivities
from activities.llm import LlmActivities
from activities.market import MARKET_ACTIVITIES
from activities.reflection import ReflectionActivities
from activities.research import ResearchActivities
from activities.tools import TOOL_ACTIVITIES
from shared.backtest import Position, buy_and_hold, performance, position_for
from shared.config import Settings
from shared.data.bundled import BundledVendor
from shared.data.local import LocalVendor
from shared.data.router import DEFAULT_ROUTES, DataRouter
from shared.data.sim import SimVendor
from shared.llm.providers import QUEUE_OFFLINE
from shared.market.sources import BundledSource
from shared.memory import MemoryStore
from shared.memory.schema import memories
from shared.queues import CHARTS_QUEUE, TOOLS_QUEUE
from shared.storage.objects import ObjectStore
from shared.tools.registry import ToolServices
from tests.servers import running_workers
from workers.main import WorkerPlan
from workflows.backtest import BacktestProgress, BacktestResult, BacktestWorkflow
from workflows.debates import DebateWorkflow, RiskWorkflow
from workflows.pipeline import PipelineWorkflow
from workflows.pipeline_contracts import PipelineResult
from workflows.quantagent import QuantAgentWorkflow
from workflows.reflect import ReflectWorkflow

pytestmark = pytest.mark.asyncio(loop_scope="session")
QUEUE = "test-backtest"
# 2010-01-04 .. 2010-01-20 holds 12 GOOG bars (18 January was a holiday): steps on the 4th,
# the 11th and the 19th, one every 5 bars.
WALK = {
    "symbol": "GOOG",
    "start": "2010-01-04",
    "end": "2010-01-20",
    "every": 5,
    "analysts": ["market"],
}
STEP_DATES = [date(2010, 1, 4), date(2010, 1, 11), date(2010, 1, 19)]
RECALLED = re.compile(r"^\d+\. (\d{4}-\d{2}-\d{2}) ", re.M)
"""A recalled lesson's line in a prompt starts with the date of the decision it grades."""


@pytest.fixture(scope="module")
def folder(tmp_path_factory: pytest.TempPathFactory) -> Path:
    return tmp_path_factory.mktemp("backtest")


@pytest.fixture(scope="module")
def memory_url(folder: Path) -> str:
    return f"sqlite:///{folder / 'memory.db'}"


@pytest_asyncio.fixture(scope="module", loop_scope="session")
async def workers(
    ts_env: WorkflowEnvironment, s3_settings: Settings, memory_url: str, folder: Path
) -> AsyncIterator[None]:
    (folder / "data").mkdir()
    router = DataRouter(
        {
            "local": LocalVendor(folder / "data"),  # no files: every kind falls through
            "bundled": BundledVendor(),
            "sim": SimVendor(seed=s3_settings.data_seed),
        },
        DEFAULT_ROUTES,
    )
    store = ObjectStore.from_settings(s3_settings)
    memory = MemoryStore(memory_url)
    backtest = BacktestActivities(s3_settings, router=router, store=store)
    plans = [
        WorkerPlan(
            queue=QUEUE,
            workflows=[
                BacktestWorkflow,
                PipelineWorkflow,
                DebateWorkflow,
                RiskWorkflow,
                ReflectWorkflow,
                QuantAgentWorkflow,
            ],
        ),
        WorkerPlan(
            queue=TOOLS_QUEUE,
            activities=[
                *TOOL_ACTIVITIES,
                *MARKET_ACTIVITIES,
                *ResearchActivities(
                    s3_settings, router=router, memory=memory, store=store
                ).activities(),
                *ReflectionActivities(s3_settings, router=router, memory=memory).activities(),
                *backtest.activities(TOOLS_QUEUE),
            ],
            threads=True,
        ),
        WorkerPlan(
            queue=CHARTS_QUEUE,
            activities=[
                *ChartActivities(s3_settings, store=store).activities(),
                *backtest.activities(CHARTS_QUEUE),
            ],
            threads=True,
        ),
        WorkerPlan(
            queue=QUEUE_OFFLINE, activities=[LlmActivities(s3_settings, QUEUE_OFFLINE).chat]
        ),
    ]
    with pytest.MonkeyPatch.context() as patch:
        # run_tool reads through the worker's own settings; here, through the test's router.
        patch.setattr(
            tool_activities, "tool_services", lambda: ToolServices(router=router, store=store)
        )
        async with running_workers(ts_env.client, plans):
            yield
    memory.close()


async def _backtest(env: WorkflowEnvironment, payload: dict[str, Any]) -> tuple[Any, Any]:
    handle = await env.client.start_workflow(
        "Backtest",
        payload,
        id=f"backtest-{uuid.uuid4()}",
        task_queue=QUEUE,
        result_type=BacktestResult,
    )
    return handle, await handle.result()


def _lesson_rows(url: str) -> list[Any]:
    engine = create_engine(url)
    try:
        with engine.connect() as conn:
            return list(conn.execute(select(memories.c.as_of, memories.c.source_workflow_id)))
    finally:
        engine.dispose()


def _goog_closes(first: date, last: date) -> list[float]:
    bars = BundledSource().read("GOOG", "1d", as_of=datetime(2010, 2, 1, tzinfo=UTC))
    return [bar.close for bar in bars if first <= bar.time.date() <= last]


@pytest_asyncio.fixture(scope="module", loop_scope="session")
async def walk(ts_env: WorkflowEnvironment, workers: None) -> tuple[Any, BacktestResult]:
    """The three-step Pipeline walk, run once for the tests that read it."""
    return await _backtest(ts_env, WALK)


async def test_each_step_learns_only_from_lessons_recorded_before_it(
    ts_env: WorkflowEnvironment, walk: tuple[Any, BacktestResult], memory_url: str
) -> None:
    handle, result = walk

    assert [s.as_of.date() for s in result.steps] == STEP_DATES
    # Reflections ran after steps 1 and 2; the last one would teach no later step.
    assert [s.lessons_recorded for s in result.steps][2] is None
    assert all(s.lessons_recorded for s in result.steps[:2])
    rows = _lesson_rows(memory_url)
    assert sorted({row.as_of.date() for row in rows}) == STEP_DATES[:2]
    assert all(row.source_workflow_id.startswith("backtest/GOOG/") for row in rows)
    for k, step in enumerate(result.steps):
        pipeline = await ts_env.client.get_workflow_handle(
            step.workflow_id, result_type=PipelineResult
        ).result()
        assert pipeline.as_of.date() == STEP_DATES[k]
        recalled = {
            date.fromisoformat(day)
            for text in pipeline.memories.values()
            for day in RECALLED.findall(text)
        }
        assert recalled <= set(STEP_DATES[:k])
        # Step 2's lesson is known only once its horizon bar (step 3's) has closed.
        assert recalled == ({STEP_DATES[0]} if k == 2 else set())
        assert step.recalled_roles == sum(
            bool(RECALLED.search(t)) for t in pipeline.memories.values()
        )


async def test_every_reflection_completes_before_the_next_step_starts(
    ts_env: WorkflowEnvironment, walk: tuple[Any, BacktestResult]
) -> None:
    handle, _ = walk

    order = []
    async for event in handle.fetch_history_events():
        if event.event_type == EventType.EVENT_TYPE_START_CHILD_WORKFLOW_EXECUTION_INITIATED:
            order.append(
                (
                    "start",
                    event.start_child_workflow_execution_initiated_event_attributes.workflow_id,
                )
            )
        elif event.event_type == EventType.EVENT_TYPE_CHILD_WORKFLOW_EXECUTION_COMPLETED:
            order.append(
                (
                    "end",
                    event.child_workflow_execution_completed_event_attributes.workflow_execution.workflow_id,
                )
            )
    names = [(kind, wid.removeprefix(f"{handle.id}-")) for kind, wid in order]
    assert names == [
        ("start", "001-pipeline"),
        ("end", "001-pipeline"),
        ("start", "001-reflect"),
        ("end", "001-reflect"),
        ("start", "002-pipeline"),
        ("end", "002-pipeline"),
        ("start", "002-reflect"),
        ("end", "002-reflect"),
        ("start", "003-pipeline"),
        ("end", "003-pipeline"),
    ]


async def test_positions_and_metrics_follow_the_rule_on_the_real_closes(
    ts_env: WorkflowEnvironment, walk: tuple[Any, BacktestResult]
) -> None:
    handle, result = walk

    position = Position.FLAT
    for step in result.steps:
        position = position_for(step.signal, position, allow_short=True)
        assert step.position is position and step.rating
    closes = _goog_closes(date(2010, 1, 4), date(2010, 1, 20))
    assert len(closes) == 12 and (result.start, result.end) == (date(2010, 1, 4), date(2010, 1, 20))
    positions = [s.position for s in result.steps]
    assert result.strategy == performance(closes, [0, 5, 10], positions)
    assert result.buy_and_hold == buy_and_hold(closes, [0, 5, 10])
    assert result.buy_and_hold.cumulative_return == pytest.approx(closes[-1] / closes[0] - 1)
    progress = await handle.query("progress", result_type=BacktestProgress)
    assert (progress.decided, progress.scheduled, progress.phase) == (3, 3, "done")
    assert progress.equity == pytest.approx(result.strategy.final_equity)
    assert progress.done == progress.total == len(progress.steps) == 1 + 3 + 2 + 2


async def test_the_report_csv_and_chart_are_stored(walk: tuple[Any, BacktestResult]) -> None:
    _, result = walk

    def fetch(url: str) -> bytes:
        with urllib.request.urlopen(url, timeout=10) as response:
            return response.read()

    report = fetch(result.report.url).decode()
    assert "# Backtest: pipeline on GOOG, 2010-01-04 to 2010-01-20" in report
    assert "| trades |" in report and report.count("| 2010-01-") == 3
    # The offline analyst is a rule trained on no period: every step is after its cutoff.
    assert "**Headline, after the training cutoff: " in report and "## Leaderboard" in report
    assert "deflated Sharpe ratio" in report and "Hansen's SPA" in report
    rows = fetch(result.csv.url).decode().splitlines()
    assert rows[0].startswith("date,close,position") and len(rows) == 13
    assert rows[0].endswith(",cutoff") and rows[1].endswith(",after cutoff")
    assert fetch(result.chart.url)[:8] == b"\x89PNG\r\n\x1a\n"
    assert result.chart.report.key.startswith("backtest/") and result.chart.report.key.endswith(
        ".png"
    )


async def test_rerunning_the_same_walk_repeats_it_without_a_second_copy_of_any_lesson(
    ts_env: WorkflowEnvironment, walk: tuple[Any, BacktestResult], memory_url: str
) -> None:
    _, first = walk
    before = len(_lesson_rows(memory_url))

    # One step per run this time: the walk continues as new twice, carrying what it decided.
    handle, again = await _backtest(ts_env, {**WALK, "steps_per_run": 1})

    assert (first.runs, again.runs) == (1, 3)
    first_run = ts_env.client.get_workflow_handle(handle.id, run_id=handle.first_execution_run_id)
    events = [event async for event in first_run.fetch_history_events()]
    assert events[-1].event_type == EventType.EVENT_TYPE_WORKFLOW_EXECUTION_CONTINUED_AS_NEW
    # The last run's progress times the whole walk, from the first run's start.
    progress = await handle.query("progress", result_type=BacktestProgress)
    spans = (await handle.describe()).start_time - (await first_run.describe()).start_time
    assert progress.elapsed_seconds >= spans.total_seconds() > 0
    assert progress.decided == 3 and progress.done == progress.total

    assert [(s.signal, s.position, s.recalled_roles) for s in again.steps] == [
        (s.signal, s.position, s.recalled_roles) for s in first.steps
    ]
    assert again.strategy == first.strategy
    # The trials ledger counts the same walk once, however it was split into runs.
    assert first.claims is not None and again.claims is not None
    assert again.claims.tests.trials == first.claims.tests.trials
    assert again.claims.tests.spa_configurations == 1
    assert [s.lessons_recorded for s in again.steps] == [0, 0, None]
    assert len(_lesson_rows(memory_url)) == before


async def test_a_quantagent_walk_without_shorts_goes_flat_on_short(
    ts_env: WorkflowEnvironment, workers: None
) -> None:
    handle, result = await _backtest(
        ts_env,
        {
            "flow": "quantagent",
            "symbol": "GOOG",
            "start": "2010-06-01",
            "end": "2010-06-08",
            "every": 3,
            "allow_short": False,
        },
    )

    assert result.reflect is False and len(result.steps) == 2
    for step in result.steps:
        assert step.signal in ("LONG", "SHORT") and step.rating is None
        assert step.position is (Position.LONG if step.signal == "LONG" else Position.FLAT)
    progress = await handle.query("progress", result_type=BacktestProgress)
    assert not any(name.startswith("reflect") for name in progress.steps)


@pytest.mark.parametrize(
    ("change", "field"),
    [
        ({"flow": "quantagent", "reflect": True}, "`reflect`"),
        ({"start": "2010-02-01", "end": "2010-01-04"}, "`start`"),
        ({"start": "2003-01-02"}, "`start`"),
        ({"end": "2014-06-30"}, "`end`"),
        ({"every": 0}, "`every`"),
        ({"llm": {"provider": "skynet"}}, "`llm.provider`"),
    ],
)
async def test_bad_input_fails_the_run_naming_the_field(
    ts_env: WorkflowEnvironment, workers: None, change: dict[str, Any], field: str
) -> None:
    with pytest.raises(WorkflowFailureError) as caught:
        await _backtest(ts_env, {**WALK, **change})

    cause = caught.value.cause
    while cause is not None and not isinstance(cause, ApplicationError):
        cause = cause.cause
    assert isinstance(cause, ApplicationError) and cause.non_retryable
    assert field in cause.message


async def test_quantdesk_backtest_follows_the_walk_prints_the_metrics_and_saves_the_files(
    ts_env: WorkflowEnvironment,
    workers: None,
    s3_settings: Settings,
    tmp_path: Path,
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    shown = Console(record=True, width=240)
    monkeypatch.setattr(cli_backtest, "console", shown)
    monkeypatch.setattr(cli_views, "console", shown)
    settings = s3_settings.model_copy(
        update={
            "temporal": s3_settings.temporal.model_copy(
                update={"address": ts_env.client.service_client.config.target_host}
            ),
            "queues": s3_settings.queues.model_copy(update={"workflows": QUEUE}),
        }
    )
    payload = {"flow": "quantagent", "symbol": "GOOG", "start": "2010-06-01"}
    payload |= {"end": "2010-06-08", "every": 3, "allow_short": False}

    status = await cli_backtest._run(settings, payload, f"backtest-cli-{uuid.uuid4()}", tmp_path)

    text = " ".join(shown.export_text().split())  # wrapped titles and links made whole
    assert status == 0
    assert "quantagent on GOOG, 2010-06-01 to 2010-06-08, 2 steps every 3 bar(s)" in text
    saved = sorted(path.name for path in tmp_path.iterdir())
    assert len(saved) == 3 and all(f"wrote {tmp_path / name}" in text for name in saved)
    assert "report: http" in text and "Web UI: http" in text
    assert "Headline, after the training cutoff" in text and "Sharpe [95% CI]" in text
    assert "PSR" in text and "SPA across" in text
    assert text.index("report: http") < text.index("Web UI: http")
