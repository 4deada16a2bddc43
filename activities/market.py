"""Market-data activities on the ``tools`` queue: load the analysis window, scan its patterns.

Both are thin: the rules live in ``shared.market`` and ``shared.ta``. Loading is
an activity, not workflow code, because sources read files or the network and
validation uses pandas; the window it returns is small enough to travel inline.
"""

from __future__ import annotations

from collections.abc import Callable
from datetime import datetime
from typing import Any

from pydantic import BaseModel, Field

from activities.failures import as_temporal_failures
from activities.group import activity_on
from shared.errors import InvalidInput
from shared.market.bars import Bar, Timeframe, validate_bars
from shared.queues import TOOLS_QUEUE
from shared.ta.patterns import PatternMatch, detect_patterns

# ~120 bytes a bar in JSON: 2,000 bars stay far below Temporal's payload limits.
MAX_LOOKBACK = 2000


class LoadBarsRequest(BaseModel):
    """Which window to analyse: from a source, or bars given by the caller."""

    symbol: str
    timeframe: Timeframe
    as_of: datetime | None = Field(None, description="no bar after this time is returned")
    lookback: int = Field(ge=1, le=MAX_LOOKBACK)
    min_bars: int = Field(ge=1, description="fewest bars the analysis can work with")
    bars: list[Bar] | None = Field(None, description="given bars: no source is read")
    source: str = "bundled"
    csv_path: str | None = Field(None, description="for source=csv: the file to read")


class LoadedBars(BaseModel):
    """The validated window, oldest first."""

    symbol: str
    timeframe: Timeframe
    bars: list[Bar]


def _given_window(request: LoadBarsRequest, bars: list[Bar]) -> list[Bar]:
    """The caller's bars cut at ``as_of``: given data obeys the same no-look-ahead rule."""
    validate_bars(bars, field="bars")
    if request.as_of is None:
        return bars[-request.lookback :]
    kept = [bar for bar in bars if bar.time <= request.as_of]
    if not kept:
        raise InvalidInput(
            "as_of",
            f"{request.as_of.isoformat()} is before the first given bar "
            f"({bars[0].time.isoformat()})",
            fix="Use a later as_of or earlier bars.",
        )
    return kept[-request.lookback :]


def read_window(request: LoadBarsRequest) -> LoadedBars:
    """The last ``lookback`` bars up to ``as_of``, validated, with enough bars for the analysis
    (what ``load_bars`` returns; ``quantdesk prompt show`` reads the window the same way)."""
    if request.bars is not None:
        bars = _given_window(request, request.bars)
    else:
        from shared.market.sources import open_source  # pandas: loaded by the first read

        options = {"files": request.csv_path} if request.source == "csv" else {}
        source = open_source(request.source, **options)
        bars = source.read(
            request.symbol, request.timeframe, as_of=request.as_of, lookback=request.lookback
        )
    validate_bars(bars, min_bars=request.min_bars, field="bars")
    return LoadedBars(symbol=request.symbol.upper(), timeframe=request.timeframe, bars=bars)


@activity_on(TOOLS_QUEUE, "load_bars")
def load_bars(request: LoadBarsRequest) -> LoadedBars:
    """The last ``lookback`` bars up to ``as_of``, validated, with enough bars for the analysis."""
    with as_temporal_failures():
        return read_window(request)


class PatternScanRequest(BaseModel):
    """The bars the pattern chart shows."""

    bars: list[Bar] = Field(min_length=1)


class PatternScan(BaseModel):
    """Geometric pattern detections, most confident first."""

    matches: list[PatternMatch]


def scan_patterns(request: PatternScanRequest) -> PatternScan:
    """The 16 detectors' matches on exactly the bars of the pattern chart."""
    bars = request.bars
    return PatternScan(
        matches=detect_patterns(
            [b.open for b in bars],
            [b.high for b in bars],
            [b.low for b in bars],
            [b.close for b in bars],
        )
    )


@activity_on(TOOLS_QUEUE, "detect_chart_patterns")
def detect_chart_patterns(request: PatternScanRequest) -> PatternScan:
    """Run the 16 detectors on exactly the bars of the pattern chart."""
    with as_temporal_failures():
        return scan_patterns(request)


MARKET_ACTIVITIES: list[Callable[..., Any]] = [load_bars, detect_chart_patterns]
