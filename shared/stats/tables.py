"""The leaderboard columns as people read them, one formatting for every report and the CLI.

Returns, volatility, drawdown and win rate in percent, ratios with two decimals, the Sharpe
with its 95% bootstrap interval in brackets, cost in USD; a figure that cannot exist is
``n/a``.
"""

from __future__ import annotations

from shared.stats.results import Leaderboard

LEADERBOARD_HEADINGS = (
    "cumulative",
    "annualised",
    "volatility",
    "Sharpe [95% CI]",
    "Sortino",
    "max drawdown",
    "win rate",
    "LLM $/decision",
)
LEADERBOARD_EXPLAINED = (
    "Leaderboard columns as StockBench and FINSABER report them: returns compounded; "
    "volatility, Sharpe and Sortino annualised without a risk-free rate; the Sharpe's 95% "
    "interval from a stationary block bootstrap (arch); win rate: decisions that made money."
)


def _pct(value: float | None, signed: bool = False) -> str:
    if value is None:
        return "n/a"
    return f"{value:+.2%}" if signed else f"{value:.2%}"


def _ratio(value: float | None) -> str:
    return "n/a" if value is None else f"{value:.2f}"


def sharpe_cell(board: Leaderboard) -> str:
    """``1.23 [0.40, 2.05]``, or the Sharpe alone without an interval."""
    if board.sharpe is None:
        return "n/a"
    if board.sharpe_low is None or board.sharpe_high is None:
        return f"{board.sharpe:.2f}"
    return f"{board.sharpe:.2f} [{board.sharpe_low:.2f}, {board.sharpe_high:.2f}]"


def leaderboard_cells(board: Leaderboard) -> list[str]:
    """One cell per ``LEADERBOARD_HEADINGS`` column."""
    cost = "n/a" if board.cost_per_decision is None else f"${board.cost_per_decision:.4f}"
    return [
        _pct(board.cumulative_return, signed=True),
        _pct(board.annualised_return, signed=True),
        _pct(board.volatility),
        sharpe_cell(board),
        _ratio(board.sortino),
        _pct(board.max_drawdown),
        _pct(board.win_rate),
        cost,
    ]


def leaderboard_markdown(rows: list[tuple[str, Leaderboard]]) -> list[str]:
    """A Markdown table of ``(name, leaderboard)`` rows, then the columns explained."""
    lines = [
        "| | " + " | ".join(LEADERBOARD_HEADINGS) + " |",
        "|---|" + "---:|" * len(LEADERBOARD_HEADINGS),
    ]
    lines += [f"| {name} | " + " | ".join(leaderboard_cells(board)) + " |" for name, board in rows]
    return [*lines, "", LEADERBOARD_EXPLAINED]
