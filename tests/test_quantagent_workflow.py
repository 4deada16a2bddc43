"""The whole QuantAgent workflow offline: real server, real S3, real activities."""

from __future__ import annotations

import urllib.request
import uuid
from collections.abc import AsyncIterator
from datetime import UTC, datetime

import pytest
import pytest_asyncio
from temporalio.client import WorkflowFailureError
from temporalio.exceptions import ApplicationError
from temporalio.testing import WorkflowEnvironment

from activities.charts import ChartActivities
from activities.llm import LlmActivities
from activities.market import MARKET_ACTIVITIES
from activities.tools import TOOL_ACTIVITIES
from shared.config import Settings
from shared.llm.providers import QUEUE_OFFLINE
from shared.market.sources import BundledSource
from shared.queues import CHARTS_QUEUE, TOOLS_QUEUE
from tests.servers import running_workers, tools_reading
from workers.main import WorkerPlan
from workflows.quantagent import QuantAgentProgress, QuantAgentResult, QuantAgentWorkflow

pytestmark = pytest.mark.asyncio(loop_scope="session")
QUEUE = "test-quantagent"


@pytest_asyncio.fixture(scope="module", loop_scope="session")
async def workers(ts_env: WorkflowEnvironment, s3_settings: Settings) -> AsyncIterator[None]:
    charts = ChartActivities(settings=s3_settings)
    plans = [
        WorkerPlan(queue=QUEUE, workflows=[QuantAgentWorkflow]),
        WorkerPlan(
            queue=TOOLS_QUEUE, activities=[*TOOL_ACTIVITIES, *MARKET_ACTIVITIES], threads=True
        ),
        WorkerPlan(queue=CHARTS_QUEUE, activities=charts.activities(), threads=True),
        WorkerPlan(
            queue=QUEUE_OFFLINE, activities=[LlmActivities(s3_settings, QUEUE_OFFLINE).chat]
        ),
    ]
    # run_tool reads through the worker's own settings; here, the test's S3 (a tool answer
    # over the claim check's threshold is stored there).
    with tools_reading(s3_settings):
        async with running_workers(ts_env.client, plans):
            yield


async def _run(env: WorkflowEnvironment, payload: object) -> QuantAgentResult:
    return await env.client.execute_workflow(
        "QuantAgent",
        payload,
        id=f"qa-{uuid.uuid4()}",
        task_queue=QUEUE,
        result_type=QuantAgentResult,
    )


async def test_symbol_and_timeframe_alone_give_a_validated_decision(
    ts_env: WorkflowEnvironment, workers: None
) -> None:
    result = await _run(ts_env, {"symbol": "GOOG", "timeframe": "1d"})

    assert result.decision.decision in ("LONG", "SHORT")
    assert 1.2 <= result.decision.risk_reward_ratio <= 1.8
    assert result.bars_analysed == 100
    assert set(result.latest_indicators) == {"macd", "rsi", "roc", "stoch", "willr"}
    assert result.forecast_horizon.startswith("next 3 1d bars")
    assert set(result.usage.by_agent) == {
        "indicator_agent",
        "pattern_agent",
        "trend_agent",
        "decision_agent",
    }
    assert result.usage.by_agent["indicator_agent"].calls == 2


async def test_charts_are_in_s3_and_the_urls_serve_them(
    ts_env: WorkflowEnvironment, workers: None
) -> None:
    result = await _run(ts_env, {"symbol": "EURUSD", "timeframe": "1h"})

    for chart in (result.pattern_chart, result.trend_chart):
        with urllib.request.urlopen(chart.url, timeout=10) as response:
            assert response.read()[:8] == b"\x89PNG\r\n\x1a\n"
        assert chart.chart.key.startswith("quantagent/")
    assert result.trend_chart.trendlines == result.trendlines


async def test_nothing_after_as_of_is_analysed(ts_env: WorkflowEnvironment, workers: None) -> None:
    as_of = datetime(2010, 6, 1, tzinfo=UTC)

    result = await _run(ts_env, {"symbol": "GOOG", "timeframe": "1d", "as_of": as_of.isoformat()})

    expected = BundledSource().read("GOOG", "1d", as_of=as_of, lookback=1)[-1]
    assert result.as_of == expected.time
    assert result.as_of <= as_of


