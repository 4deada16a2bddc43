"""An AutoRun given its names: a watchlist of 30 offline names, then each way the names can
be wrong, refused before anything starts. On a time-skipping server of this module's own,
with the product's worker plans over a temporary data directory and the session's S3."""

from __future__ import annotations

import time
import uuid
from collections.abc import AsyncIterator
from datetime import UTC, datetime, timedelta
from decimal import Decimal
from typing import Any

import pytest
import pytest_asyncio
from temporalio.api.enums.v1 import EventType
from temporalio.api.history.v1 import History
from temporalio.client import Client, WorkflowFailureError
from temporalio.testing import WorkflowEnvironment
from temporalio.worker import Replayer

from bench.desk_names import desk_names, write_local_data
from shared.config import Settings
from shared.data.sim.universe import SYMBOLS
from shared.portfolio.models import Side, TradeRequest
from shared.portfolio.store import PortfolioStore
from shared.reports.autorun import chart_name
from shared.watchlists.store import WatchlistStore
from tests.servers import converting_client, desk_workers, isolated_settings
from workers.converter import data_converter
from workers.roles import WorkerRole
from workflows.autorun import AutoRunProgress, AutoRunResult, AutoRunWorkflow, candidates_of
from workflows.portfolio import MAX_DECISIONS

pytestmark = pytest.mark.slow

on_the_session_loop = pytest.mark.asyncio(loop_scope="session")
QUEUE = "test-autorun-watchlist"
AS_OF = "2012-06-01T00:00:00Z"
ROLES = (WorkerRole.WORKFLOWS, WorkerRole.TOOLS, WorkerRole.CHARTS, WorkerRole.LLM_OFFLINE)
NAMES = list(SYMBOLS[:30])
HELD_ELSEWHERE = SYMBOLS[40]
"""A holding off the watchlist: analysed after the watchlist's names."""
PARENT_HISTORY_CEILING = 20_000
"""Bytes of the AutoRun's own history at 31 names, as the server stores it: 199 KB when every
Pipeline came back to it as a digest and the Portfolio's outcome and the report's request
travelled inline (801 KB in JSON with whole results before that); 65 KB with every payload
of ``inline_max_bytes`` or more in S3, still growing about 1.9 KB a name; 11 KB since more
names than two rounds of ``concurrency`` go through two ``PipelineBatch`` children."""


@pytest.fixture(scope="module")
def settings(s3_settings: Settings, tmp_path_factory: pytest.TempPathFactory) -> Settings:
    return isolated_settings(s3_settings, tmp_path_factory.mktemp("watchlist"), QUEUE)


@pytest.fixture(scope="module")
def client(ts_env: WorkflowEnvironment, settings: Settings) -> Client:
    """A client of the module's server with the product's converter (large payloads in S3)."""
    return converting_client(ts_env, settings)


@pytest_asyncio.fixture(scope="module", loop_scope="session")
async def workers(client: Client, settings: Settings) -> AsyncIterator[None]:
    async with desk_workers(client, settings, ROLES):
        yield


def _hold(settings: Settings, portfolio: str, *symbols: str) -> None:
    books = PortfolioStore.from_settings(settings)
    books.create(portfolio, Decimal(100_000))
    for symbol in symbols:
        books.execute_trade(
            portfolio,
            TradeRequest(
                key=f"{portfolio}-{symbol}",
                symbol=symbol,
                side=Side.BUY,
                shares=10,
                price=Decimal(20),
                fees=Decimal(0),
                executed_at=datetime(2012, 5, 1, tzinfo=UTC),
                rationale="held before the run",
            ),
        )


async def _run(client: Client, payload: dict[str, Any]) -> Any:
    return await client.start_workflow(
        "AutoRun",
        {"as_of": AS_OF, "analysts": ["market"], "reflect": False, **payload},
        id=f"autorun-wl-{uuid.uuid4().hex[:8]}",
        task_queue=QUEUE,
        result_type=AutoRunResult,
        execution_timeout=timedelta(minutes=30),
    )


def test_candidates_are_the_names_then_the_chosen_then_the_holdings_each_once() -> None:
    assert candidates_of(["B", "A"], ["C", "A"], ["D", "B", "SGOV"]) == ["B", "A", "C", "D"]


