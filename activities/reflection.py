"""The reflection activities of the ``tools`` queue: measure an outcome, record lessons.

``measure_outcome`` reads daily bars *past* the decision's ``as_of``. That is
not look-ahead: it runs after the horizon, to grade a decision already made,
and it never reads beyond the time it runs at (``now``). When the horizon bar
does not exist yet it answers "not ready" with an estimate of when it will,
and the workflow waits on a durable timer.

Both closes of the stock come from one vendor (the one the router chose for
the decision's bar), so a chain that falls through to another vendor for later
dates (e.g. the simulated market) cannot mix two price histories; the
benchmark's likewise. The activities are synchronous (SQL, file reads); the
worker runs them in a thread pool.
"""

from __future__ import annotations

from datetime import UTC, datetime, timedelta

from pydantic import AwareDatetime, BaseModel, Field

from activities.failures import as_temporal_failures
from activities.group import activity_on
from activities.services import Services
from shared.agents.reflection import MarketOutcome
from shared.data.contracts import DataKind
from shared.errors import NoData
from shared.market.bars import Bar, Timeframe
from shared.memory import Lesson
from shared.queues import TOOLS_QUEUE

DEFAULT_HORIZON_BARS = 5
MAX_HORIZON_BARS = 60
DEFAULT_BENCHMARK = "^GSPC"
TIMEFRAME = Timeframe.D1
# Extra calendar days read past the weekday estimate of the horizon: holidays.
HOLIDAY_SLACK_DAYS = 5
# After a daily bar's period ends, time for a vendor to publish it.
PUBLISH_DELAY = timedelta(hours=6)
# When the estimate has already passed (a holiday, a late feed, a file that stopped),
# look again this much later.
RECHECK_INTERVAL = timedelta(days=1)


class OutcomeRequest(BaseModel):
    """Which decision to grade, and the time the measure is made at."""

    symbol: str = Field(min_length=1, max_length=32)
    as_of: AwareDatetime = Field(description="when the decision was made")
    horizon_bars: int = Field(DEFAULT_HORIZON_BARS, ge=1, le=MAX_HORIZON_BARS)
    benchmark: str = Field(DEFAULT_BENCHMARK, min_length=1, max_length=32)
    now: AwareDatetime | None = Field(
        None, description="read nothing after this; the workflow passes workflow.now()"
    )


class MeasuredOutcome(BaseModel):
    """The outcome, or when to ask again."""

    ready: bool
    market: MarketOutcome | None = None
    learned_at: AwareDatetime | None = Field(
        None, description="when the horizon bar closed: the outcome was knowable from then"
    )
    earliest_at: AwareDatetime | None = Field(
        None, description="not ready: the estimated time the horizon bar will exist"
    )
    bars_seen: int = Field(0, description="bars after the decision's bar that exist so far")
    reason: str = ""


class RecordLessonsRequest(BaseModel):
    """Lessons to store; each is unique per (source workflow id, run id, role)."""

    lessons: list[Lesson]


class RecordedLessons(BaseModel):
    """How many lessons went in; the rest were already there."""

    inserted: int
    already_known: int


def add_weekdays(start: datetime, count: int) -> datetime:
    """``start`` moved ``count`` weekdays forward (no holiday calendar: an estimate)."""
    day = start
    while count > 0:
        day += timedelta(days=1)
        if day.weekday() < 5:
            count -= 1
    return day


def calendar_span(bars: int) -> timedelta:
    """Calendar days that surely hold ``bars`` trading days."""
    return (
        add_weekdays(datetime(2000, 1, 3, tzinfo=UTC), bars)
        - datetime(2000, 1, 3, tzinfo=UTC)
        + timedelta(days=HOLIDAY_SLACK_DAYS)
    )


def _last_at_or_before(bars: list[Bar], moment: datetime) -> Bar | None:
    earlier = [bar for bar in bars if bar.time <= moment]
    return earlier[-1] if earlier else None


