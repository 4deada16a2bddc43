"""The Reflect workflow offline: time-skipping server, real activities, a temp SQLite memory.

The module runs its own time-skipping server rather than the session's ``ts_env``: an
activity another module left in flight (a failed QuantAgent run's parallel branch) keeps
that server from skipping time until the activity's timeout, and the durable-wait test
would then sleep in real time.
"""

from __future__ import annotations

import uuid
from collections.abc import AsyncIterator
from datetime import UTC, datetime, timedelta
from pathlib import Path
from typing import Any

import pytest
import pytest_asyncio
from temporalio.api.enums.v1 import EventType
from temporalio.client import WorkflowFailureError
from temporalio.exceptions import ApplicationError
from temporalio.testing import WorkflowEnvironment

from activities.llm import LlmActivities
from activities.reflection import OutcomeRequest, ReflectionActivities
from shared.agents.reflection import Stance, judged_correct, stance_of
from shared.agents.reflector import reflect
from shared.config import Settings
from shared.llm.providers import QUEUE_OFFLINE
from shared.market.sources import BundledSource
from shared.memory import MemoryRole, MemoryStore
from shared.queues import TOOLS_QUEUE
from tests.servers import running_workers, start_time_skipping
from workers.main import WorkerPlan
from workflows.reflect import ReflectProgress, ReflectResult, ReflectWorkflow

pytestmark = pytest.mark.asyncio(loop_scope="session")
QUEUE = "test-reflect"
AS_OF = datetime(2012, 6, 1, 20, 0, tzinfo=UTC)
SITUATION = (
    "GOOG fell for five sessions into early June 2012; RSI near 35, price under the 50-day "
    "average, market weak after soft payrolls."
)
DECISIONS = {
    "bull": "Oversold bounce likely: buy the dip.",
    "bear": "Trend is down and the market is weak.",
    "trader": {"text": "Small position, stop under 560.", "direction": "Buy"},
    "portfolio_manager": {"text": "Keep exposure as is.", "direction": "Hold"},
    "conservative": "Sell into strength; the tape is weak.",
}


@pytest.fixture(scope="module")
def settings(tmp_path_factory: pytest.TempPathFactory) -> Settings:
    folder: Path = tmp_path_factory.mktemp("reflect")
    return Settings(data_dir=folder, database_url=f"sqlite:///{folder / 'memory.db'}")


@pytest_asyncio.fixture(scope="module", loop_scope="session")
async def env() -> AsyncIterator[WorkflowEnvironment]:
    """This module's own time-skipping server (see the module docstring)."""
    server = await start_time_skipping()
    try:
        yield server
    finally:
        await server.shutdown()


@pytest_asyncio.fixture(scope="module", loop_scope="session")
async def workers(env: WorkflowEnvironment, settings: Settings) -> AsyncIterator[None]:
    plans = [
        WorkerPlan(queue=QUEUE, workflows=[ReflectWorkflow]),
        WorkerPlan(
            queue=TOOLS_QUEUE, activities=ReflectionActivities(settings).activities(), threads=True
        ),
        WorkerPlan(queue=QUEUE_OFFLINE, activities=[LlmActivities(settings, QUEUE_OFFLINE).chat]),
    ]
    async with running_workers(env.client, plans):
        yield


def _input(run_id: str, **changes: Any) -> dict[str, Any]:
    payload: dict[str, Any] = {
        "source": {"workflow_id": "pipeline-GOOG-2012-06-01", "run_id": run_id},
        "symbol": "GOOG",
        "as_of": AS_OF.isoformat(),
        "situation": SITUATION,
        "decisions": DECISIONS,
    }
    return {**payload, **changes}


async def _run(env: WorkflowEnvironment, payload: object, wid: str | None = None) -> ReflectResult:
    return await env.client.execute_workflow(
        "Reflect",
        payload,
        id=wid or f"reflect-{uuid.uuid4()}",
        task_queue=QUEUE,
        result_type=ReflectResult,
    )


def _expected(symbol: str, start: datetime, end: datetime) -> float:
    bars = {bar.time: bar.close for bar in BundledSource().read(symbol, "1d", as_of=end)}
    return bars[end] / bars[start] - 1


async def test_a_past_decision_teaches_every_role_from_the_real_returns(
    env: WorkflowEnvironment, workers: None, settings: Settings
) -> None:
    result = await _run(env, _input("run-1"))

    goog = BundledSource().read("GOOG", "1d", as_of=datetime(2012, 7, 1, tzinfo=UTC))
    start_index = max(i for i, bar in enumerate(goog) if bar.time <= AS_OF)
    start, end = goog[start_index], goog[start_index + 5]
    market = result.market
    assert (market.start, market.end) == (start.time, end.time)
    assert market.stock_return == pytest.approx(end.close / start.close - 1, abs=1e-12)
    bench = _expected("^GSPC", start.time, end.time)
    assert market.benchmark_return == pytest.approx(bench, abs=1e-12)
    assert market.alpha == pytest.approx(market.stock_return - bench, abs=1e-12)
    assert market.horizon_days == (end.time - start.time).days
    assert result.learned_at >= AS_OF + timedelta(days=market.horizon_days)
    assert result.inserted == len(DECISIONS) and result.already_known == 0
    assert result.waits == 0

    stances = {role.value: r.stance for role, r in result.reflections.items()}
    assert stances == {
        "bull": Stance.LONG,
        "bear": Stance.SHORT,
        "trader": Stance.LONG,
        "portfolio_manager": Stance.FLAT,
        "conservative": Stance.SHORT,
    }
    for reflection in result.reflections.values():
        assert reflection.reflection.was_correct == judged_correct(reflection.stance, market.alpha)
        assert f"{market.alpha * 100:+.2f}%" in reflection.reflection.why
    bear = result.reflections[MemoryRole.BEAR].outcome
    assert bear.realised_return == pytest.approx(-market.stock_return)
    assert bear.alpha == pytest.approx(-market.stock_return - market.benchmark_return)
    assert set(result.usage.by_agent) == {f"reflector:{role}" for role in DECISIONS}


