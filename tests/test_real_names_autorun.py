"""AutoRun on real names as of a past day, every vendor a strict stand-in over HTTP and the
chains the desk makes by default from the keys it has (``routes_of``): Finnhub's company news
and filings, Massive's bars, grouped daily file and ticker list, FRED's vintages, the figures
computed from bars. The run completes; every record any tool read is dated at or before
``as_of``; the Scan read the movers, sectors and sector companies of that day from real bars;
each Pipeline's report names its vendors in its Data section; and NVDA's split, announced
after ``as_of``, never touched the bars a run saw.

The names' sectors come from the user's ``universe.csv`` (the local vendor): Massive's ticker
list carries none, and the Scan shortlists only names of a known sector.
"""

from __future__ import annotations

import uuid
from collections.abc import AsyncIterator, Callable, Iterator
from datetime import UTC, date, datetime, timedelta
from pathlib import Path
from typing import Any, TypeVar

import pytest
import pytest_asyncio
from temporalio.api.enums.v1 import EventType
from temporalio.testing import WorkflowEnvironment

from shared.config import Settings
from shared.data.check import dates_of, records_of
from shared.data.contracts import SECTOR_ETFS, DataKind, DataVendor
from shared.data.factory import build_vendor, routes_of
from shared.data.router import DataRouter, Routed
from shared.market.bars import Timeframe
from tests.fakes.finnhub import KEY as FINNHUB_KEY
from tests.fakes.finnhub import FakeFinnhub, FinnhubCompany, Story, sample_company
from tests.fakes.fred import KEY as FRED_KEY
from tests.fakes.fred import FakeFred
from tests.fakes.massive import KEY as MASSIVE_KEY
from tests.fakes.massive import FakeMassive, Listed, MassiveMarket, day_bars
from tests.servers import isolated_settings, running_workers, tools_reading
from tests.test_data_fred import CORE_CPI
from tests.test_data_massive import _article
from workers.main import plan_for
from workers.roles import WorkerRole
from workflows.autorun import AutoRunResult
from workflows.pipeline import render_data_sources
from workflows.pipeline_contracts import PipelineState

pytestmark = pytest.mark.asyncio(loop_scope="session")
T = TypeVar("T")
QUEUE = "test-real-names"
AS_OF = datetime(2024, 3, 28, 20, 30, tzinfo=UTC)  # after Thursday's close, New York
NAMES = ("AAPL", "MSFT", "NVDA")
FIRST, LAST = date(2023, 1, 3), date(2024, 6, 28)
NVDA_SPLIT = date(2024, 6, 10)  # 10 for 1, announced after as_of
ROLES = (WorkerRole.WORKFLOWS, WorkerRole.TOOLS, WorkerRole.CHARTS, WorkerRole.LLM_OFFLINE)


def _market() -> MassiveMarket:
    """Three names, the sector ETFs and T-bills, each traded through June 2024."""
    etfs = [Listed(etf, f"{sector.value} ETF", "ETF", date(1998, 12, 16)) for sector, etf in
            SECTOR_ETFS.items()] + [Listed("SGOV", "0-3 Month Treasury Bond ETF", "ETF",
                                           date(2020, 5, 26))]  # fmt: skip
    names = [Listed(symbol, f"{symbol} Inc", "CS", date(1990, 1, 2)) for symbol in NAMES]
    bars = {listed.ticker: day_bars(FIRST, LAST, 100.0 + 10 * n, 2e6, {}) for n, listed in
            enumerate(names + etfs)}  # fmt: skip
    # Technology led the month to as_of: the deep dive looks at it.
    rally = {date(2024, 3, day): 0.01 for day in range(4, 28)}
    bars["XLK"] = day_bars(FIRST, LAST, 180.0, 2e6, rally)
    bars["NVDA"] = [
        bar if bar.day < NVDA_SPLIT else type(bar)(bar.day, bar.open / 10, bar.high / 10,
                                                   bar.low / 10, bar.close / 10, bar.volume * 10)
        for bar in bars["NVDA"]
    ]  # fmt: skip
    return MassiveMarket(
        listed=names + etfs,
        bars=bars,
        splits=[
            {
                "id": "S-NVDA",
                "ticker": "NVDA",
                "execution_date": NVDA_SPLIT.isoformat(),
                "split_from": 1,
                "split_to": 10,
            }
        ],  # fmt: skip
        news=[
            _article(1, "2024-03-27T13:00:00Z", "Markets steady before PCE", [], ["macro"]),
            _article(2, "2024-03-29T13:00:00Z", "After as_of: the PCE print", [], ["macro"]),
        ],
    )


