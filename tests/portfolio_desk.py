"""The desk the Portfolio workflow's tests run: the simulated market routed, the Scan summary
and Pipeline decisions a book is run against, the tools worker, a memory holding one lesson,
and the calls that start a run, wait for its approval and read its chats."""

from __future__ import annotations

import contextlib
import uuid
from dataclasses import dataclass
from datetime import UTC, datetime, timedelta
from decimal import Decimal
from pathlib import Path
from typing import Any

from temporalio.api.enums.v1 import EventType
from temporalio.client import WorkflowHandle
from temporalio.service import RPCError
from temporalio.testing import WorkflowEnvironment

from activities.notify import NotifyActivities
from activities.portfolio import PortfolioActivities
from activities.research import ResearchActivities
from shared.agents.pipeline.schemas import SIGNAL_OF_RATING, Rating
from shared.agents.portfolio.inputs import TickerDecision
from shared.agents.scan.schemas import (
    Conviction,
    KeyTheme,
    MacroContext,
    ScanSummary,
    StockToInvestigate,
    ThesisAngle,
)
from shared.config import Settings
from shared.data.bundled import BundledVendor
from shared.data.contracts import DataKind, Sector
from shared.data.router import DataRouter
from shared.data.sim import SimVendor
from shared.llm.contracts import ChatRequest
from shared.market.bars import Timeframe
from shared.memory import Lesson, MemoryRole, MemoryStore, Outcome, SourceRun
from shared.portfolio.models import Side, TradeRequest
from shared.portfolio.store import PortfolioStore
from shared.queues import TOOLS_QUEUE
from shared.storage.buckets import PAYLOADS_BUCKET
from shared.storage.objects import ObjectStore
from workers.main import WorkerPlan
from workflows.portfolio import PortfolioProgress, PortfolioResult

QUEUE = "test-portfolio"
AS_OF = datetime(2012, 6, 1, tzinfo=UTC)
SIM = SimVendor()
ROUTER = DataRouter(
    {"bundled": BundledVendor(), "sim": SIM},
    {kind: ("bundled", "sim") if kind is DataKind.OHLCV else ("sim",) for kind in DataKind},
)
CLOSE = {
    s: SIM.ohlcv(s, Timeframe.D1, AS_OF, 1)[-1].close for s in ("QBTX", "LMNW", "CRSX", "MDLQ")
}
SCAN_KEY = f"tests/portfolio/{uuid.uuid4()}/scan.json"
LESSON = "Wait for the trial read-out before sizing a biotech value idea."


def _stock(ticker: str, sector: Sector, angle: ThesisAngle, conviction: Conviction) -> Any:
    return StockToInvestigate(
        ticker=ticker,
        name=ticker,
        sector=sector,
        rationale=f"{ticker} {angle.value} idea with improving margins",
        thesis_angle=angle,
        conviction=conviction,
        key_catalysts=["earnings"],
        risks=["valuation"],
    )


SCAN = ScanSummary(
    timeframe="1-3 months",
    executive_summary="Expansion continues with easing policy; technology leads.",
    macro_context=MacroContext(
        economic_cycle="mid-cycle expansion",
        central_bank_stance="easing, rates on hold near zero",
        geopolitical_risks=["euro-area debt"],
    ),
    key_themes=[
        KeyTheme(
            theme="tech leadership",
            description="XLK +4% in 21 days",
            conviction=Conviction.HIGH,
            timeframe="1-3 months",
        ),
    ],  # fmt: skip
    stocks_to_investigate=[
        _stock("QBTX", Sector.INFORMATION_TECHNOLOGY, ThesisAngle.GROWTH, Conviction.HIGH),
        _stock("LMNW", Sector.INFORMATION_TECHNOLOGY, ThesisAngle.GROWTH, Conviction.HIGH),
        _stock("CRSX", Sector.INFORMATION_TECHNOLOGY, ThesisAngle.MOMENTUM, Conviction.HIGH),
        _stock("MDLQ", Sector.HEALTH_CARE, ThesisAngle.VALUE, Conviction.MEDIUM),
        _stock("WTTQ", Sector.UTILITIES, ThesisAngle.DEFENSIVE, Conviction.LOW),
        _stock("CHRQ", Sector.COMMUNICATION_SERVICES, ThesisAngle.MOMENTUM, Conviction.HIGH),
    ],
    risk_factors=["a growth scare"],
)


def decision_of(symbol: str, rating: Rating, target: float | None = None) -> dict[str, Any]:
    return TickerDecision(
        symbol=symbol,
        rating=rating,
        signal=SIGNAL_OF_RATING[rating],
        price_target=target,
        executive_summary=f"{rating.value} {symbol}",
        as_of=AS_OF,
    ).model_dump(mode="json")