class ReflectionActivities(Services):
    """Outcome and memory activities over the shared, lazily built clients (the data
    router to measure, the memory store to record)."""

    def _bars(self, symbol: str, cutoff: datetime, lookback: int) -> tuple[list[Bar], str]:
        routed = self.router.call(
            DataKind.OHLCV,
            lambda vendor: vendor.ohlcv(symbol, TIMEFRAME, cutoff, lookback),
            as_of=cutoff,
        )
        return routed.value, routed.vendor

    def _same_vendor(
        self, vendor: str, symbol: str, cutoff: datetime, lookback: int
    ) -> list[Bar] | None:
        """Bars from ``vendor`` alone; None when its data do not reach ``cutoff`` yet."""
        try:
            return self.router.vendors[vendor].ohlcv(symbol, TIMEFRAME, cutoff, lookback)
        except NoData:
            return None

    def measure(self, request: OutcomeRequest) -> MeasuredOutcome:
        """The outcome of the decision, or "not ready" with when to look again."""
        now = (request.now or datetime.now(UTC)).astimezone(UTC)
        as_of = min(request.as_of.astimezone(UTC), now)
        # The decision's bar: routed like the analysis read it. NoData here is final.
        start_bars, vendor = self._bars(request.symbol, as_of, 1)
        start = start_bars[-1]
        span = calendar_span(request.horizon_bars)
        cutoff = min(now, start.time + span)
        lookback = span.days + 2
        ahead = self._same_vendor(vendor, request.symbol, cutoff, lookback) or []
        after = [bar for bar in ahead if bar.time > start.time]
        if len(after) < request.horizon_bars:
            return self._not_ready(request, start, after, now, vendor)
        end = after[request.horizon_bars - 1]

        bench_start_bars, bench_vendor = self._bars(request.benchmark, start.time, 1)
        bench_start = bench_start_bars[-1]
        bench_ahead = self._same_vendor(bench_vendor, request.benchmark, cutoff, lookback) or []
        if not bench_ahead or bench_ahead[-1].time < end.time:
            reached = bench_ahead[-1].time.date().isoformat() if bench_ahead else "nothing"
            return MeasuredOutcome(
                ready=False,
                earliest_at=now + RECHECK_INTERVAL,
                bars_seen=len(after),
                reason=f"{request.benchmark} ({bench_vendor}) reaches {reached}, "
                f"not {end.time.date().isoformat()} yet",
            )
        bench_end = _last_at_or_before(bench_ahead, end.time)
        assert bench_end is not None  # bench_ahead reaches end.time
        stock_return = end.close / start.close - 1
        bench_return = bench_end.close / bench_start.close - 1
        horizon_days = max(1, (end.time.date() - start.time.date()).days)
        market = MarketOutcome(
            symbol=request.symbol.strip().upper(),
            benchmark=request.benchmark,
            start=start.time,
            end=end.time,
            horizon_bars=request.horizon_bars,
            horizon_days=horizon_days,
            start_close=start.close,
            end_close=end.close,
            benchmark_start_close=bench_start.close,
            benchmark_end_close=bench_end.close,
            stock_return=stock_return,
            benchmark_return=bench_return,
            alpha=stock_return - bench_return,
            vendor=vendor,
        )
        # Knowable once the horizon bar's period ended, and never before memory's own bound.
        learned_at = max(
            end.time + TIMEFRAME.duration, request.as_of + timedelta(days=horizon_days)
        )
        return MeasuredOutcome(
            ready=True, market=market, learned_at=learned_at, bars_seen=len(after)
        )

    def _not_ready(
        self,
        request: OutcomeRequest,
        start: Bar,
        after: list[Bar],
        now: datetime,
        vendor: str,
    ) -> MeasuredOutcome:
        """When the horizon bar should exist: the missing bars as weekdays after the last one."""
        last = after[-1].time if after else start.time
        missing = request.horizon_bars - len(after)
        estimate = add_weekdays(last, missing) + TIMEFRAME.duration + PUBLISH_DELAY
        earliest = estimate if estimate > now else now + RECHECK_INTERVAL
        return MeasuredOutcome(
            ready=False,
            earliest_at=earliest,
            bars_seen=len(after),
            reason=f"{vendor} has {len(after)} of {request.horizon_bars} {request.symbol} "
            f"bars after {start.time.date().isoformat()} as of {now.isoformat()}",
        )

    @activity_on(TOOLS_QUEUE, "measure_outcome")
    def measure_outcome(self, request: OutcomeRequest) -> MeasuredOutcome:
        """The stock's and benchmark's returns from the decision's bar to the horizon-th one."""
        with as_temporal_failures():
            return self.measure(request)

    @activity_on(TOOLS_QUEUE, "record_lessons")
    def record_lessons(self, request: RecordLessonsRequest) -> RecordedLessons:
        """Store the lessons; a retried or rerun reflection inserts nothing twice."""
        with as_temporal_failures():
            inserted = sum(self.memory.record_lesson(lesson) for lesson in request.lessons)
            return RecordedLessons(inserted=inserted, already_known=len(request.lessons) - inserted)
