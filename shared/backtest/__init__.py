"""quantdesk: walk-forward backtests, pure: the schedule, the position rule, the metrics.

Everything here but ``chart`` (matplotlib) is plain Python, so the ``Backtest``
workflow can import it to show the equity so far without leaving its sandbox.
"""

from shared.backtest.book import Book, Flow, StepRecord
from shared.backtest.metrics import (
    TRADING_DAYS,
    Performance,
    buy_and_hold,
    equity_curve,
    performance,
)
from shared.backtest.positions import SIGNAL_TARGETS, Position, position_for
from shared.backtest.schedule import SLACK_DAYS, PricePoint, WalkForward, walk_forward

__all__ = [
    "SIGNAL_TARGETS",
    "SLACK_DAYS",
    "TRADING_DAYS",
    "Book",
    "Flow",
    "Performance",
    "Position",
    "PricePoint",
    "StepRecord",
    "WalkForward",
    "buy_and_hold",
    "equity_curve",
    "performance",
    "position_for",
    "walk_forward",
]
