"""Reversals drawn as curves of closes: the rounded bottom or top and the V-shaped reversal."""

from __future__ import annotations

import math

from shared.ta.patterns.geometry import Bounds, Finding, View, best, finding, hinge, quadratic, ramp

ROUNDED_STARTS = (0.0, 0.2, 0.4)
"""Spans tried for a bowl, as the share of the window skipped: bowls end at the last bar."""

ROUNDED_VERTEX: Bounds = (0.6, 0.35)
"""|Vertex| of the parabola on a [-1, 1] span: the low must sit near the middle."""

ROUNDED_DEPTH_ATR: Bounds = (2.0, 4.0)
"""Depth of the bowl below its shallower rim, in ATRs: a shallow curve is a flat line."""

ROUNDED_R2: Bounds = (0.6, 0.85)
"""R² of the quadratic fit of closes: the curve must explain most of the movement."""

ROUNDED_VS_VEE: Bounds = (0.85, 1.05)
"""Best two-line residual over parabola residual: a bowl is fitted better by the curve than
by any V or any drop-then-flat corner."""

V_POSITION: tuple[Bounds, Bounds] = ((0.2, 0.35), (0.97, 0.85))
"""Where the low sits in the window: middle to late, with room for a recovery after it."""

V_LEG_ATR: Bounds = (2.5, 5.0)
"""Size of the shorter leg in ATRs: a V is a big move, not a wiggle."""

V_RECOVERY: tuple[Bounds, Bounds] = ((0.5, 0.8), (2.0, 1.4))
"""Recovery over drop: similar magnitude, neither a half-hearted bounce nor a new trend."""

V_VS_ROUNDED: Bounds = (0.9, 0.6)
"""Two-line residual over parabola residual: a V is fitted clearly better by two lines."""

V_LEG_R2: Bounds = (0.7, 0.9)
"""R² of the two straight legs: the drop and recovery are steady, not choppy."""


def _rounded_from(view: View, start: int) -> Finding | None:
    """A bowl of closes from bar ``start`` to the last bar: curved, centred, deep, smooth."""
    bars, side = view.bars, view.side
    y = view.close[start:]
    curve = quadratic(y)
    depth_coef, tilt, _ = curve.coef
    if depth_coef <= 0:
        return None
    vertex = -tilt / (2 * depth_coef)
    depth = depth_coef * (1 - min(abs(vertex), 1.0)) ** 2
    scores: tuple[float, ...] = (
        ramp(abs(vertex), ROUNDED_VERTEX),
        ramp(depth / bars.atr, ROUNDED_DEPTH_ATR),
        ramp(curve.r2, ROUNDED_R2),
    )
    if math.prod(scores) == 0:
        return None  # skip the costly search for the best two-line fit
    vee = min(hinge(y, knot).rms for knot in range(2, len(y) - 2))
    vee_ratio = vee / curve.rms if curve.rms > 0 else math.inf
    scores += (ramp(vee_ratio, ROUNDED_VS_VEE),)
    vertex_bar = start + round((vertex + 1) / 2 * (len(y) - 1))
    return finding(
        side.bias,
        scores,
        start,
        bars.n - 1,
        lambda: (
            f"A parabola through the closes of bars {start}-{bars.n - 1} (R² {curve.r2:.2f}) "
            f"has its {side.lowest} point at bar {vertex_bar}, {bars.pct(depth)} {side.below} "
            f"its shallower rim, and the best two straight legs leave {vee_ratio:.2f}x its "
            f"residual."
        ),
    )


def rounded(view: View) -> Finding | None:
    """The best bowl over the candidate spans."""
    return best(_rounded_from(view, int(share * view.bars.n)) for share in ROUNDED_STARTS)


def v_reversal(view: View) -> Finding | None:
    """A sharp straight drop to a middle-late low and a sharp straight recovery of like size."""
    bars, side, close = view.bars, view.side, view.close
    low = int(close.argmin())
    top_before = int(close[: low + 1].argmax())
    top_after = low + int(close[low:].argmax())
    if low - top_before < 2 or top_after - low < 2:
        return None
    drop, rise = close[top_before] - close[low], close[top_after] - close[low]
    if drop <= 0 or rise <= 0:
        return None
    legs = close[top_before : top_after + 1]
    vee = hinge(legs, low - top_before)
    curve = quadratic(legs)
    vee_ratio = vee.rms / curve.rms if curve.rms > 0 else 1.0
    position = low / (bars.n - 1)
    scores = (
        ramp(position, V_POSITION[0]),
        ramp(position, V_POSITION[1]),
        ramp(min(drop, rise) / bars.atr, V_LEG_ATR),
        ramp(rise / drop, V_RECOVERY[0]),
        ramp(rise / drop, V_RECOVERY[1]),
        ramp(vee_ratio, V_VS_ROUNDED),
        ramp(vee.r2, V_LEG_R2),
    )
    return finding(
        side.bias,
        scores,
        top_before,
        top_after,
        lambda: (
            f"Closes {side.fell} {bars.pct(drop)} in {low - top_before} bars to bar {low} and "
            f"{side.rose} {bars.pct(rise)} in {top_after - low} bars to bar {top_after}, "
            f"recovering {rise / drop:.0%} of the {side.decline}; two straight legs fit them "
            f"with R² {vee.r2:.2f} and {vee_ratio:.2f}x the residual of a rounded curve."
        ),
    )
