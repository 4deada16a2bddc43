"""The statistics that match an evaluation's claim, each against a published or hand-computed
value, and the trials ledger that the deflated figures count."""

from __future__ import annotations

import math
from datetime import UTC, datetime, timedelta
from statistics import NormalDist

import numpy as np
import pytest
import statsmodels.api as sm
from arch.bootstrap import SPA

from shared.agents.quantagent import Direction
from shared.evaluation.scoring import AgentCall, majority_call
from shared.stats.direction import effective_windows, pesaran_timmermann, windows_needed
from shared.stats.ledger import TrialsLedger
from shared.stats.returns import (
    expected_max_sharpe,
    leaderboard,
    probabilistic_sharpe,
    sharpe_interval,
    spa_pvalue,
)

DAY = timedelta(days=1)
T0 = datetime(2024, 1, 1, tzinfo=UTC)


def test_pesaran_timmermann_matches_the_hand_computed_statistic() -> None:
    calls = [True, True, False, True, False, False, True, True]
    rose = [True, False, False, True, False, True, True, True]
    # P = 6/8; Px = Py = 5/8; P* = (5/8)² + (3/8)² = 0.53125; V(P) = P*(1 − P*)/8;
    # V(P*) = 2·(2·5/8 − 1)²·(5/8)(3/8)/8 + 4·((5/8)(3/8))²/64.
    p_star = 0.53125
    v_p = p_star * (1 - p_star) / 8
    v_star = 2 * 0.25**2 * (5 / 8) * (3 / 8) / 8 + 4 * ((5 / 8) * (3 / 8)) ** 2 / 64
    expected = (0.75 - p_star) / math.sqrt(v_p - v_star)

    result = pesaran_timmermann(calls, rose)

    assert result is not None
    assert result[0] == pytest.approx(expected, rel=1e-12)
    assert result[0] == pytest.approx(1.41107, abs=1e-5)
    assert result[1] == pytest.approx(1 - NormalDist().cdf(expected), rel=1e-9)


def test_pesaran_timmermann_is_undefined_for_always_long() -> None:
    assert pesaran_timmermann([True] * 6, [True, False, True, True, False, True]) is None


def test_windows_on_the_same_dates_count_by_how_alike_they_were_judged() -> None:
    apart = [(T0 + 10 * k * DAY, T0 + (10 * k + 3) * DAY) for k in range(4)]
    assert effective_windows([True, False, True, True], apart) == (4.0, 4)

    # Two dates, three assets each, every asset right on the first and wrong on the second:
    # the intraclass correlation is 1, the design effect 1 + (3 − 1)·1, so 6 windows count 2.
    shared = [apart[0]] * 3 + [apart[1]] * 3
    assert effective_windows([True] * 3 + [False] * 3, shared) == (pytest.approx(2.0), 2)

    # One span holding every window is one window's worth of evidence.
    assert effective_windows([True, False, True], [apart[0]] * 3) == (1.0, 1)


def test_windows_needed_for_55_percent_match_cohens_h() -> None:
    h = 2 * math.asin(math.sqrt(0.55)) - 2 * math.asin(math.sqrt(0.5))
    z = NormalDist().inv_cdf
    assert windows_needed(0.55, 0.5) == math.ceil(((z(0.95) + z(0.8)) / h) ** 2) == 617
    assert windows_needed(0.55, 0.6) is None


def test_probabilistic_sharpe_matches_the_hand_computed_value() -> None:
    # SR 0.1 a period over 100 periods, skew −0.5, kurtosis 4:
    # Φ(0.1·√99 / √(1 + 0.05 + 0.75·0.01)).
    expected = NormalDist().cdf(0.1 * math.sqrt(99) / math.sqrt(1 + 0.5 * 0.1 + 3 / 4 * 0.01))
    assert probabilistic_sharpe(0.1, 100, -0.5, 4.0) == pytest.approx(expected, rel=1e-12)


def test_deflated_sharpe_matches_bailey_and_lopez_de_prado_2014() -> None:
    # Their numerical example: 100 trials whose annualised Sharpe ratios vary by 1/2, a
    # best annualised Sharpe of 2.5 over 1,250 days with skew −3 and kurtosis 10:
    # E[max SR] ≈ 0.1132 a day and DSR ≈ 0.9004.
    threshold = expected_max_sharpe(100, 0.5 / 250)
    assert threshold == pytest.approx(0.1132, abs=5e-5)
    dsr = probabilistic_sharpe(2.5 / math.sqrt(250), 1250, -3.0, 10.0, threshold)
    assert dsr == pytest.approx(0.9004, abs=5e-5)
    assert expected_max_sharpe(1, 0.5) == 0.0