async def test_rerunning_the_same_pipeline_run_writes_nothing_twice(
    env: WorkflowEnvironment, workers: None
) -> None:
    first = await _run(env, _input("run-2"))
    again = await _run(env, _input("run-2"))

    assert first.inserted == len(DECISIONS)
    assert again.inserted == 0 and again.already_known == len(DECISIONS)


async def test_the_lesson_is_recalled_only_once_it_was_learned(
    env: WorkflowEnvironment, workers: None, settings: Settings
) -> None:
    result = await _run(env, _input("run-3", symbol="goog"))
    store = MemoryStore.from_settings(settings)
    try:
        query = "GOOG fell for five sessions, RSI near 35, under the 50-day average, weak market"
        after = store.recall(MemoryRole.TRADER, query, as_of=result.learned_at + timedelta(hours=1))
        before = store.recall(
            MemoryRole.TRADER, query, as_of=result.learned_at - timedelta(hours=1)
        )
    finally:
        store.close()

    assert after and after[0].lesson == result.reflections[MemoryRole.TRADER].reflection.lesson
    assert after[0].symbol == "GOOG"
    assert before == []


async def test_a_horizon_beyond_the_data_waits_durably_then_fails_clearly(
    env: WorkflowEnvironment, workers: None
) -> None:
    last = BundledSource().read("GOOG", "1d", lookback=1)[-1].time
    wid = f"reflect-wait-{uuid.uuid4()}"

    with pytest.raises(WorkflowFailureError) as failure:
        await _run(env, _input("run-4", as_of=last.isoformat(), max_waits=2), wid)

    cause = failure.value.cause
    assert isinstance(cause, ApplicationError) and cause.type == "OutcomeNotReady"
    assert cause.non_retryable and "after 2 wait(s)" in cause.message
    assert "0 of 5 GOOG bars after 2013-03-01" in cause.message
    handle = env.client.get_workflow_handle(wid)
    timers = [
        event
        async for event in handle.fetch_history_events()
        if event.event_type == EventType.EVENT_TYPE_TIMER_STARTED
    ]
    assert len(timers) == 2
    progress = await handle.query("progress", result_type=ReflectProgress)
    assert progress.waits == 2 and progress.steps["measure_outcome"] == "failed"


@pytest.mark.parametrize(
    ("change", "field"),
    [
        ({"source": None}, "`source`"),
        ({"as_of": "2012-06-01T00:00:00"}, "`as_of`"),
        ({"decisions": {"neutral": "wait and see"}}, "decisions.neutral.direction"),
        ({"decisions": {"chairman": "Buy"}}, "`decisions.chairman"),
        ({"horizon_bars": 0}, "`horizon_bars`"),
    ],
)
async def test_bad_input_fails_at_once_naming_the_field(
    env: WorkflowEnvironment, workers: None, change: dict[str, Any], field: str
) -> None:
    with pytest.raises(WorkflowFailureError) as failure:
        await _run(env, _input("run-bad", **change))

    cause = failure.value.cause
    assert isinstance(cause, ApplicationError) and cause.non_retryable
    assert field in cause.message


async def test_not_ready_estimates_when_the_horizon_bar_exists(settings: Settings) -> None:
    measure = ReflectionActivities(settings).measure
    request = OutcomeRequest(symbol="GOOG", as_of=AS_OF)

    # Measured on Tuesday: Monday's and Tuesday's bars exist, three more are due.
    early = measure(request.model_copy(update={"now": datetime(2012, 6, 5, 12, tzinfo=UTC)}))
    assert not early.ready and early.bars_seen == 2
    assert early.earliest_at == datetime(2012, 6, 9, 6, tzinfo=UTC)

    assert early.earliest_at is not None
    later = measure(request.model_copy(update={"now": early.earliest_at}))
    assert later.ready and later.market is not None
    assert later.market.end == datetime(2012, 6, 8, tzinfo=UTC)


async def test_stances_and_the_offline_verdicts_follow_the_numbers() -> None:
    assert stance_of(MemoryRole.TRADER, "We should Underweight GOOG.") is Stance.SHORT
    assert stance_of(MemoryRole.BULL, "The case is strong.") is Stance.LONG
    assert stance_of(MemoryRole.NEUTRAL, "no view") is None
    assert stance_of(MemoryRole.NEUTRAL, "anything", "Overweight") is Stance.LONG

    base = {
        "role": "trader",
        "symbol": "GOOG",
        "benchmark": "^GSPC",
        "horizon_bars": 5,
        "hold_alpha_band": 0.02,
    }
    up = {**base, "stock_return": 0.08, "benchmark_return": 0.01, "alpha": 0.07}
    long_up, short_up = reflect({**up, "stance": "long"}), reflect({**up, "stance": "short"})
    assert long_up.was_correct and not short_up.was_correct
    assert "+7.00%" in long_up.why and "+8.00%" in long_up.why
    assert long_up.lesson != short_up.lesson
    flat = reflect(
        {**base, "stance": "flat", "stock_return": 0.0, "benchmark_return": 0.005, "alpha": -0.005}
    )
    assert flat.was_correct
