"""A Pipeline on a real-shaped company, as of a day in its filing history: its analysts read
the SEC's filings, FRED's vintages and the company's own bar file through the stand-ins,
and every record any tool read is dated at or before ``as_of`` and named with its vendor."""

from __future__ import annotations

from collections.abc import AsyncIterator, Callable
from datetime import UTC, date, datetime, timedelta
from pathlib import Path
from typing import Any, TypeVar

import pytest
import pytest_asyncio
from temporalio.testing import WorkflowEnvironment

from shared.config import FredSettings, Settings
from shared.data.check import dates_of, records_of
from shared.data.contracts import DataKind, DataVendor
from shared.data.fred import FredVendor
from shared.data.local import LocalVendor
from shared.data.router import DEFAULT_ROUTES, DataRouter, Routed
from shared.data.sec import SecVendor
from shared.data.sim import SimVendor
from shared.memory import MemoryStore
from tests.fakes.fred import KEY, FakeFred
from tests.fakes.sec import FakeSec
from tests.servers import pipeline_workers
from tests.test_data_fred import CORE_CPI
from tests.test_data_sec import ACME, _settings
from workflows.pipeline_contracts import PipelineResult

pytestmark = pytest.mark.asyncio(loop_scope="session")
T = TypeVar("T")
QUEUE = "test-real-shaped"
AS_OF = datetime(2023, 9, 1, tzinfo=UTC)
ROUTES = {
    **DEFAULT_ROUTES,
    DataKind.OHLCV: ("local",),
    DataKind.STATEMENTS: ("sec", "sim"),
    DataKind.FUNDAMENTALS: ("sec", "sim"),
    DataKind.INSIDER: ("sec", "sim"),
    DataKind.MACRO: ("fred", "sim"),
}


class RecordingRouter(DataRouter):
    """The router, keeping every answer it routed."""

    def __init__(self, *args: Any, **kwargs: Any) -> None:
        super().__init__(*args, **kwargs)
        self.answers: list[Routed[Any]] = []

    def call(
        self, kind: DataKind, read: Callable[[DataVendor], T], *, as_of: datetime
    ) -> Routed[T]:
        routed = super().call(kind, read, as_of=as_of)
        self.answers.append(routed)
        return routed


def _bars(folder: Path) -> None:
    """ACMR's daily bars from 2023-01-02 through 2023-12-29: four months past ``AS_OF``."""
    rows, day, close = ["Date,Open,High,Low,Close,Volume"], date(2023, 1, 2), 50.0
    while day <= date(2023, 12, 29):
        if day.weekday() < 5:
            close *= 1.001 if day.toordinal() % 3 else 0.998
            rows.append(f"{day},{close},{close * 1.01},{close * 0.99},{close},100000")
        day += timedelta(days=1)
    (folder / "ohlcv").mkdir(parents=True)
    (folder / "ohlcv" / "ACMR.csv").write_text("\n".join(rows) + "\n")


@pytest_asyncio.fixture(scope="module", loop_scope="session")
async def router(
    ts_env: WorkflowEnvironment, s3_settings: Settings, tmp_path_factory: pytest.TempPathFactory
) -> AsyncIterator[RecordingRouter]:
    tmp = tmp_path_factory.mktemp("real-shaped")
    _bars(tmp / "data")
    with FakeSec([ACME]) as sec, FakeFred({"CPILFESL": CORE_CPI}) as fred:
        vendors: dict[str, DataVendor] = {
            "local": LocalVendor(tmp / "data"),
            "sec": SecVendor(_settings(sec)),
            "fred": FredVendor(FredSettings(base_url=fred.base_url, api_key=KEY)),
            "sim": SimVendor(seed=s3_settings.data_seed),
        }
        recording = RecordingRouter(vendors, ROUTES)
        memory = MemoryStore(f"sqlite:///{tmp / 'memory.db'}")
        async with pipeline_workers(ts_env.client, QUEUE, s3_settings, recording, memory):
            yield recording


@pytest_asyncio.fixture(scope="module", loop_scope="session")
async def result(ts_env: WorkflowEnvironment, router: RecordingRouter) -> PipelineResult:
    return await ts_env.client.execute_workflow(
        "Pipeline",
        {"symbol": "ACMR", "as_of": AS_OF.isoformat()},
        id="real-shaped-acmr",
        task_queue=QUEUE,
        result_type=PipelineResult,
    )


async def test_every_record_read_is_dated_by_as_of_and_names_its_vendor(
    router: RecordingRouter, result: PipelineResult
) -> None:
    assert result.decision is not None and router.answers
    late = [
        (answer.vendor, when)
        for answer in router.answers
        for record in records_of(answer.value)
        for when in dates_of(record)
        if (when if isinstance(when, datetime) else datetime(when.year, when.month, when.day, tzinfo=UTC)) > AS_OF
    ]  # fmt: skip
    assert late == []
    assert all(answer.vendor for answer in router.answers)


async def test_the_fundamentals_analyst_read_the_filings_as_known_then(
    router: RecordingRouter, result: PipelineResult
) -> None:
    by_vendor = {answer.vendor for answer in router.answers}
    statements = [
        record
        for answer in router.answers
        if answer.vendor == "sec"
        for record in records_of(answer.value)
        if hasattr(record, "items") and "revenue" in getattr(record, "items", {})
    ]
    assert {"sec", "local"} <= by_vendor
    # Before the restatement of 2023-09-15: the first quarter as first filed.
    assert {s.fiscal_period: s.items["revenue"] for s in statements}["2023Q1"] == 100e6
    sources = {(s.analyst.value, s.vendor) for s in result.data}
    assert ("fundamentals", "sec") in sources and ("market", "local") in sources