def _companies() -> list[FinnhubCompany]:
    """Each name's filings (fiscal 2023) and stories on both sides of ``as_of``."""
    companies = []
    for n, symbol in enumerate(NAMES):
        company = sample_company(symbol, cik=str(320193 + n))
        company.news = [
            Story(100 * n + 1, AS_OF - timedelta(days=1), f"{symbol} ships a product", "Up."),
            Story(100 * n + 2, AS_OF + timedelta(hours=2), f"{symbol}: after as_of", "Late."),
        ]
        companies.append(company)
    return companies


class RecordingRouter(DataRouter):
    """The router, keeping every answer it routed."""

    def __init__(self, *args: Any, **kwargs: Any) -> None:
        super().__init__(*args, **kwargs)
        self.answers: list[tuple[DataKind, Routed[Any]]] = []

    def call(
        self, kind: DataKind, read: Callable[[DataVendor], T], *, as_of: datetime
    ) -> Routed[T]:
        routed = super().call(kind, read, as_of=as_of)
        self.answers.append((kind, routed))
        return routed


def tools_router(settings: Settings) -> RecordingRouter:
    """A router over the chains ``settings`` make by default, as a tools worker builds it."""
    chains = routes_of(settings).chains
    names = sorted({name for chain in chains.values() for name in chain})
    return RecordingRouter({name: build_vendor(name, settings) for name in names}, chains)


def _universe_file(folder: Path) -> None:
    """The user's file of the names' sectors: Massive's ticker list carries none, and the
    Scan shortlists only names of a known sector."""
    rows = ["symbol,name,sector,industry,asset_type"]
    rows += [f"{s},{s} Inc,Information Technology,Semiconductors,equity" for s in NAMES]
    rows += [f"{etf},{sector.value} ETF,,,etf" for sector, etf in SECTOR_ETFS.items()]
    folder.mkdir(parents=True)
    (folder / "universe.csv").write_text("\n".join(rows) + "\n")


@pytest.fixture(scope="module")
def settings(s3_settings: Settings, tmp_path_factory: pytest.TempPathFactory) -> Iterator[Settings]:
    with (
        FakeMassive(_market(), today=date(2024, 7, 1), per_minute=10_000) as massive,
        FakeFinnhub(_companies(), today=date(2024, 7, 1)) as finnhub,
        FakeFred({"CPILFESL": CORE_CPI}) as fred,
    ):
        folder = tmp_path_factory.mktemp("real-names")
        _universe_file(folder / "data")
        yield isolated_settings(
            s3_settings,
            folder,
            QUEUE,
            massive={"base_url": massive.base_url, "api_key": MASSIVE_KEY},
            finnhub={
                "base_url": finnhub.base_url,
                "api_key": FINNHUB_KEY,
                "news_history_days": None,
            },
            fred={"base_url": fred.base_url, "api_key": FRED_KEY},
            # The free tiers' pace is the bench's subject; this test is about what is read.
            data_quotas={"massive": {"requests": 1000, "seconds": 1}},
        )


@pytest_asyncio.fixture(scope="module", loop_scope="session")
async def run(
    ts_env: WorkflowEnvironment, settings: Settings
) -> AsyncIterator[tuple[AutoRunResult, RecordingRouter, list[PipelineState]]]:
    plans = [plan_for(role, settings) for role in ROLES]
    router = tools_router(settings)
    with tools_reading(settings, router):
        async with running_workers(ts_env.client, plans):
            handle = await ts_env.client.start_workflow(
                "AutoRun",
                {
                    "symbols": list(NAMES),
                    "as_of": AS_OF.isoformat(),
                    "scan": True,
                    "max_tickers": 4,
                    "portfolio": f"real{uuid.uuid4().hex[:6]}",
                },  # fmt: skip
                id=f"autorun-real-{uuid.uuid4().hex[:8]}",
                task_queue=QUEUE,
                result_type=AutoRunResult,
            )
            result = await handle.result()
            pipelines = []
            async for event in handle.fetch_history_events():
                if event.event_type == EventType.EVENT_TYPE_CHILD_WORKFLOW_EXECUTION_COMPLETED:
                    attrs = event.child_workflow_execution_completed_event_attributes
                    child = attrs.workflow_execution.workflow_id
                    if "-pipeline-" in child:
                        state = await ts_env.client.get_workflow_handle(child).query(
                            "state", result_type=PipelineState
                        )
                        pipelines.append(state)
            yield result, router, pipelines


