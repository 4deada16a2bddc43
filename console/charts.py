"""Charts drawn on the server as inline SVG: no script library, nothing fetched by the page."""

from __future__ import annotations

from collections.abc import Sequence
from datetime import datetime
from html import escape

WIDTH, HEIGHT, PAD = 640, 220, 40


def line_svg(points: Sequence[tuple[datetime, float]], label: str) -> str | None:
    """A line of ``points`` (time, value) with its first/last dates and low/high values;
    None for fewer than two points (nothing to draw a line through)."""
    if len(points) < 2:
        return None
    times = [t.timestamp() for t, _ in points]
    values = [v for _, v in points]
    t0, t1 = min(times), max(times)
    low, high = min(values), max(values)
    span_t = (t1 - t0) or 1.0
    span_v = (high - low) or 1.0

    def x(t: float) -> float:
        return PAD + (t - t0) / span_t * (WIDTH - 2 * PAD)

    def y(v: float) -> float:
        return HEIGHT - PAD - (v - low) / span_v * (HEIGHT - 2 * PAD)

    path = " ".join(f"{x(t):.1f},{y(v):.1f}" for t, v in zip(times, values, strict=True))
    dots = "".join(
        f'<circle cx="{x(t):.1f}" cy="{y(v):.1f}" r="3"/>'
        for t, v in zip(times, values, strict=True)
    )
    first, last = points[0][0], points[-1][0]
    return (
        f'<svg class="chart" viewBox="0 0 {WIDTH} {HEIGHT}" role="img" '
        f'aria-label="{escape(label)}" xmlns="http://www.w3.org/2000/svg">'
        f'<text x="{PAD}" y="16">{escape(label)}</text>'
        f'<text x="4" y="{y(high) + 4:.1f}">{high:,.0f}</text>'
        f'<text x="4" y="{y(low) + 4:.1f}">{low:,.0f}</text>'
        f'<text x="{PAD}" y="{HEIGHT - 8}">{first:%Y-%m-%d}</text>'
        f'<text x="{WIDTH - PAD}" y="{HEIGHT - 8}" text-anchor="end">{last:%Y-%m-%d}</text>'
        f'<polyline points="{path}"/>{dots}</svg>'
    )
