"""The ``Backtest`` workflow's activities: plan and score on ``tools``, the chart on ``charts``.

``plan_backtest`` reads the symbol's daily closes over the whole range through
the data router (the vendors the Pipeline's tools and ``Reflect`` read), to
find the trading dates: the evaluator's view, never shown to an agent.
``score_backtest`` computes the metrics and stores the Markdown report and the
equity CSV; ``render_equity_chart`` stores the PNG. The workflow chooses every
object key, so a retry overwrites its own file. All three are synchronous
(router, S3 and matplotlib are); the workers run them in threads.
"""

from __future__ import annotations

from datetime import UTC, date, datetime, time
from typing import Any

from pydantic import BaseModel, Field

from activities.failures import as_temporal_failures
from activities.group import activity_on
from activities.heartbeat import heartbeating
from activities.services import Services, StoredReport
from shared.backtest import Book, Performance, PricePoint, WalkForward, walk_forward
from shared.backtest.book import FLOW_ROLES
from shared.backtest.claims import BacktestClaims
from shared.backtest.report import equity_csv, render_report
from shared.data.contracts import DataKind
from shared.errors import InvalidInput, NoData
from shared.llm.contracts import LlmChoice
from shared.llm.knowledge import RunCutoff, run_cutoff
from shared.market.bars import Timeframe
from shared.queues import CHARTS_QUEUE, TOOLS_QUEUE
from shared.storage.objects import ObjectRef

MAX_RANGE_DAYS = 366 * 15
"""Calendar days a backtest may span: its closes travel inline to the scoring activities."""
MARKDOWN = "text/markdown; charset=utf-8"
CSV = "text/csv; charset=utf-8"
PNG = "image/png"


class PlanRequest(BaseModel):
    """Which symbol, which dates, how often."""

    symbol: str = Field(min_length=1, max_length=32)
    start: date
    end: date
    every: int = Field(ge=1)


class BacktestPlan(BaseModel):
    """The schedule, and the vendor whose closes it uses."""

    symbol: str
    vendor: str
    schedule: WalkForward


class ScoreRequest(BaseModel):
    """A finished walk-forward and where its report and CSV go."""

    book: Book
    report: ObjectRef
    csv: ObjectRef
    llm: LlmChoice | None = Field(
        None, description="the models that decided: their training cutoffs tag the steps"
    )
    config: dict[str, Any] | None = Field(
        None, description="the walk's configuration, as the trials ledger records it"
    )
    cost_usd: float | None = Field(None, ge=0, description="what the walk's LLM calls cost")


class BacktestScore(BaseModel):
    """The strategy's and buy-and-hold's performance, and the stored files."""

    strategy: Performance
    buy_and_hold: Performance
    report: StoredReport
    csv: StoredReport
    claims: BacktestClaims | None = Field(
        None, description="cutoff periods, leaderboard and Sharpe tests (with llm)"
    )


class EquityChartRequest(BaseModel):
    """A finished walk-forward and where its PNG goes."""

    book: Book
    target: ObjectRef
    llm: LlmChoice | None = Field(None, description="marks the models' training cutoff")


def _midnight(day: date) -> datetime:
    """The label of ``day``'s daily bar: bars at or before it include that day's."""
    return datetime.combine(day, time(), tzinfo=UTC)


