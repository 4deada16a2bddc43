"""Equity and performance of a walk-forward, in plain Python (the workflow imports it).

Each step's position is opened at its close and held, without rebalancing, to
the next step's close: within a holding, equity at close ``j`` is the equity
at the opening times ``1 + position × (close_j / close_open − 1)``. Equity
starts at 1 and never goes below 0 (a short that loses everything ends the
account). Metrics use the daily closes of the whole range:

- cumulative return: final equity − 1;
- annualised return: final equity ^ (252 / days) − 1, ``days`` the daily returns;
- Sharpe: mean / sample standard deviation of the daily returns × √252, no risk-free
  rate; None when there are fewer than two returns or they never vary (always flat);
- max drawdown: the largest fall from a running peak, as a fraction of that peak;
- hit rate: of the steps that held a position, the share whose direction matched the
  sign of the stock's return over the holding (a zero return is a miss); None when no
  step held one;
- trade count: steps whose position differs from the one before (the start is flat).

Buy-and-hold is the same computation with every step long: one trade, and its
hit rate is the share of holdings in which the stock rose, the base rate a
strategy's hit rate should beat.
"""

from __future__ import annotations

import math
import statistics
from collections.abc import Sequence

from pydantic import BaseModel, Field

from shared.backtest.positions import Position

TRADING_DAYS = 252


class Performance(BaseModel):
    """How one series of positions did over the range."""

    cumulative_return: float
    annualised_return: float
    sharpe: float | None = Field(description="daily, annualised by √252; None: undefined")
    max_drawdown: float = Field(ge=0, description="largest peak-to-trough fall, 0.2 = 20%")
    hit_rate: float | None = Field(description="hits / steps_with_position; None: no position")
    hits: int = Field(ge=0)
    steps_with_position: int = Field(ge=0)
    trade_count: int = Field(ge=0, description="position changes, the first entry included")
    days: int = Field(ge=0, description="daily returns measured")
    final_equity: float = Field(ge=0, description="equity at the last close, starting from 1")


def _holdings(closes: Sequence[float], steps: Sequence[int]) -> list[tuple[int, int]]:
    """(open, close) price indices of each step; checks the steps fit the closes."""
    if not steps:
        raise ValueError("no steps")
    if any(b <= a for a, b in zip(steps, steps[1:], strict=False)):
        raise ValueError(f"steps must increase strictly, got {list(steps)}")
    if steps[0] < 0 or steps[-1] >= len(closes):
        raise ValueError(f"steps {list(steps)} fall outside {len(closes)} closes")
    ends = [*steps[1:], len(closes) - 1]
    return list(zip(steps, ends, strict=True))


def equity_curve(
    closes: Sequence[float], steps: Sequence[int], positions: Sequence[Position | int]
) -> list[float]:
    """Equity at every close from the first step's to the last, starting at 1."""
    if len(positions) != len(steps):
        raise ValueError(f"{len(positions)} positions for {len(steps)} steps")
    curve = [1.0]
    for (start, stop), position in zip(_holdings(closes, steps), positions, strict=True):
        base_equity, base_price = curve[-1], closes[start]
        curve += [
            max(0.0, base_equity * (1 + int(position) * (closes[j] / base_price - 1)))
            for j in range(start + 1, stop + 1)
        ]
    return curve


def _daily_returns(curve: Sequence[float]) -> list[float]:
    return [b / a - 1 if a > 0 else 0.0 for a, b in zip(curve, curve[1:], strict=False)]


def _max_drawdown(curve: Sequence[float]) -> float:
    peak, worst = curve[0], 0.0
    for value in curve:
        peak = max(peak, value)
        if peak > 0:
            worst = max(worst, 1 - value / peak)
    return worst


def performance(
    closes: Sequence[float], steps: Sequence[int], positions: Sequence[Position | int]
) -> Performance:
    """The metrics of holding ``positions[k]`` from ``closes[steps[k]]`` to the next step's."""
    curve = equity_curve(closes, steps, positions)
    returns = _daily_returns(curve)
    final = curve[-1]
    days = len(returns)
    annualised = (final ** (TRADING_DAYS / days) - 1 if final > 0 else -1.0) if days else 0.0
    sharpe = None
    if days >= 2:
        spread = statistics.stdev(returns)
        if spread > 0:
            sharpe = statistics.fmean(returns) / spread * math.sqrt(TRADING_DAYS)
    hits = held = trades = 0
    previous = int(Position.FLAT)
    for (start, stop), position in zip(_holdings(closes, steps), positions, strict=True):
        direction = int(position)
        trades += direction != previous
        previous = direction
        if direction:
            held += 1
            hits += direction * (closes[stop] / closes[start] - 1) > 0
    return Performance(
        cumulative_return=final - 1,
        annualised_return=annualised,
        sharpe=sharpe,
        max_drawdown=_max_drawdown(curve),
        hit_rate=hits / held if held else None,
        hits=hits,
        steps_with_position=held,
        trade_count=trades,
        days=days,
        final_equity=final,
    )


def buy_and_hold(closes: Sequence[float], steps: Sequence[int]) -> Performance:
    """Long from the first step to the last close, measured over the same holdings."""
    return performance(closes, steps, [Position.LONG] * len(steps))
