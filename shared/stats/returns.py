"""Return series: the leaderboard columns and the tests of a Sharpe ratio.

- Sharpe: mean / sample standard deviation, annualised by √(periods a year), no risk-free
  rate; its 95% interval from arch's stationary bootstrap (blocks keep the series'
  autocorrelation; the mean block length from arch's ``optimal_block_length``), seeded.
- Sortino: mean / √mean(min(r, 0)²), annualised the same way.
- Probabilistic Sharpe ratio (Bailey & López de Prado 2012): the chance the true
  per-period Sharpe exceeds SR*, Φ((SR − SR*)·√(n − 1) / √(1 − γ3·SR + (γ4 − 1)/4·SR²)),
  γ3 the skewness and γ4 the (non-excess) kurtosis of the returns.
- Deflated Sharpe ratio (Bailey & López de Prado 2014): the PSR against SR* = the Sharpe
  the best of N unskilled trials shows by luck, √V·((1 − γ)·Φ⁻¹(1 − 1/N) + γ·Φ⁻¹(1 − 1/(N·e))),
  V the variance of the trials' Sharpe ratios and γ Euler's constant. N comes from the
  trials ledger; with one trial SR* is 0 and the DSR is the PSR.
- Hansen's SPA (2005) through ``arch.bootstrap.SPA``: losses are negative returns, the
  benchmark buy-and-hold, the models every configuration tried on the same dates.
"""

from __future__ import annotations

import math
from collections.abc import Sequence

import numpy as np
from arch.bootstrap import SPA, StationaryBootstrap, optimal_block_length
from scipy.stats import kurtosis, norm, skew

from shared.stats.results import Leaderboard

EULER_GAMMA = 0.5772156649015329
BOOTSTRAP_REPS = 1000
MIN_BOOTSTRAP = 10
"""Fewer returns than this give no interval: a bootstrap of a handful says nothing."""


def sharpe(returns: Sequence[float]) -> float | None:
    """Per-period Sharpe ratio; None with fewer than two returns or none that vary."""
    if len(returns) < 2:
        return None
    spread = float(np.std(returns, ddof=1))
    return float(np.mean(returns)) / spread if spread > 0 else None


def _sharpes(sample: np.ndarray) -> np.ndarray:
    """Per-period Sharpe of a bootstrap sample (0 for a sample that never varies)."""
    spread = sample.std(ddof=1)
    return np.array([sample.mean() / spread if spread > 0 else 0.0])


def block_length(series: np.ndarray) -> int:
    """The stationary bootstrap's mean block length by arch's ``optimal_block_length``; √n
    where it is undefined (a series mostly flat, whose autocorrelations divide by zero)."""
    with np.errstate(divide="ignore", invalid="ignore"):
        optimal = float(optimal_block_length(series)["stationary"].iloc[0])
    if not math.isfinite(optimal):
        optimal = math.sqrt(len(series))
    return max(1, round(optimal))


def sharpe_interval(
    returns: Sequence[float], periods_per_year: float, *, seed: int = 0
) -> tuple[float, float] | None:
    """95% percentile interval of the annualised Sharpe from a stationary block bootstrap."""
    if len(returns) < MIN_BOOTSTRAP or sharpe(returns) is None:
        return None
    series = np.asarray(returns, dtype=float)
    bootstrap = StationaryBootstrap(block_length(series), series, seed=seed)
    low, high = bootstrap.conf_int(_sharpes, reps=BOOTSTRAP_REPS, method="percentile")[:, 0]
    scale = math.sqrt(periods_per_year)
    return float(low) * scale, float(high) * scale


def sortino(returns: Sequence[float]) -> float | None:
    """Per-period Sortino ratio; None without a loss to measure the downside by."""
    if len(returns) < 2:
        return None
    downside = math.sqrt(sum(min(r, 0.0) ** 2 for r in returns) / len(returns))
    return float(np.mean(returns)) / downside if downside > 0 else None


