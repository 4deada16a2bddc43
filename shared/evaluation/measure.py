"""Fill an evaluation's claims: direction tests per cutoff tag, the leaderboard, the repeat spread.

Runs in the scoring activity (it imports scipy, statsmodels and arch; the workflow never
does). Only scored windows count; a window run several times counts once, by its
majority call.

Trading the calls: each scored window is one trade over its held-out bars, long on LONG
and short on SHORT: return ±(future close / last seen close − 1). Windows decided at the
same time (different assets, same bar) form one equal-weighted period; periods compound
in time order, as if each held-out span followed the last. Annualising counts a period
as its held-out bars (252 daily bars a year, calendar time for shorter bars, which is
right for crypto's 24/7 bars and overstates a year of stock hours); with several bar
lengths in one table the annualised figures stay empty. Buy-and-hold is always long on
the same windows.
"""

from __future__ import annotations

from collections.abc import Sequence
from datetime import datetime, timedelta

from shared.agents.quantagent import Direction
from shared.evaluation.claims import EvaluationClaims, RepeatSpread
from shared.evaluation.scoring import OVERALL, Evaluation, WindowScore
from shared.evaluation.windows import HELD_OUT
from shared.llm.knowledge import CutoffTag
from shared.market.bars import Timeframe
from shared.stats.direction import direction_tests
from shared.stats.results import DirectionTests
from shared.stats.returns import leaderboard

TRADING_DAYS = 252
YEAR = timedelta(days=365.25)
BARS_A_YEAR = {Timeframe.D1: TRADING_DAYS, Timeframe.W1: 52, Timeframe.MO1: 12}
"""Bars a year where calendar time would be wrong (markets close at night and weekends)."""


def periods_per_year(timeframe: Timeframe, held_out: int = HELD_OUT) -> float:
    """Held-out spans of ``held_out`` bars of ``timeframe`` in a year."""
    bars = BARS_A_YEAR.get(timeframe) or YEAR / timeframe.duration
    return bars / held_out


def _tests(scores: Sequence[WindowScore], trials: int) -> DirectionTests:
    return direction_tests(
        [s.decision is Direction.LONG for s in scores],
        [s.truth is Direction.LONG for s in scores],
        [(s.decided_at, s.judged_at) for s in scores if s.decided_at and s.judged_at],
        trials=trials,
    )


def window_return(score: WindowScore, call: Direction | None) -> float:
    """The return of trading ``call`` over the window's held-out bars."""
    assert score.last_seen_close and score.future_close is not None
    move = score.future_close / score.last_seen_close - 1
    return move if call is Direction.LONG else -move


def period_returns(scores: Sequence[WindowScore], long_only: bool = False) -> list[float]:
    """One equal-weighted return per decision time, oldest first (module docstring)."""
    periods: dict[datetime, list[float]] = {}
    for score in scores:
        call = Direction.LONG if long_only else score.decision
        assert score.decided_at is not None
        periods.setdefault(score.decided_at, []).append(window_return(score, call))
    return [sum(rs) / len(rs) for _, rs in sorted(periods.items())]


def repeat_spread(scores: Sequence[WindowScore]) -> RepeatSpread | None:
    """Accuracy of each repeat alone and the share of unanimous windows; None without repeats."""
    repeated = [s for s in scores if len(s.repeats) > 1]
    if not repeated:
        return None
    count = max(len(s.repeats) for s in repeated)
    accuracies: list[float | None] = []
    for k in range(count):
        answered = [s for s in repeated if k < len(s.repeats) and s.repeats[k] is not None]
        right = sum(1 for s in answered if s.repeats[k] == s.truth)
        accuracies.append(right / len(answered) if answered else None)
    calls = [{c for c in s.repeats if c is not None} for s in repeated]
    return RepeatSpread(
        repeats=count,
        accuracies=accuracies,
        unanimous=sum(1 for c in calls if len(c) == 1) / len(calls),
    )


def measure(
    evaluation: Evaluation, *, trials: int = 1, cost_usd: float | None = None, seed: int = 0
) -> Evaluation:
    """``evaluation`` with its claims filled; ``trials`` evaluation configurations run so far
    (the ledger's count, this one included), ``cost_usd`` what the analyses cost."""
    scored = [s for s in evaluation.windows if s.correct is not None]
    tests = {OVERALL: _tests(scored, trials)}
    for tag in CutoffTag:
        tagged = [s for s in scored if s.cutoff is tag]
        if tagged:
            tests[tag.value] = _tests(tagged, trials)
    timeframes = {Timeframe(s.timeframe) for s in scored}
    per_year = periods_per_year(timeframes.pop()) if len(timeframes) == 1 else None
    agent_returns = [window_return(s, s.decision) for s in scored]
    claims = EvaluationClaims(
        tests=tests,
        agent=leaderboard(
            period_returns(scored),
            per_year,
            wins=sum(1 for r in agent_returns if r > 0),
            decisions=len(scored),
            cost_per_decision=cost_usd / len(scored) if cost_usd is not None and scored else None,
            seed=seed,
        ),
        buy_and_hold=leaderboard(
            period_returns(scored, long_only=True),
            per_year,
            wins=sum(1 for s in scored if s.truth is Direction.LONG),
            decisions=len(scored),
            cost_per_decision=0.0,
            seed=seed,
        ),
        spread=repeat_spread(scored),
    )
    summary = evaluation.summary.model_copy(update={"claims": claims})
    return evaluation.model_copy(update={"summary": summary})