@on_the_session_loop
async def test_a_watchlist_of_30_names_is_analysed_and_every_name_decided_or_explained(
    client: Client, workers: None, settings: Settings
) -> None:
    portfolio = f"wl{uuid.uuid4().hex[:6]}"
    WatchlistStore.from_settings(settings).create("thirty", NAMES)
    _hold(settings, portfolio, NAMES[3], HELD_ELSEWHERE)

    handle = await _run(client, {"portfolio": portfolio, "watchlist": "thirty", "concurrency": 8})
    result: AutoRunResult = await handle.result()

    assert result.shortlist == []  # no Scan without asking for one
    assert result.candidates == [*NAMES, HELD_ELSEWHERE]
    decided = {d.symbol for d in result.decisions}
    failed = {f.symbol: f.reason for f in result.failures}
    assert decided | set(failed) == set(result.candidates) and all(failed.values())
    assert result.portfolio_status == "approved_auto"
    # Each chart was drawn beside its Pipeline's analysts; the report found them all.
    assert set(result.report.charts) == {chart_name(symbol) for symbol in decided}
    pipeline = client.get_workflow_handle(f"{handle.id}-pipeline-{NAMES[0]}")
    scheduled = [
        e.activity_task_scheduled_event_attributes.activity_type.name
        for e in (await pipeline.fetch_history()).events
    ]
    assert "store_ticker_chart" in scheduled
    history = await handle.fetch_history()
    size = len(History(events=history.events).SerializeToString())
    by_kind: dict[str, int] = {}
    for event in history.events:
        kind = EventType.Name(event.event_type)
        by_kind[kind] = by_kind.get(kind, 0) + event.ByteSize()
    print(f"\nAutoRun parent history at {len(result.candidates)} names: {size} bytes; {by_kind}")
    assert size <= PARENT_HISTORY_CEILING
    replayer = Replayer(workflows=[AutoRunWorkflow], data_converter=data_converter(settings))
    await replayer.replay_workflow(history)  # the digests' path is deterministic too
    started = time.perf_counter()
    progress = await handle.query("progress", result_type=AutoRunProgress)
    assert time.perf_counter() - started < 1.0
    assert progress.tickers_done == progress.tickers_total == len(result.candidates)
    assert {progress.steps[f"pipeline {name}"] for name in decided} == {"done"}
    # Batched, each Pipeline keeps the id the console and the CLI look for.
    pipeline = client.get_workflow_handle(f"{handle.id}-pipeline-{NAMES[0]}")
    assert (await pipeline.describe()).workflow_type == "Pipeline"


@on_the_session_loop
@pytest.mark.parametrize(
    ("names", "message"),
    [
        ({"symbols": ["QBTX", "NOPEQ", "ZZZQ"]}, "`symbols`: unknown symbols: NOPEQ, ZZZQ"),
        ({"watchlist": "nowhere"}, "`watchlist`: no watchlist called 'nowhere'"),
        ({"symbols": []}, "the list is empty"),
        ({"symbols": ["QBTX", "qbtx"]}, "listed more than once: QBTX"),
        ({"watchlist": "a", "symbols": ["QBTX"]}, "give watchlist or symbols, not both"),
        ({"scan": False}, "without the Scan, give a watchlist or symbols"),
    ],
)
async def test_bad_names_fail_the_run_before_anything_starts(
    client: Client,
    workers: None,
    settings: Settings,
    names: dict[str, Any],
    message: str,
) -> None:
    portfolio = f"bad{uuid.uuid4().hex[:6]}"
    handle = await _run(client, {"portfolio": portfolio, **names})

    with pytest.raises(WorkflowFailureError) as failed:
        await handle.result()

    assert message in _messages(failed.value)
    assert portfolio not in {b.name for b in PortfolioStore.from_settings(settings).portfolios()}


def _messages(error: BaseException | None) -> str:
    """Every message down the failure's causes."""
    found = []
    while error is not None:
        found.append(str(getattr(error, "message", "") or error))
        error = error.__cause__
    return " | ".join(found)


@on_the_session_loop
async def test_more_candidates_than_the_portfolio_takes_fail_the_run_before_any_pipeline(
    client: Client, workers: None, settings: Settings
) -> None:
    """500 names (the sim's 95, then copies written as local data) plus a holding off the
    list: one candidate more than the Portfolio decides on at once."""
    *names, held = desk_names(MAX_DECISIONS + 1)
    write_local_data(
        settings.data_dir / "data", [*names, held], datetime(2012, 6, 1, tzinfo=UTC), bars=30
    )
    portfolio = f"many{uuid.uuid4().hex[:6]}"
    _hold(settings, portfolio, held)
    handle = await _run(client, {"portfolio": portfolio, "symbols": names})

    with pytest.raises(WorkflowFailureError) as failed:
        await handle.result()

    assert (
        f"{MAX_DECISIONS + 1} candidates with the holdings, more than the Portfolio decides on "
        f"at once ({MAX_DECISIONS}): split the watchlist"
    ) in _messages(failed.value)
    history = await handle.fetch_history()
    started = [
        e
        for e in history.events
        if e.event_type == EventType.EVENT_TYPE_START_CHILD_WORKFLOW_EXECUTION_INITIATED
    ]
    assert started == []