class BacktestActivities(Services):
    """Backtest I/O over the shared, lazily built clients."""

    def _closes(self, symbol: str, as_of: date, lookback: int) -> tuple[list[PricePoint], str]:
        cutoff = _midnight(as_of)
        routed = self.router.call(
            DataKind.OHLCV,
            lambda vendor: vendor.ohlcv(symbol, Timeframe.D1, cutoff, lookback),
            as_of=cutoff,
        )
        return [PricePoint(time=bar.time, close=bar.close) for bar in routed.value], routed.vendor

    def plan(self, request: PlanRequest) -> BacktestPlan:
        """The schedule over the data's trading dates; errors name start, end or every."""
        symbol = request.symbol.strip().upper()
        span = (request.end - request.start).days
        if span > MAX_RANGE_DAYS:
            raise InvalidInput(
                "end", f"{span} days from start to end", fix="Split it into ranges of 15 years."
            )
        # One calendar day more than the range holds: if the data goes back past start,
        # the window reaches a bar before it, which is how the schedule knows it does.
        lookback = max(span, 0) + 2
        try:
            bars, vendor = self._closes(symbol, request.end, lookback)
        except (NoData, InvalidInput) as error:
            if isinstance(error, InvalidInput) and error.field != "symbol":
                raise
            self._explain_missing_end(symbol, request)
            raise
        return BacktestPlan(
            symbol=symbol,
            vendor=vendor,
            schedule=walk_forward(bars, request.start, request.end, request.every),
        )

    def _explain_missing_end(self, symbol: str, request: PlanRequest) -> None:
        """When no vendor reaches ``end`` but one reaches ``start``, say the data ends between."""
        if request.start > request.end:
            return
        try:
            bars, vendor = self._closes(symbol, request.start, 1)
        except (NoData, InvalidInput):
            return
        raise InvalidInput(
            "end",
            f"no vendor has {symbol} daily bars as of {request.end}, though {vendor} has them "
            f"as of {bars[-1].time.date()}: the data ends between the two",
            fix="End earlier, within the data.",
        ) from None

    @activity_on(TOOLS_QUEUE, "plan_backtest")
    @heartbeating
    def plan_backtest(self, request: PlanRequest) -> BacktestPlan:
        """The trading dates the flow runs at, and every close the positions are marked at."""
        with as_temporal_failures():
            return self.plan(request)

    def _put(self, ref: ObjectRef, data: bytes, content_type: str) -> StoredReport:
        return self.put_report(ref.model_copy(update={"content_type": content_type}), data)

    @activity_on(TOOLS_QUEUE, "score_backtest")
    @heartbeating
    def score_backtest(self, request: ScoreRequest) -> BacktestScore:
        """Metrics of the strategy and buy-and-hold; the Markdown report and the CSV, stored."""
        with as_temporal_failures():
            book = request.book
            strategy, benchmark = book.scores()
            claims = self._claims(request, request.llm) if request.llm else None
            markdown = render_report(book, strategy, benchmark, claims)
            tags = claims.tags if claims else None
            return BacktestScore(
                strategy=strategy,
                buy_and_hold=benchmark,
                report=self._put(request.report, markdown.encode(), MARKDOWN),
                csv=self._put(request.csv, equity_csv(book, tags).encode(), CSV),
                claims=claims,
            )

    def _cutoff(self, book: Book, llm: LlmChoice) -> RunCutoff:
        return run_cutoff(self.settings, llm, FLOW_ROLES[book.flow])

    def _claims(self, request: ScoreRequest, llm: LlmChoice) -> BacktestClaims:
        """Record the walk in the trials ledger, then measure it against every trial."""
        # The statistics load scipy and arch: only the scoring worker does.
        from shared.backtest.measure import daily_returns, measure_backtest
        from shared.stats.ledger import dates_key
        from shared.stats.returns import sharpe

        book = request.book
        cutoff = self._cutoff(book, llm)
        returns = daily_returns(book.equity())
        dates = dates_key(book.symbol, [p.time.date() for p in book.schedule.prices])
        if request.config is not None:
            config = request.config | {"models": [m.model for m in cutoff.models]}
            label = f"{book.flow.value} {book.symbol} {llm.provider}"
            self.trials.record(
                "backtest",
                config,
                label=label,
                sharpe=sharpe(returns),
                dates=dates,
                returns=returns,
            )
        return measure_backtest(
            book,
            cutoff,
            trials=max(1, self.trials.count("backtest")),
            trial_sharpes=self.trials.sharpes("backtest"),
            rivals=self.trials.returns_on("backtest", dates),
            cost_usd=request.cost_usd,
        )

    @activity_on(CHARTS_QUEUE, "render_equity_chart")
    @heartbeating
    def render_equity_chart(self, request: EquityChartRequest) -> StoredReport:
        """The equity curves against buy-and-hold as a PNG, stored."""
        from shared.backtest.chart import render_equity_chart

        with as_temporal_failures():
            cutoff = self._cutoff(request.book, request.llm) if request.llm else None
            last_day = cutoff.last_day if cutoff else None
            return self._put(request.target, render_equity_chart(request.book, last_day), PNG)