def _arch_example(gen: np.random.Generator, k: int, shift: float) -> tuple[np.ndarray, np.ndarray]:
    """arch's SPA example: models and benchmark fit on noisy factors; ``shift`` is subtracted
    from the first model's losses (0: every model is as good as the benchmark)."""
    t = 1000
    factors = gen.standard_normal((t, 3))
    y = factors @ np.array([1, 0.5, 0.1])

    def losses() -> np.ndarray:
        noisy = factors + gen.standard_normal((t, 3))
        beta = sm.OLS(y[:500], noisy[:500]).fit().params
        return np.asarray((y[500:] - noisy[500:] @ beta) ** 2.0)

    benchmark = losses()
    models = np.column_stack([losses() for _ in range(k)])
    models[:, 0] -= shift
    return benchmark, models


def test_spa_follows_arch_on_its_own_example() -> None:
    benchmark, models = _arch_example(np.random.default_rng(23456), k=50, shift=0.0)
    spa = SPA(benchmark, models, reps=1000, seed=7)
    spa.compute()
    lower, consistent, upper = (spa.pvalues[name] for name in ("lower", "consistent", "upper"))
    assert lower <= consistent <= upper
    assert consistent > 0.1  # equally good models: no rejection, as in arch's example

    # Ours takes returns (losses negated) and gives the consistent p-value.
    ours = spa_pvalue(-benchmark, [-models[:, i] for i in range(models.shape[1])], seed=7)
    assert ours == pytest.approx(consistent)

    benchmark, models = _arch_example(np.random.default_rng(23456), k=50, shift=0.5)
    better = spa_pvalue(-benchmark, [-models[:, i] for i in range(models.shape[1])], seed=7)
    assert better is not None and better < 0.05


def test_the_sharpe_interval_is_seeded_and_brackets_the_sharpe() -> None:
    returns = list(np.random.default_rng(3).normal(0.001, 0.01, 250))
    board = leaderboard(returns, 252, wins=3, decisions=4, cost_per_decision=0.01, seed=5)
    assert board.sharpe is not None and board.sharpe_low is not None
    assert board.sharpe_low < board.sharpe < (board.sharpe_high or 0)
    assert sharpe_interval(returns, 252, seed=5) == (board.sharpe_low, board.sharpe_high)
    assert board.cumulative_return == pytest.approx(math.prod(1 + r for r in returns) - 1)
    assert board.win_rate == 0.75 and board.cost_per_decision == 0.01


def test_the_ledger_counts_a_rerun_of_the_same_configuration_once(database_url: str) -> None:
    ledger = TrialsLedger(database_url)
    config = {"flow": "quantagent", "symbol": "GOOG", "llm": {"provider": "offline"}}
    ledger.record("backtest", config, label="first", sharpe=0.1, dates="d", returns=[0.1, 0.2])
    ledger.record("backtest", dict(reversed(config.items())), label="again", sharpe=0.2)
    assert ledger.count("backtest") == 1
    assert ledger.sharpes("backtest") == [0.2]

    ledger.record("backtest", config | {"every": 10}, label="other", dates="d", returns=[0.3, 0.1])
    ledger.record("evaluation", config, label="an evaluation")
    assert (ledger.count("backtest"), ledger.count("evaluation")) == (2, 1)
    assert ledger.returns_on("backtest", "d") == [[0.3, 0.1]]
    ledger.close()
    assert TrialsLedger(database_url).count("backtest") == 2  # the version is kept, not redone


def test_repeats_count_once_by_their_majority_and_a_tie_goes_to_the_first() -> None:
    long, short = Direction.LONG, Direction.SHORT
    calls = [
        AgentCall(window_id="w", decision=short, risk_reward=1.0),
        AgentCall(window_id="w", error="timed out"),
        AgentCall(window_id="w", decision=long, risk_reward=3.0),
        AgentCall(window_id="w", decision=long),
    ]
    call = majority_call("w", calls)
    assert (call.decision, call.risk_reward, call.repeats) == (long, 2.0, [short, None, long, long])
    assert majority_call("w", calls[:3]).decision is short  # 1–1: the first answer wins
    failed = majority_call("w", [calls[1], calls[1]])
    assert (failed.decision, failed.error, failed.repeats) == (None, "timed out", [None, None])
