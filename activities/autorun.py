"""The AutoRun's own activities: list the names it was given, open the book it manages,
gather its decisions, and store its run report.

``list_candidates`` (tools queue) reads a named watchlist, or takes a list of symbols,
and checks every symbol against the data before anything else starts: an unknown
watchlist or symbol fails the run at once (non-retryable), each unknown symbol named.
``open_book`` (tools queue) creates the portfolio with its starting cash the first
time a name is used, and returns the holdings, which become candidates of their
own. ``gather_decisions`` (tools queue) reads the decision each Pipeline stored beside
its report and stores them as one list, which the Portfolio and the report read: a run
of a hundred names does not carry a hundred decisions through its history.
``store_run_report`` (charts queue: it draws) renders each analysed ticker's price
chart as of the run, then the report as Markdown and as an HTML page that shows the
charts from beside it (a page with a hundred charts inlined would weigh megabytes), and
stores them next to each other under the run's keys; a retry overwrites the same
objects. ``store_ticker_chart`` (charts queue) draws one ticker's chart at its place
beside the report ahead of time: each Pipeline of an AutoRun runs it beside its
analysts, so the report, written after the last Pipeline, finds the charts drawn
instead of drawing a hundred of them one after another at the end of the run.
"""

from __future__ import annotations

from decimal import Decimal

from pydantic import AwareDatetime, BaseModel, Field, TypeAdapter
from temporalio import activity

from activities.failures import as_temporal_failures
from activities.group import activity_on
from activities.heartbeat import heartbeating
from activities.research import JSON, MARKDOWN
from activities.services import Services, StoredReport
from shared.agents.portfolio.inputs import TickerDecision
from shared.charts.offload import drawn
from shared.data.contracts import DataKind
from shared.errors import QuantdeskError
from shared.market.bars import Timeframe
from shared.portfolio.models import BrokerKind
from shared.queues import CHARTS_QUEUE, TOOLS_QUEUE
from shared.reports.autorun import AutoRunReport, chart_name, render_markdown
from shared.reports.html import markdown_to_html
from shared.storage.buckets import REPORTS_BUCKET
from shared.storage.objects import ObjectRef
from shared.watchlists.universe import known_symbols

CHART_BARS = 60
"""About three months of daily candles: enough to see the trend a decision rode."""
HTML = "text/html; charset=utf-8"
PNG = "image/png"
DECISIONS = TypeAdapter(list[TickerDecision])


class OpenBookRequest(BaseModel):
    """The book an AutoRun manages, and the cash it starts with if it is new."""

    portfolio: str = Field(min_length=1)
    initial_cash: Decimal = Field(gt=0)
    broker: BrokerKind | None = Field(
        None,
        description="a new book is bound to it (None: paper); an existing one must match "
        "(None: keeps its own)",
    )


class HeldPosition(BaseModel):
    """A holding as the Pipeline's ``position`` input describes it."""

    shares: int
    avg_cost: float
    sector: str | None = None


class OpenedBook(BaseModel):
    """The book, whether it was just created, and what it holds."""

    portfolio: str
    created: bool
    cash: float
    holdings: dict[str, HeldPosition]


class ListCandidatesRequest(BaseModel):
    """The names an AutoRun was given: a watchlist's name, or the symbols themselves."""

    watchlist: str | None = Field(None, description="a watchlist in the book's database")
    symbols: list[str] | None = Field(None, description="symbols, upper-case, each once")
    as_of: AwareDatetime | None = Field(
        None,
        description="the run's analysis time: a name is known if it had bars by then (one "
        "delisted since still is); default now",
    )


class ListedCandidates(BaseModel):
    """The symbols to analyse, in the order given, every one known to the data."""

    symbols: list[str]


class GatherDecisionsRequest(BaseModel):
    """The decisions the Pipelines stored (``decision.json`` each), and where to keep them as
    one list for the Portfolio and the run report."""

    sources: list[ObjectRef] = Field(description="one stored TickerDecision each, in order")
    target: ObjectRef


class GatheredDecisions(BaseModel):
    """Where the list is, and how many decisions it holds."""

    decisions: ObjectRef
    count: int


class RunReportRequest(BaseModel):
    """The report to render and the folder (key prefix) of the run's objects."""

    report: AutoRunReport
    prefix: str = Field(min_length=1, description="e.g. autorun/<workflow id>/<run id>")
    decisions: ObjectRef | None = Field(
        None,
        description="the run's decisions as a stored list (gather_decisions), read into the "
        "report with a link to each Pipeline's report; None: the report carries them",
    )


class TickerChartRequest(BaseModel):
    """One ticker's chart as of the analysis time, and where it goes beside a run report."""

    symbol: str = Field(min_length=1)
    as_of: AwareDatetime
    target: ObjectRef


class TickerChart(BaseModel):
    """Where the chart was stored; None when the data has too few bars for one."""

    chart: ObjectRef | None


class RunReportFiles(BaseModel):
    """The stored report, both renderings, and the charts beside them."""

    markdown: StoredReport
    html: StoredReport
    charts: dict[str, ObjectRef]


