"""``RecordSocial``, the flow a schedule runs to keep StockTwits' present posts: on the
time-skipping server with the product's worker plans, against the StockTwits stand-in. A pass
stores each new post once in the tools worker's data dir, a second pass adds only what is
new since, and the local vendor then serves the posts as of a later time. A schedule of it is
checked like any flow's."""

from __future__ import annotations

import uuid
from collections.abc import AsyncIterator, Iterator
from datetime import UTC, datetime, timedelta

import pytest
import pytest_asyncio
from temporalio.testing import WorkflowEnvironment

from client.schedules import ScheduleRequest, _checked
from shared.config import Settings
from shared.data.contracts import DataKind
from shared.data.factory import build_router
from shared.data.social_record import RecordReport
from shared.errors import InvalidInput
from shared.watchlists.store import WatchlistStore
from tests.fakes.stocktwits import FakeStocktwits, Message
from tests.servers import isolated_settings, running_workers
from tests.test_social_record import TITLES
from workers.main import plan_for
from workers.roles import WorkerRole

pytestmark = pytest.mark.asyncio(loop_scope="session")
QUEUE = "test-record-social"


@pytest.fixture(scope="module")
def stocktwits() -> Iterator[FakeStocktwits]:
    now = datetime.now(UTC)
    posts = [
        Message(1, "AAPL", now - timedelta(minutes=20), "$AAPL one", "bulls", "Bullish"),
        Message(2, "MSFT", now - timedelta(minutes=10), "$MSFT two"),
    ]
    with FakeStocktwits(TITLES, posts) as fake:
        yield fake


@pytest.fixture(scope="module")
def settings(
    s3_settings: Settings, tmp_path_factory: pytest.TempPathFactory, stocktwits: FakeStocktwits
) -> Settings:
    settings = isolated_settings(
        s3_settings,
        tmp_path_factory.mktemp("record-social"),
        QUEUE,
        stocktwits={"base_url": stocktwits.base_url, "timeout_seconds": 2},
    )
    WatchlistStore.from_settings(settings).create("core", ["AAPL", "MSFT"])
    return settings


@pytest_asyncio.fixture(scope="module", loop_scope="session")
async def workers(ts_env: WorkflowEnvironment, settings: Settings) -> AsyncIterator[None]:
    plans = [plan_for(role, settings) for role in (WorkerRole.WORKFLOWS, WorkerRole.TOOLS)]
    async with running_workers(ts_env.client, plans):
        yield


async def _pass(env: WorkflowEnvironment, payload: dict[str, object]) -> RecordReport:
    return await env.client.execute_workflow(
        "RecordSocial",
        payload,
        id=f"record-social-{uuid.uuid4().hex[:8]}",
        task_queue=QUEUE,
        result_type=RecordReport,
    )


async def test_two_passes_keep_each_post_once_for_later_runs(
    ts_env: WorkflowEnvironment, workers: None, settings: Settings, stocktwits: FakeStocktwits
) -> None:
    first = await _pass(ts_env, {"watchlist": "core"})
    stocktwits.messages.append(
        Message(3, "AAPL", datetime.now(UTC) - timedelta(minutes=1), "$AAPL three")
    )
    second = await _pass(ts_env, {"watchlist": "core"})

    assert [(r.symbol, r.new) for r in first.symbols] == [("AAPL", 1), ("MSFT", 1)]
    assert [(r.symbol, r.new) for r in second.symbols] == [("AAPL", 1), ("MSFT", 0)]
    # A later run reads them from the local vendor, as of its own time.
    as_of = datetime.now(UTC) - timedelta(minutes=5)
    routed = build_router(settings).call(
        DataKind.SOCIAL, lambda v: v.social("AAPL", as_of, timedelta(days=1)), as_of=as_of
    )
    assert (routed.vendor, [post.id for post in routed.value]) == ("local", ["1"])


async def test_an_input_naming_both_or_neither_is_refused_before_anything_runs() -> None:
    for payload in ({}, {"watchlist": "core", "symbols": ["AAPL"]}):
        request = ScheduleRequest(
            name="social", flow="record-social", cron="*/15 13-21 * * 1-5", tz="UTC",
            workflow_input=payload,
        )  # fmt: skip
        with pytest.raises(InvalidInput, match="exactly one of watchlist or symbols"):
            _checked(request)
    ok = ScheduleRequest(
        name="social", flow="record-social", cron="*/15 13-21 * * 1-5", tz="UTC",
        workflow_input={"watchlist": "core"},
    )  # fmt: skip
    assert _checked(ok) == ("RecordSocial", {"watchlist": "core"})
