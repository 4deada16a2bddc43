"""The Portfolio flow's activities on the ``tools`` queue: the book, its risk, the plan, the fills.

Each does I/O (the book's database, the data router, the memory, S3) or holds
a decision the run must not recompute on replay: sizing and the sweep are pure
functions, but as activities their plans are recorded in the history, so an
approval that waits for days approves exactly the orders that then execute,
whatever the code does meanwhile. The paper broker books each order under the
key the workflow chose (its id and the order's index) and heartbeats after
each one, so a dead worker is noticed and the next attempt books only what is
left.
"""

from __future__ import annotations

from pydantic import AwareDatetime, BaseModel, Field, ValidationError
from temporalio import activity

from activities.failures import as_temporal_failures
from activities.group import activity_on
from activities.services import Services
from shared.agents.portfolio.schemas import AllocationDecision
from shared.agents.scan.schemas import ScanSummary
from shared.data.contracts import TBILL_ETF, Sector
from shared.errors import InvalidInput
from shared.memory import MemoryRole
from shared.portfolio import constraints, sweep
from shared.portfolio.broker import PaperBroker
from shared.portfolio.costs import Costs
from shared.portfolio.limits import Limits
from shared.portfolio.market import Closes, MarketReader, Quote, QuoteMissing
from shared.portfolio.models import BrokerKind, DecisionRecord, Snapshot
from shared.portfolio.orders import Execution, OrderPlan, PlannedOrder
from shared.portfolio.prioritize import (
    Idea,
    LessonMatch,
    Prioritized,
    prioritize,
    situation_of,
)
from shared.portfolio.risk import RiskReport, measure_risk
from shared.portfolio.valuation import Valuation, snapshot_of, value_book
from shared.queues import TOOLS_QUEUE
from shared.storage.objects import ObjectRef

BENCHMARK = "^GSPC"
Quotes = dict[str, Quote | QuoteMissing]


class LoadRequest(BaseModel):
    """Which book, as of when, and what else to price."""

    portfolio: str
    as_of: AwareDatetime
    scan_summary: ObjectRef | None = Field(None, description="JSON of a ScanSummary in S3")
    symbols: list[str] = Field(default_factory=list, description="more symbols to quote")
    broker: BrokerKind | None = Field(
        None, description="the broker the run expects; a book bound to another is refused"
    )


class LoadedBook(BaseModel):
    """The book at the as-of closes, every symbol of the run quoted and classified."""

    valuation: Valuation
    quotes: Quotes
    sectors: dict[str, Sector | None]
    scan: ScanSummary | None
    costs: Costs = Field(description="the broker's costs in this worker's settings")
    broker: BrokerKind = Field(BrokerKind.PAPER, description="where the book's orders go")


class RiskRequest(BaseModel):
    """The book to measure, and against what."""

    valuation: Valuation
    benchmark: str = BENCHMARK


class PrioritizeRequest(BaseModel):
    """The candidates (the Scan's and watched names) and the book they would join."""

    valuation: Valuation
    stocks: list[Idea]
    sectors: dict[str, Sector | None]
    limits: Limits


class SizeRequest(BaseModel):
    """The PM's decision and everything its orders are sized by."""

    valuation: Valuation
    decision: AllocationDecision
    quotes: Quotes
    sectors: dict[str, Sector | None]
    limits: Limits
    costs: Costs


class SweepRequest(BaseModel):
    """A sized plan to settle with the T-bill ETF."""

    plan: OrderPlan
    valuation: Valuation
    quotes: Quotes
    sectors: dict[str, Sector | None]


class DecisionRequest(BaseModel):
    """A decision to record in the book's history."""

    portfolio: str
    record: DecisionRecord


class ExecuteRequest(BaseModel):
    """Orders to fill, under keys made from ``run_key`` and each order's index."""

    portfolio: str
    orders: list[PlannedOrder]
    costs: Costs
    run_key: str = Field(min_length=1, description="the workflow id")
    as_of: AwareDatetime


class SnapshotRequest(BaseModel):
    """Value the book as of a time and keep it under ``key``."""

    portfolio: str
    as_of: AwareDatetime
    key: str = Field(min_length=1)


