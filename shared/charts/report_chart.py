"""The ticker chart of a run report: candles and volume drawn straight onto pixels.

An AutoRun draws one per name beside its report, for people to read. Through mplfinance
a chart cost about 0.33 s of CPU, most of it matplotlib building and laying out artists;
a desk of 100 names spent a quarter of its CPU on them, on a machine the dev server and
the workers already fill (issue 39, ``bench/bench_desk.py``'s CPU line). Drawn here with
Pillow, rectangles and lines at computed pixels, a chart costs 30-50 ms and
looks the same in kind: hollow rising and filled falling candles in greys, prices on the
right, dates below, volume under the prices when the source reports any.

QuantAgent's charts stay with mplfinance (``shared.charts.render``): a vision model reads
those, and their look is part of its prompt.
"""

from __future__ import annotations

import math
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from functools import cache
from io import BytesIO
from pathlib import Path

from PIL import Image, ImageDraw, ImageFont

from shared.charts.look import (
    BACKGROUND,
    BODY_WIDTH,
    CANDLE_MARGIN,
    EDGE,
    FALLING,
    GRID,
    RISING,
    VOLUME_DOWN,
    VOLUME_UP,
    X_TICKS,
    chart_title,
    time_format,
)
from shared.errors import InvalidInput
from shared.market.bars import Bar, Timeframe, validate_bars

WIDTH, HEIGHT = 1280, 720
MARGIN_LEFT, MARGIN_RIGHT, MARGIN_TOP, MARGIN_BOTTOM = 48, 96, 52, 44
"""Pixels around the panels: room for a date label centred on the first bar, the prices."""
PANEL_GAP = 14
VOLUME_SHARE = 0.25
"""Of the plot's height, for the volume panel (when there is one)."""
Y_TICKS = 7
"""About how many price labels: the step is the nice number nearest range / this."""

FRAME = TEXT = EDGE


@cache
def _font(size: int) -> ImageFont.FreeTypeFont:
    """DejaVu Sans, the font matplotlib ships (so report charts read like the others)."""
    import matplotlib

    return ImageFont.truetype(
        str(Path(matplotlib.get_data_path()) / "fonts/ttf/DejaVuSans.ttf"), size
    )


@dataclass(frozen=True)
class Panel:
    """A plot area in pixels and the values its top and bottom edges stand for."""

    left: int
    top: int
    right: int
    bottom: int
    low: float
    high: float

    def y(self, value: float) -> float:
        """The pixel row of ``value`` (higher values are higher up)."""
        return self.bottom - (value - self.low) / (self.high - self.low) * (self.bottom - self.top)


def nice_ticks(low: float, high: float, count: int = Y_TICKS) -> list[float]:
    """Round values inside [low, high], about ``count`` of them, a 1, 2, 2.5 or 5 step apart."""
    raw = (high - low) / count
    magnitude = 10 ** math.floor(math.log10(raw))
    step = min((m * magnitude for m in (1, 2, 2.5, 5, 10)), key=lambda s: abs(s - raw))
    first = math.ceil(low / step) * step
    return [first + i * step for i in range(int((high - first) / step) + 1)]


def _engineering(value: float) -> str:
    """Volume labels: 0, 850, 1.2k, 3.4M, 1.1G."""
    for divisor, suffix in ((1e9, "G"), (1e6, "M"), (1e3, "k")):
        if value >= divisor:
            return f"{value / divisor:.3g}{suffix}"
    return f"{value:.3g}"


def _panels(window: Sequence[Bar], with_volume: bool) -> tuple[Panel, Panel | None]:
    """The price panel (the candles' range with a margin) and, under it, the volume panel."""
    lows, highs = [b.low for b in window], [b.high for b in window]
    span = (max(highs) - min(lows)) or max(highs) * 0.01
    low, high = min(lows) - CANDLE_MARGIN * span, max(highs) + CANDLE_MARGIN * span
    left, right = MARGIN_LEFT, WIDTH - MARGIN_RIGHT
    top, bottom = MARGIN_TOP, HEIGHT - MARGIN_BOTTOM
    if not with_volume:
        return Panel(left, top, right, bottom, low, high), None
    split = round(bottom - (bottom - top) * VOLUME_SHARE)
    volume = Panel(left, split, right, bottom, 0.0, 1.1 * max(b.volume for b in window))
    return Panel(left, top, right, split - PANEL_GAP, low, high), volume