def max_drawdown(returns: Sequence[float]) -> float:
    """The largest fall of the compounded equity from a running peak, as a fraction of it."""
    equity = peak = 1.0
    worst = 0.0
    for r in returns:
        equity *= 1 + r
        peak = max(peak, equity)
        worst = max(worst, 1 - equity / peak if peak > 0 else 0.0)
    return worst


def probabilistic_sharpe(
    sr: float, n: int, skewness: float, kurt: float, threshold: float = 0.0
) -> float:
    """PSR of per-period Sharpe ``sr`` over ``n`` returns against per-period ``threshold``."""
    variance = 1 - skewness * sr + (kurt - 1) / 4 * sr * sr
    if n < 2 or variance <= 0:
        raise ValueError(f"PSR needs two returns and a positive variance, got n={n}")
    return float(norm.cdf((sr - threshold) * math.sqrt(n - 1) / math.sqrt(variance)))


def expected_max_sharpe(trials: int, variance: float) -> float:
    """Per-period Sharpe the best of ``trials`` unskilled trials shows, given the variance of
    their per-period Sharpe ratios (0 for one trial)."""
    if trials < 2 or variance <= 0:
        return 0.0
    return math.sqrt(variance) * (
        (1 - EULER_GAMMA) * float(norm.ppf(1 - 1 / trials))
        + EULER_GAMMA * float(norm.ppf(1 - 1 / (trials * math.e)))
    )


def moments(returns: Sequence[float]) -> tuple[float, float]:
    """(skewness, non-excess kurtosis) of the returns; (0, 3) when they never vary."""
    series = np.asarray(returns, dtype=float)
    if len(series) < 3 or series.std() == 0:
        return 0.0, 3.0
    return float(skew(series)), float(kurtosis(series, fisher=False))


def spa_pvalue(
    benchmark: Sequence[float], models: Sequence[Sequence[float]], *, seed: int = 0
) -> float | None:
    """Hansen's consistent SPA p-value that no model's returns beat the benchmark's (returns
    in, losses are their negatives); None without a model or with under 10 dates."""
    if not models or len(benchmark) < MIN_BOOTSTRAP:
        return None
    losses = -np.column_stack([np.asarray(m, dtype=float) for m in models])
    test = SPA(-np.asarray(benchmark, dtype=float), losses, reps=BOOTSTRAP_REPS, seed=seed)
    test.compute()
    return float(test.pvalues["consistent"])


def leaderboard(
    returns: Sequence[float],
    periods_per_year: float | None,
    *,
    wins: int,
    decisions: int,
    cost_per_decision: float | None = None,
    seed: int = 0,
) -> Leaderboard:
    """The leaderboard columns of ``returns`` (one per period, compounding); ``wins`` of
    ``decisions`` made money. Without ``periods_per_year`` (a mix of bar lengths) the
    annualised figures stay None."""
    n = len(returns)
    if n == 0:
        return Leaderboard(periods=0)
    cumulative = math.prod(1 + r for r in returns) - 1
    per_sharpe, per_sortino = sharpe(returns), sortino(returns)
    annual = annualised = volatility = interval = None
    if periods_per_year:
        annual = math.sqrt(periods_per_year)
        final = 1 + cumulative
        annualised = final ** (periods_per_year / n) - 1 if final > 0 else -1.0
        volatility = float(np.std(returns, ddof=1)) * annual if n > 1 else None
        interval = sharpe_interval(returns, periods_per_year, seed=seed)
    return Leaderboard(
        periods=n,
        cumulative_return=cumulative,
        annualised_return=annualised,
        volatility=volatility,
        sharpe=per_sharpe * annual if per_sharpe is not None and annual else None,
        sharpe_low=interval[0] if interval else None,
        sharpe_high=interval[1] if interval else None,
        sortino=per_sortino * annual if per_sortino is not None and annual else None,
        max_drawdown=max_drawdown(returns),
        win_rate=wins / decisions if decisions else None,
        cost_per_decision=cost_per_decision,
    )