def _day_end(when: datetime | date) -> datetime:
    if isinstance(when, datetime):
        return when
    return datetime(when.year, when.month, when.day, tzinfo=UTC)


async def test_the_desk_completes_on_real_names(
    run: tuple[AutoRunResult, RecordingRouter, list[PipelineState]],
) -> None:
    result, _, pipelines = run

    assert result.failures == []
    assert set(NAMES) <= {decision.symbol for decision in result.decisions}
    assert {pipeline.symbol for pipeline in pipelines} == set(result.candidates)


async def test_every_record_read_is_dated_by_as_of(
    run: tuple[AutoRunResult, RecordingRouter, list[PipelineState]],
) -> None:
    _, router, _ = run
    late = [
        (kind, answer.vendor, when)
        for kind, answer in router.answers
        for record in records_of(answer.value)
        for when in dates_of(record)
        if _day_end(when) > AS_OF
    ]

    assert router.answers and late == []
    titles = [getattr(r, "title", "") for _, a in router.answers for r in records_of(a.value)]
    assert not [title for title in titles if "after as_of" in title]


async def test_the_analysts_read_the_real_vendors_of_that_day(
    run: tuple[AutoRunResult, RecordingRouter, list[PipelineState]],
) -> None:
    _, _, pipelines = run
    read = {(s.tool, s.vendor) for pipeline in pipelines for s in pipeline.data}

    assert {
        ("get_ohlcv", "massive"),
        ("get_global_news", "massive"),
        ("get_company_news", "finnhub"),
        ("get_income_statement", "finnhub"),
        ("get_fundamentals", "finnhub"),
    } <= read, read


async def test_the_scan_read_real_movers_sectors_and_companies_of_that_day(
    run: tuple[AutoRunResult, RecordingRouter, list[PipelineState]],
) -> None:
    result, router, _ = run
    vendors = {kind: answer.vendor for kind, answer in router.answers}
    movers = next(a.value for k, a in router.answers if k is DataKind.MOVERS)
    sectors = next(a.value for k, a in router.answers if k is DataKind.SECTORS)

    assert (vendors[DataKind.MOVERS], movers.as_of) == ("massive", AS_OF)
    assert vendors[DataKind.SECTORS] == "bars" and len(sectors) == len(SECTOR_ETFS)
    assert vendors[DataKind.INDUSTRY] == "bars" and vendors[DataKind.MACRO] == "fred"
    assert result.shortlist and set(result.shortlist) <= set(NAMES)


async def test_a_split_announced_after_as_of_never_changed_the_bars_read(
    settings: Settings,
) -> None:
    # As the market analyst reads NVDA: through the default chain, Massive first.
    router = tools_router(settings)
    routed = router.call(
        DataKind.OHLCV, lambda v: v.ohlcv("NVDA", Timeframe.D1, AS_OF, 60), as_of=AS_OF
    )

    assert routed.vendor == "massive"
    assert min(bar.close for bar in routed.value) > 50  # as traded, not a tenth of it
    assert routed.value[-1].time == datetime(2024, 3, 28, tzinfo=UTC)


async def test_each_pipeline_report_names_its_vendors(
    run: tuple[AutoRunResult, RecordingRouter, list[PipelineState]],
) -> None:
    _, _, pipelines = run

    for pipeline in pipelines:
        section = render_data_sources(pipeline.data)
        news = {source.vendor for source in pipeline.data if "news" in source.tool}
        assert "massive" in {source.vendor for source in pipeline.data}, section
        assert {"finnhub", "massive"} & news, section