class PortfolioActivities(Services):
    """The flow's I/O over the shared, lazily built clients (the book's database is
    ``books``, S3 ``store``)."""

    def _valuation(self, portfolio: str, market: MarketReader) -> Valuation:
        """The book at the closes, each holding in the sector the data layer gives it."""
        book, held = self.books.get(portfolio), self.books.holdings(portfolio)
        symbols = [h.symbol for h in held]
        return value_book(book, held, market.quotes(symbols), market.as_of, market.sectors(symbols))

    def _scan(self, ref: ObjectRef) -> ScanSummary:
        try:
            return ScanSummary.model_validate_json(self.store.get_bytes(ref))
        except ValidationError as error:
            raise InvalidInput(
                "scan_summary",
                f"s3://{ref.bucket}/{ref.key} is not a ScanSummary ({error.error_count()} "
                f"problems, first: {error.errors()[0]['msg']})",
                fix="Pass the summary key a Scan run stored.",
            ) from None

    @activity_on(TOOLS_QUEUE, "load_portfolio")
    def load_portfolio(self, request: LoadRequest) -> LoadedBook:
        """The book valued at the as-of closes; the Scan summary; quotes and sectors of all."""
        with as_temporal_failures():
            broker = self.books.get(request.portfolio, broker=request.broker).broker
            market = MarketReader(self.router, request.as_of)
            valuation = self._valuation(request.portfolio, market)
            scan = self._scan(request.scan_summary) if request.scan_summary else None
            symbols = [
                *(p.symbol for p in valuation.positions),
                *(scan.tickers() if scan else []),
                *request.symbols,
                TBILL_ETF,
            ]
            return LoadedBook(
                valuation=valuation,
                quotes=market.quotes(symbols),
                sectors=market.sectors(symbols),
                scan=scan,
                costs=self.settings.paper_costs,
                broker=broker,
            )

    @activity_on(TOOLS_QUEUE, "compute_risk")
    def compute_risk(self, request: RiskRequest) -> RiskReport:
        """The book's risk from daily closes up to its as-of date."""
        with as_temporal_failures():
            market = MarketReader(self.router, request.valuation.as_of)
            history: dict[str, Closes | QuoteMissing] = {
                p.symbol: market.closes(p.symbol) for p in request.valuation.positions
            }
            return measure_risk(
                request.valuation,
                history,
                market.closes(request.benchmark),
                market.closes(TBILL_ETF),
                benchmark_symbol=request.benchmark,
            )

    @activity_on(TOOLS_QUEUE, "prioritize_candidates")
    def prioritize_candidates(self, request: PrioritizeRequest) -> Prioritized:
        """The candidates scored, the memory gate fed by each ticker's closest PM lesson."""
        with as_temporal_failures():
            lessons: dict[str, LessonMatch | None] = {}
            for stock in request.stocks:
                recalled = self.memory.recall(
                    MemoryRole.PORTFOLIO_MANAGER,
                    situation_of(stock),
                    as_of=request.valuation.as_of,
                    top_k=1,
                    symbol=stock.ticker,
                )
                lessons[stock.ticker] = (
                    LessonMatch(
                        score=recalled[0].score,
                        alpha=recalled[0].outcome.alpha,
                        lesson=recalled[0].lesson,
                        as_of=recalled[0].as_of,
                    )
                    if recalled
                    else None
                )
            return prioritize(
                request.stocks, request.valuation, request.sectors, request.limits, lessons
            )

    @activity_on(TOOLS_QUEUE, "size_orders")
    def size_orders(self, request: SizeRequest) -> OrderPlan:
        """The PM's orders scaled to the limits, each change explained."""
        with as_temporal_failures():
            decision = request.decision
            return constraints.size_orders(
                request.valuation,
                decision.sells,
                decision.buys,
                request.quotes,
                request.sectors,
                request.limits,
                request.costs,
                cash_reserve=decision.cash_reserve,
            )

    @activity_on(TOOLS_QUEUE, "sweep_cash")
    def sweep_cash(self, request: SweepRequest) -> OrderPlan:
        """The plan settled with the T-bill ETF."""
        with as_temporal_failures():
            return sweep.sweep_cash(
                request.plan, request.valuation, request.quotes, request.sectors
            )

    @activity_on(TOOLS_QUEUE, "record_decision")
    def record_decision(self, request: DecisionRequest) -> DecisionRecord:
        """Keep the decision, its plan and its approval; the first one recorded stays."""
        with as_temporal_failures():
            return self.books.record_decision(request.portfolio, request.record)

    @activity_on(TOOLS_QUEUE, "execute_orders")
    def execute_orders(self, request: ExecuteRequest) -> Execution:
        """Fill the orders on the paper broker at the as-of closes, each key once."""
        with as_temporal_failures():
            activity.heartbeat("started")
            broker = PaperBroker(self.books, MarketReader(self.router, request.as_of))
            return broker.execute(
                request.portfolio,
                request.orders,
                request.costs,
                run_key=request.run_key,
                as_of=request.as_of,
                on_order=lambda index: activity.heartbeat(index),
            )

    @activity_on(TOOLS_QUEUE, "record_snapshot")
    def record_snapshot(self, request: SnapshotRequest) -> Snapshot:
        """The book valued as of the run, stored once under the run's key."""
        with as_temporal_failures():
            market = MarketReader(self.router, request.as_of)
            valuation = self._valuation(request.portfolio, market)
            return self.books.record_snapshot(
                request.portfolio, snapshot_of(valuation, request.key)
            )
