"""Fill a finished walk-forward's claims: cutoff tags and periods, leaderboard, Sharpe tests.

Runs in the scoring activity (scipy and arch load there, never in the workflow). A step
is tagged by its analysis time against the run's training cutoff; steps are in time
order, so the steps after the cutoff are the walk's last ones, and their metrics are the
walk from the first of them (buy-and-hold from the same close). The deflated Sharpe
counts every backtest configuration in the trials ledger and the variance of their
Sharpe ratios; Hansen's SPA compares every configuration run on the same symbol and
dates against buy-and-hold.
"""

from __future__ import annotations

import statistics
from collections.abc import Sequence

from shared.backtest.book import Book
from shared.backtest.claims import BacktestClaims, PeriodScores
from shared.backtest.metrics import TRADING_DAYS, buy_and_hold, performance
from shared.llm.knowledge import CutoffTag, RunCutoff
from shared.stats.results import SharpeTests
from shared.stats.returns import (
    expected_max_sharpe,
    leaderboard,
    moments,
    probabilistic_sharpe,
    sharpe,
    spa_pvalue,
)


def daily_returns(equity: Sequence[float]) -> list[float]:
    """Close-to-close returns of an equity curve (0 once it is wiped out)."""
    return [b / a - 1 if a > 0 else 0.0 for a, b in zip(equity, equity[1:], strict=False)]


def periods(book: Book, tags: Sequence[CutoffTag]) -> list[PeriodScores]:
    """The walk cut where the tags change: each run of equal tags scored on its own."""
    steps, closes = book.schedule.steps, book.closes
    cuts = [k for k in range(1, len(tags)) if tags[k] is not tags[k - 1]]
    scored = []
    for first, stop in zip([0, *cuts], [*cuts, len(tags)], strict=True):
        start = steps[first]
        end = steps[stop] if stop < len(steps) else len(closes) - 1
        if end <= start:
            continue
        window = closes[start : end + 1]
        held = [s - start for s in steps[first:stop]]
        scored.append(
            PeriodScores(
                tag=tags[first],
                steps=stop - first,
                strategy=performance(window, held, book.positions[first:stop]),
                buy_and_hold=buy_and_hold(window, held),
            )
        )
    return scored


def sharpe_tests(
    returns: Sequence[float],
    *,
    trials: int,
    trial_sharpes: Sequence[float],
    rivals: Sequence[Sequence[float]],
    benchmark: Sequence[float],
    seed: int = 0,
) -> SharpeTests:
    """PSR, DSR over ``trials`` configurations whose per-period Sharpe ratios are
    ``trial_sharpes``, and SPA of ``rivals`` (every configuration on these dates) against
    ``benchmark``."""
    per_period = sharpe(returns)
    variance = statistics.variance(trial_sharpes) if len(trial_sharpes) > 1 else 0.0
    threshold = expected_max_sharpe(trials, variance)
    psr = dsr = None
    if per_period is not None:
        skewness, kurt = moments(returns)
        try:
            psr = probabilistic_sharpe(per_period, len(returns), skewness, kurt)
            dsr = probabilistic_sharpe(per_period, len(returns), skewness, kurt, threshold)
        except ValueError:
            psr = dsr = None
    same_length = [r for r in rivals if len(r) == len(benchmark)]
    return SharpeTests(
        psr=psr,
        trials=trials,
        expected_max_sharpe=threshold * TRADING_DAYS**0.5,
        dsr=dsr,
        spa_configurations=len(same_length),
        spa_p=spa_pvalue(benchmark, same_length, seed=seed),
    )


def measure_backtest(
    book: Book,
    cutoff: RunCutoff,
    *,
    trials: int,
    trial_sharpes: Sequence[float],
    rivals: Sequence[Sequence[float]],
    cost_usd: float | None,
    seed: int = 0,
) -> BacktestClaims:
    """The claims of the finished walk in ``book`` (module docstring)."""
    tags = [cutoff.tag(time) for time in book.schedule.step_times]
    returns = daily_returns(book.equity())
    benchmark = daily_returns(book.buy_and_hold_equity())
    strategy, held = book.scores()
    steps = len(book.records)
    return BacktestClaims(
        cutoff=cutoff,
        tags=tags,
        periods=periods(book, tags),
        strategy=leaderboard(
            returns,
            TRADING_DAYS,
            wins=strategy.hits,
            decisions=strategy.steps_with_position,
            cost_per_decision=cost_usd / steps if cost_usd is not None and steps else None,
            seed=seed,
        ),
        buy_and_hold=leaderboard(
            benchmark,
            TRADING_DAYS,
            wins=held.hits,
            decisions=held.steps_with_position,
            cost_per_decision=0.0,
            seed=seed,
        ),
        tests=sharpe_tests(
            returns,
            trials=trials,
            trial_sharpes=trial_sharpes,
            rivals=rivals,
            benchmark=benchmark,
            seed=seed,
        ),
    )