async def test_different_windows_give_different_analyses(
    ts_env: WorkflowEnvironment, workers: None
) -> None:
    early = await _run(
        ts_env, {"symbol": "GOOG", "timeframe": "1d", "as_of": "2008-10-01T00:00:00Z"}
    )
    late = await _run(
        ts_env, {"symbol": "GOOG", "timeframe": "1d", "as_of": "2012-10-01T00:00:00Z"}
    )

    assert early.latest_indicators != late.latest_indicators
    assert early.indicator_report != late.indicator_report


async def test_given_bars_are_analysed_without_a_source(
    ts_env: WorkflowEnvironment, workers: None
) -> None:
    bars = BundledSource().read("BTCUSD", "1mo", lookback=80)
    payload = {
        "symbol": "MYBTC",
        "timeframe": "1mo",
        "bars": [bar.model_dump(mode="json") for bar in bars],
    }

    result = await _run(ts_env, payload)

    assert result.symbol == "MYBTC"
    assert result.as_of == bars[-1].time


async def test_progress_query_reports_every_step_done(
    ts_env: WorkflowEnvironment, workers: None
) -> None:
    handle = await ts_env.client.start_workflow(
        "QuantAgent",
        {"symbol": "GOOG", "timeframe": "1d"},
        id=f"qa-{uuid.uuid4()}",
        task_queue=QUEUE,
    )
    await handle.result()

    progress = await handle.query("progress", result_type=QuantAgentProgress)

    assert set(progress.steps.values()) == {"done"}
    assert progress.usage.total.calls == 5


@pytest.mark.parametrize(
    ("payload", "field"),
    [
        ({"symbol": "NOPE", "timeframe": "1d"}, "symbol"),
        ({"symbol": "GOOG", "timeframe": "2d"}, "timeframe"),
        ({"symbol": "GOOG", "timeframe": "4h"}, "timeframe"),
        ({"symbol": "GOOG", "timeframe": "1d", "as_of": "1990-01-01T00:00:00Z"}, "as_of"),
        ({"symbol": "GOOG", "timeframe": "1d", "as_of": "2010-01-01T00:00:00"}, "as_of"),
        ({"symbol": "GOOG", "timeframe": "1d", "lookback": 10}, "lookback"),
        ({"symbol": "GOOG", "timeframe": "1d", "llm": {"provider": "skynet"}}, "llm.provider"),
        ({"symbol": "GOOG", "timeframe": "1d", "llm": {"model": "gpt-5"}}, "llm.model"),
        ({"timeframe": "1d"}, "symbol"),
    ],
)
async def test_bad_input_fails_the_run_naming_the_field(
    ts_env: WorkflowEnvironment, workers: None, payload: object, field: str
) -> None:
    with pytest.raises(WorkflowFailureError) as caught:
        await _run(ts_env, payload)

    cause = caught.value.cause
    while cause is not None and not isinstance(cause, ApplicationError):
        cause = cause.cause
    assert isinstance(cause, ApplicationError)
    assert cause.non_retryable
    assert f"`{field}`" in cause.message


@pytest.mark.parametrize(
    ("mutate", "expected"),
    [
        (lambda bars: bars[:30], "needs at least 50 bars"),
        (lambda bars: [bars[1], bars[0], *bars[2:]], "row 1"),
        (lambda bars: [{**bars[0], "high": bars[0]["low"] - 1}, *bars[1:]], "row 0"),
    ],
)
async def test_malformed_or_too_few_bars_are_refused(
    ts_env: WorkflowEnvironment, workers: None, mutate: object, expected: str
) -> None:
    bars = [bar.model_dump(mode="json") for bar in BundledSource().read("GOOG", "1d", lookback=60)]

    with pytest.raises(WorkflowFailureError) as caught:
        await _run(ts_env, {"symbol": "X", "timeframe": "1d", "bars": mutate(bars)})  # type: ignore[operator]

    assert expected in str(caught.value.cause.cause or caught.value.cause)