DECISIONS = [
    decision_of("QBTX", Rating.BUY, CLOSE["QBTX"] * 1.2),
    decision_of("LMNW", Rating.BUY, CLOSE["LMNW"] * 1.25),
    decision_of("CRSX", Rating.BUY, CLOSE["CRSX"] * 1.2),
    decision_of("MDLQ", Rating.OVERWEIGHT, CLOSE["MDLQ"] * 1.15),
    decision_of("WTTQ", Rating.HOLD),
    decision_of("PTRQ", Rating.SELL),
]


@dataclass
class Services:
    """What the tests read back: the book's database and S3."""

    store: PortfolioStore
    url: str
    objects: ObjectStore
    settings: Settings

    def book(self, name: str, holdings: dict[str, int] | None = None) -> str:
        """A fresh book of 100,000 holding ``holdings`` (bought at the as-of close)."""
        self.store.create(name, 100_000)
        for i, (symbol, shares) in enumerate((holdings or {}).items()):
            quote = SIM.ohlcv(symbol, Timeframe.D1, AS_OF - timedelta(days=30), 1)[-1].close
            self.store.execute_trade(
                name,
                TradeRequest(
                    key=f"seed-{name}-{i}",
                    symbol=symbol,
                    side=Side.BUY,
                    shares=shares,
                    price=Decimal(str(quote)),
                    fees=Decimal(0),
                    executed_at=AS_OF - timedelta(days=30),
                    rationale="seed",
                ),
            )
        return name


def tools_plan(
    settings: Settings, store: PortfolioStore, memory: MemoryStore, objects: ObjectStore
) -> WorkerPlan:
    book = PortfolioActivities(settings, books=store, router=ROUTER, memory=memory, store=objects)
    research = ResearchActivities(settings, router=ROUTER, store=objects)
    notify = NotifyActivities(settings)
    return WorkerPlan(
        queue=TOOLS_QUEUE,
        activities=[
            *book.activities(),
            *notify.activities(),
            research.store_report,
            research.load_text,
        ],
        threads=True,
    )


def memory_with_lesson(path: Path) -> MemoryStore:
    memory = MemoryStore(f"sqlite:///{path}")
    memory.record_lesson(
        Lesson(
            role=MemoryRole.PORTFOLIO_MANAGER,
            symbol="MDLQ",
            as_of=datetime(2011, 6, 1, tzinfo=UTC),
            situation="MDLQ value idea with improving margins earnings valuation",
            decision="Buy",
            outcome=Outcome(realised_return=-0.08, alpha=-0.06, horizon_days=30),
            lesson=LESSON,
            source=SourceRun(workflow_id="old-portfolio", run_id="r1"),
        )
    )
    return memory


def run_input(book: str, **fields: Any) -> dict[str, Any]:
    return {
        "portfolio": book,
        "as_of": AS_OF.isoformat(),
        "scan_summary": {"bucket": PAYLOADS_BUCKET, "key": SCAN_KEY},
        "decisions": DECISIONS,
        **fields,
    }


async def start_run(env: WorkflowEnvironment, payload: Any, workflow_id: str | None = None) -> Any:
    return await env.client.start_workflow(
        "Portfolio",
        payload,
        id=workflow_id or f"portfolio-{uuid.uuid4()}",
        task_queue=QUEUE,
        result_type=PortfolioResult,
    )


async def chats_of(env: WorkflowEnvironment, handle: WorkflowHandle[Any, Any]) -> dict[str, Any]:
    """Each chat's request by agent, and (scheduled, completed) event ids by agent."""
    converter = env.client.data_converter
    found: dict[str, Any] = {}
    scheduled: dict[int, str] = {}
    for event in (await handle.fetch_history()).events:
        if event.event_type == EventType.EVENT_TYPE_ACTIVITY_TASK_SCHEDULED:
            attrs = event.activity_task_scheduled_event_attributes
            if attrs.activity_type.name == "chat":
                [request] = await converter.decode(attrs.input.payloads, [ChatRequest])
                found[request.agent] = [request, event.event_id, None]
                scheduled[event.event_id] = request.agent
        elif event.event_type == EventType.EVENT_TYPE_ACTIVITY_TASK_COMPLETED:
            agent = scheduled.get(event.activity_task_completed_event_attributes.scheduled_event_id)
            if agent:
                found[agent][2] = event.event_id
    return found


async def until_waiting(handle: WorkflowHandle[Any, Any], queries: int = 5_000) -> None:
    """Ask ``progress`` until the run waits for its approval (each query is a round trip to
    the worker; the time-skipping server's history long-poll would wait out its timeout)."""
    for _ in range(queries):
        with contextlib.suppress(RPCError):  # no query handler before the first task ran
            progress = await handle.query("progress", result_type=PortfolioProgress)
            if progress.awaiting_approval:
                return
    raise AssertionError(f"the run was not waiting for approval after {queries} queries")