def _axis(
    draw: ImageDraw.ImageDraw,
    panel: Panel,
    ticks: list[float],
    label: str,
    fmt: Callable[[float], str],
) -> None:
    """Grid lines and labels at ``ticks`` on the right, the axis name above them, the frame."""
    font = _font(12)
    for value in ticks:
        y = round(panel.y(value))
        draw.line([(panel.left, y), (panel.right, y)], fill=GRID)
        draw.line([(panel.right, y), (panel.right + 4, y)], fill=FRAME)
        draw.text((panel.right + 7, y), fmt(value), fill=TEXT, font=font, anchor="lm")
    draw.text((panel.right + 7, panel.top - 4), label, fill=TEXT, font=font, anchor="lb")


def render_report_chart(bars: Sequence[Bar], *, symbol: str, timeframe: str, last: int) -> bytes:
    """PNG (1280 x 720) of the last ``last`` candles, with volume when any is reported.

    Raises ``InvalidInput`` on ``last`` below 2, on ``bars`` when fewer than ``last`` are
    given or they are unusable (order, prices), and on ``timeframe`` when it is unknown.
    """
    if last < 2:
        raise InvalidInput("last", f"a chart needs a window of at least 2 bars, got {last}")
    period = Timeframe.parse(timeframe)
    window = list(bars[-last:])
    validate_bars(window, min_bars=last, field="bars")
    price, volume = _panels(window, with_volume=any(b.volume > 0 for b in window))

    image = Image.new("RGB", (WIDTH, HEIGHT), BACKGROUND)
    draw = ImageDraw.Draw(image)
    draw.text(
        (MARGIN_LEFT, MARGIN_TOP - 14),
        chart_title([b.time for b in window], symbol, period),
        fill=TEXT,
        font=_font(16),
        anchor="lb",
    )
    steps = nice_ticks(price.low, price.high)
    decimals = max(0, -math.floor(math.log10(steps[1] - steps[0]))) if len(steps) > 1 else 2
    _axis(draw, price, steps, "price", lambda v: f"{v:,.{decimals}f}")
    if volume is not None:
        _axis(draw, volume, nice_ticks(0.0, volume.high, 3)[1:], "volume", _engineering)

    slot = (price.right - price.left) / len(window)
    half = max(1.0, slot * BODY_WIDTH / 2)
    lowest = volume or price
    pattern = time_format(period)
    for index in sorted({round(i * (len(window) - 1) / (X_TICKS - 1)) for i in range(X_TICKS)}):
        x = round(price.left + (index + 0.5) * slot)
        for panel in (price, volume) if volume else (price,):
            draw.line([(x, panel.top), (x, panel.bottom)], fill=GRID)
        draw.line([(x, lowest.bottom), (x, lowest.bottom + 4)], fill=FRAME)
        label = window[index].time.strftime(pattern)
        draw.text((x, lowest.bottom + 8), label, fill=TEXT, font=_font(12), anchor="mt")

    for index, bar in enumerate(window):
        centre = price.left + (index + 0.5) * slot
        x = round(centre)
        draw.line([(x, round(price.y(bar.high))), (x, round(price.y(bar.low)))], fill=EDGE)
        rising = bar.close >= bar.open
        top, bottom = price.y(max(bar.open, bar.close)), price.y(min(bar.open, bar.close))
        body = [
            round(centre - half),
            round(top),
            round(centre + half),
            max(round(top), round(bottom)),
        ]
        draw.rectangle(body, fill=RISING if rising else FALLING, outline=EDGE)
        if volume is not None and bar.volume > 0:
            bar_box = [
                round(centre - half),
                round(volume.y(bar.volume)),
                round(centre + half),
                volume.bottom,
            ]
            draw.rectangle(bar_box, fill=VOLUME_UP if rising else VOLUME_DOWN)

    for panel in (price, volume) if volume else (price,):
        draw.rectangle([panel.left, panel.top, panel.right, panel.bottom], outline=FRAME)
    buffer = BytesIO()
    image.save(buffer, format="PNG")
    return buffer.getvalue()
