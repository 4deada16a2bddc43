"""The chart activities of the ``charts`` queue: render a PNG, store it, return its key.

A chart (~100 KB) never crosses Temporal: the workflow chooses the object key
(from its workflow id, run id and step), the activity overwrites whatever is
there, so a retry leaves one chart, and the vision agents read it by key. The
activities are synchronous because matplotlib is; the worker runs them in a
thread pool, and each chart is drawn in the chart process (``shared.charts.offload``).
Matplotlib is imported by the first chart, not with this module, which the CLI and the
console import with the workflows that name its activities.
"""

from __future__ import annotations

from pydantic import BaseModel, Field

from activities.failures import as_temporal_failures
from activities.group import activity_on
from activities.heartbeat import heartbeating
from activities.services import Services
from shared.charts.offload import drawn
from shared.charts.png import png_dimensions
from shared.market.bars import Bar, Timeframe
from shared.queues import CHARTS_QUEUE
from shared.storage.objects import ObjectRef
from shared.ta.trend_summary import TrendLines

PNG = "image/png"


class ChartRequest(BaseModel):
    """Bars to chart and where to put the chart."""

    symbol: str = Field(description="ticker shown in the title, e.g. GOOG")
    timeframe: Timeframe = Field(description="bar length, e.g. 1d or 1h")
    bars: list[Bar] = Field(
        description="oldest first; the chart uses the last 40 (pattern) or 50 (trend). "
        "Inline because 100 bars are ~10 KB, far below Temporal's payload limit"
    )
    target: ObjectRef = Field(
        description="where to store the PNG, chosen by the workflow so a retry overwrites it"
    )


class ChartResult(BaseModel):
    """Where the stored chart is and what it is."""

    chart: ObjectRef = Field(description="the stored PNG")
    url: str = Field(description="presigned GET URL for people (UI, reports); agents use the key")
    width: int = Field(description="pixels")
    height: int = Field(description="pixels")
    size_bytes: int = Field(description="size of the PNG")
    trendlines: TrendLines | None = Field(
        None, description="the four lines drawn on a trend chart; None for a pattern chart"
    )


class ChartActivities(Services):
    """Chart activities over an object store that is connected on first use.

    Connecting lazily lets the worker import and register these without a reachable
    S3 server or settings; tests inject ``settings`` or a ready ``store``.
    """

    def _stored(self, request: ChartRequest, png: bytes, lines: TrendLines | None) -> ChartResult:
        """Store ``png`` at the request's target and describe it."""
        ref = self.store.put_bytes(request.target.model_copy(update={"content_type": PNG}), png)
        width, height = png_dimensions(png)
        return ChartResult(
            chart=ref,
            url=self.store.presigned_url(ref),
            width=width,
            height=height,
            size_bytes=len(png),
            trendlines=lines,
        )

    @activity_on(CHARTS_QUEUE, "render_pattern_chart")
    @heartbeating
    def render_pattern_chart(self, request: ChartRequest) -> ChartResult:
        """Candles (and volume) of the last 40 bars, for the pattern agent."""
        from shared.charts.render import render_pattern_chart

        with as_temporal_failures():
            png = drawn(
                render_pattern_chart,
                request.bars,
                symbol=request.symbol,
                timeframe=request.timeframe,
            )
            return self._stored(request, png, None)

    @activity_on(CHARTS_QUEUE, "render_trend_chart")
    @heartbeating
    def render_trend_chart(self, request: ChartRequest) -> ChartResult:
        """Candles of the last 50 bars with four trendlines, for the trend agent."""
        from shared.charts.render import render_trend_chart

        with as_temporal_failures():
            png, lines = drawn(
                render_trend_chart, request.bars, symbol=request.symbol, timeframe=request.timeframe
            )
            return self._stored(request, png, lines)