class AutoRunActivities(Services):
    """The book and report steps of AutoRun over the shared, lazily built clients."""

    @activity_on(TOOLS_QUEUE, "list_candidates")
    def list_candidates(self, request: ListCandidatesRequest) -> ListedCandidates:
        """The watchlist's symbols (or the ones given), each checked against the data."""
        with as_temporal_failures():
            if request.watchlist is not None:
                field, given = "watchlist", self.watchlists.get(request.watchlist).symbols
            else:
                field, given = "symbols", request.symbols or []
            known = known_symbols(self.router, given, field, not_after=request.as_of)
            return ListedCandidates(symbols=known)

    @activity_on(TOOLS_QUEUE, "open_book")
    def open_book(self, request: OpenBookRequest) -> OpenedBook:
        """The named book (created with ``initial_cash`` if there is none) and its holdings."""
        with as_temporal_failures():
            broker = request.broker or self._broker_of(request.portfolio)
            book, created = self.books.open(request.portfolio, request.initial_cash, broker=broker)
            holdings = {
                h.symbol: HeldPosition(
                    shares=h.shares,
                    avg_cost=float(h.avg_cost),
                    sector=h.sector.value if h.sector else None,
                )
                for h in self.books.holdings(request.portfolio)
            }
            return OpenedBook(
                portfolio=book.name, created=created, cash=float(book.cash), holdings=holdings
            )

    def _broker_of(self, portfolio: str) -> BrokerKind:
        """The broker an existing book is bound to; paper for a book still to be created."""
        known = {book.name: book.broker for book in self.books.portfolios()}
        return known.get(portfolio, BrokerKind.PAPER)

    @activity_on(TOOLS_QUEUE, "gather_decisions")
    def gather_decisions(self, request: GatherDecisionsRequest) -> GatheredDecisions:
        """Read every stored decision and store them as one JSON list (a retry overwrites it)."""
        with as_temporal_failures():
            decisions = [
                TickerDecision.model_validate_json(self.store.get_bytes(source))
                for source in request.sources
            ]
            target = request.target.model_copy(update={"content_type": JSON})
            self.store.put_bytes(target, DECISIONS.dump_json(decisions))
            return GatheredDecisions(decisions=target, count=len(decisions))

    def _with_decisions(self, report: AutoRunReport, source: ObjectRef) -> AutoRunReport:
        """``report`` with the decisions stored at ``source`` and a link to each one's report."""
        decisions = DECISIONS.validate_json(self.store.get_bytes(source))
        urls = {d.symbol: self.store.presigned_url(d.report) for d in decisions if d.report}
        return report.model_copy(update={"decisions": decisions, "report_urls": urls})

    def _chart(self, symbol: str, as_of: AwareDatetime) -> bytes | None:
        """The ticker's recent daily candles as of the run, or None if the data has too few."""
        from shared.charts.report_chart import render_report_chart

        try:
            routed = self.router.call(
                DataKind.OHLCV,
                lambda vendor: vendor.ohlcv(symbol, Timeframe.D1, as_of, CHART_BARS),
                as_of=as_of,
            )
            bars = routed.value
            return drawn(
                render_report_chart,
                bars,
                symbol=symbol,
                timeframe=Timeframe.D1.value,
                last=min(len(bars), CHART_BARS),
            )
        except QuantdeskError as error:
            activity.logger.warning("no chart for %s: %s", symbol, error)
            return None

    def _put(self, key: str, data: bytes, content_type: str) -> StoredReport:
        return self.put_report(
            ObjectRef(bucket=REPORTS_BUCKET, key=key, content_type=content_type), data
        )

    def _store_chart(self, symbol: str, as_of: AwareDatetime, target: ObjectRef) -> bool:
        """Draw ``symbol``'s chart and store it at ``target``; False when there is none."""
        png = self._chart(symbol, as_of)
        if png is not None:
            self.store.put_bytes(target.model_copy(update={"content_type": PNG}), png)
        return png is not None

    @activity_on(CHARTS_QUEUE, "store_ticker_chart")
    @heartbeating
    def store_ticker_chart(self, request: TickerChartRequest) -> TickerChart:
        """Draw and store one ticker's chart ahead of the run report (a retry overwrites it)."""
        with as_temporal_failures():
            drawn = self._store_chart(request.symbol, request.as_of, request.target)
            return TickerChart(chart=request.target if drawn else None)

    @activity_on(CHARTS_QUEUE, "store_run_report")
    @heartbeating
    def store_run_report(self, request: RunReportRequest) -> RunReportFiles:
        """Draw the charts, render Markdown and HTML, store all three kinds side by side."""
        with as_temporal_failures():
            report = request.report
            if request.decisions is not None:
                report = self._with_decisions(report, request.decisions)
            charts: dict[str, ObjectRef] = {}
            for decision in report.decisions:
                name = chart_name(decision.symbol)
                target = ObjectRef(
                    bucket=REPORTS_BUCKET, key=f"{request.prefix}/{name}", content_type=PNG
                )
                # Drawn ahead by the ticker's Pipeline (store_ticker_chart), or drawn now.
                if self.store.exists(target) or self._store_chart(
                    decision.symbol, decision.as_of, target
                ):
                    charts[name] = target
            names = {d.symbol: chart_name(d.symbol) for d in report.decisions}
            report = report.model_copy(
                update={"charts": {s: n for s, n in names.items() if n in charts}}
            )
            markdown = render_markdown(report)
            title = f"AutoRun {report.portfolio} as of {report.as_of:%Y-%m-%d}"
            page = markdown_to_html(markdown, title=title)
            return RunReportFiles(
                markdown=self._put(f"{request.prefix}/report.md", markdown.encode(), MARKDOWN),
                html=self._put(f"{request.prefix}/report.html", page.encode(), HTML),
                charts=charts,
            )
