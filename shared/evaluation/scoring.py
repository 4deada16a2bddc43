"""Scoring an agent's calls on benchmark windows: accuracy, Wilson intervals, baselines,
and a paired test of the agent against each baseline (``paired``).

One row per (asset, timeframe) and one overall. A window whose analysis failed,
or whose rows are invalid, is excluded from every number of its row, baselines included, so the agent and
the baselines are always compared on exactly the same windows; the failures are
counted and listed instead. The Wilson interval is used because accuracies near
50% on a few hundred windows are what the benchmark produces, and it stays
inside [0, 1] where the normal approximation does not.
"""

from __future__ import annotations

import math
from collections import Counter
from collections.abc import Iterable, Mapping, Sequence
from datetime import datetime

from pydantic import BaseModel, Field

from shared.agents.quantagent import Direction
from shared.evaluation.baselines import BASELINES
from shared.evaluation.claims import EvaluationClaims
from shared.evaluation.paired import PairedTest
from shared.evaluation.windows import (
    HELD_OUT,
    InvalidWindow,
    SpacingNote,
    Window,
    spacing_notes,
)
from shared.llm.knowledge import CutoffTag, RunCutoff

Z_95 = 1.959963984540054
"""The two-sided 95% quantile of the standard normal distribution."""

OVERALL = "overall"
ALL = "all"
"""The timeframe of a row over every window of a kind (overall, before or after the cutoff)."""


def wilson_interval(correct: int, n: int, z: float = Z_95) -> tuple[float, float] | None:
    """The Wilson score interval of ``correct`` successes in ``n`` trials (None when n is 0)."""
    if n == 0:
        return None
    if not 0 <= correct <= n:
        raise ValueError(f"correct must be between 0 and n={n}, got {correct}")
    p = correct / n
    z2 = z * z
    denominator = 1 + z2 / n
    centre = (p + z2 / (2 * n)) / denominator
    half = z * math.sqrt(p * (1 - p) / n + z2 / (4 * n * n)) / denominator
    return max(0.0, centre - half), min(1.0, centre + half)


class AgentCall(BaseModel):
    """What the agent answered for one window, or why it could not."""

    window_id: str
    decision: Direction | None = None
    risk_reward: float | None = None
    error: str | None = Field(None, description="why the analysis failed; then no decision")
    repeats: list[Direction | None] = Field(
        default_factory=list,
        description="with --repeats: every repeat's call in order (None: that repeat failed); "
        "``decision`` is their majority",
    )


def majority_call(window_id: str, calls: Sequence[AgentCall]) -> AgentCall:
    """One call for a window analysed several times: the majority of the repeats that
    answered (a tie goes to the earliest of the tied calls), their mean risk/reward, and
    every repeat's call; failed, with the first repeat's error, when none answered."""
    repeats = [c.decision if c.error is None else None for c in calls]
    answered = [c for c in calls if c.error is None and c.decision is not None]
    if not answered:
        return AgentCall(
            window_id=window_id, error=calls[0].error or "no decision", repeats=repeats
        )
    votes = Counter(c.decision for c in answered)
    top = max(votes.values())
    decision = next(c.decision for c in answered if votes[c.decision] == top)
    ratios = [c.risk_reward for c in answered if c.risk_reward is not None]
    return AgentCall(
        window_id=window_id,
        decision=decision,
        risk_reward=sum(ratios) / len(ratios) if ratios else None,
        repeats=repeats,
    )


class WindowScore(BaseModel):
    """One window's outcome, the agent's call and every baseline's call.

    An invalid window (bad rows) has no closes, truth or baseline calls, only its error.
    """

    window_id: str
    asset: str
    timeframe: str
    last_seen_close: float | None = Field(description="None for an invalid window")
    future_close: float | None
    truth: Direction | None
    decision: Direction | None
    correct: bool | None = Field(description="None when the analysis failed")
    risk_reward: float | None
    baselines: dict[str, Direction]
    spacing: list[SpacingNote] = Field(
        default_factory=list,
        description="steps between bars that are not one bar (DST shifts, missing bars); "
        "the bars were analysed as they are",
    )
    error: str | None
    decided_at: datetime | None = Field(
        None, description="the last bar the agent saw: when the call was made"
    )
    judged_at: datetime | None = Field(None, description="the bar the call is judged at")
    cutoff: CutoffTag | None = Field(
        None, description="the call against the models' training cutoff; None: not known"
    )
    repeats: list[Direction | None] = Field(
        default_factory=list, description="every repeat's call when the window ran repeatedly"
    )


class ScoreRow(BaseModel):
    """Accuracy of one asset (or of all) against the baselines, on the same windows."""

    asset: str
    timeframe: str = Field(description="the bar length, or 'all' on the overall row")
    n: int = Field(description="windows scored: the analysis succeeded")
    failed: int = Field(description="windows whose analysis failed or rows are invalid, not in n")
    correct: int
    accuracy: float | None
    ci_low: float | None = Field(description="95% Wilson interval, lower end")
    ci_high: float | None
    baselines: dict[str, float | None] = Field(description="each baseline's accuracy")
    mean_risk_reward: float | None
    paired: dict[str, PairedTest] = Field(
        default_factory=dict,
        description="the agent against each baseline on these windows (McNemar's exact "
        "test); empty without scored windows, and in tables scored before the test existed",
    )

    @property
    def label(self) -> str:
        """How the row is named in tables and plots."""
        return self.asset if self.timeframe == ALL else f"{self.asset} {self.timeframe}"


class EvaluationSummary(BaseModel):
    """The table: one row per asset and timeframe, then the overall row."""

    label: str = Field(description="what was evaluated, e.g. 'QuantAgent, offline'")
    held_out: int = HELD_OUT
    seed: int = Field(description="the random baseline's seed")
    windows: int = Field(description="windows evaluated, failed ones included")
    failed: int
    irregular: int = Field(0, description="windows with spacing notes (see each window)")
    rows: list[ScoreRow]
    overall: ScoreRow
    cutoff: RunCutoff | None = Field(
        None, description="the models' training cutoffs the windows were tagged against"
    )
    cutoff_rows: list[ScoreRow] = Field(
        default_factory=list,
        description="the overall row of the windows before, after and of unknown cutoff",
    )
    claims: EvaluationClaims | None = Field(
        None, description="the tests, leaderboard and repeat spread (shared.evaluation.measure)"
    )

    @property
    def headline(self) -> ScoreRow:
        """The row a reader should quote: the after-cutoff windows when the cutoff is known
        and some fall after it, else every window."""
        after = [row for row in self.cutoff_rows if row.asset == CutoffTag.AFTER]
        return after[0] if after and after[0].n else self.overall

    @property
    def all_before_cutoff(self) -> bool:
        """Every scored window fell before the cutoff: the model may remember them all."""
        return bool(self.cutoff_rows) and all(
            row.asset == CutoffTag.BEFORE for row in self.cutoff_rows if row.n
        )


class Evaluation(BaseModel):
    """The table and every window behind it."""

    summary: EvaluationSummary
    windows: list[WindowScore]


def score_window(
    window: Window | InvalidWindow,
    call: AgentCall | None,
    seed: int,
    cutoff: RunCutoff | None = None,
) -> WindowScore:
    """The truth, the agent's call and each baseline's call on ``window``'s visible bars,
    tagged against ``cutoff`` by the time of the last visible bar."""
    if isinstance(window, InvalidWindow):
        return WindowScore(
            window_id=window.window_id,
            asset=window.asset,
            timeframe=window.timeframe.value,
            last_seen_close=None,
            future_close=None,
            truth=None,
            decision=None,
            correct=None,
            risk_reward=None,
            baselines={},
            error=window.error,
        )
    call = call or AgentCall(window_id=window.window_id, error="no result was recorded")
    truth = window.truth
    failed = call.error is not None or call.decision is None
    visible = window.visible
    decided_at = visible[-1].time
    return WindowScore(
        window_id=window.window_id,
        asset=window.asset,
        timeframe=window.timeframe.value,
        last_seen_close=window.last_seen_close,
        future_close=window.future_close,
        truth=truth,
        decision=None if failed else call.decision,
        correct=None if failed else call.decision == truth,
        risk_reward=None if failed else call.risk_reward,
        baselines={name: rule(visible, window.window_id, seed) for name, rule in BASELINES.items()},
        spacing=spacing_notes(window.bars, window.timeframe),
        error=(call.error or "no decision") if failed else None,
        decided_at=decided_at,
        judged_at=window.bars[-1].time,
        cutoff=cutoff.tag(decided_at) if cutoff else None,
        repeats=call.repeats,
    )


def _share(hits: Iterable[bool], n: int) -> float | None:
    return sum(hits) / n if n else None


def score_row(asset: str, timeframe: str, scores: Sequence[WindowScore]) -> ScoreRow:
    """The row of ``scores``: failed windows counted, then left out of every number."""
    scored = [s for s in scores if s.correct is not None]
    n = len(scored)
    agent_hits = [bool(s.correct) for s in scored]
    correct = sum(agent_hits)
    interval = wilson_interval(correct, n)
    ratios = [s.risk_reward for s in scored if s.risk_reward is not None]
    baseline_hits = {name: [s.baselines[name] == s.truth for s in scored] for name in BASELINES}
    # A row without scored windows has no test, as it has no accuracy: nothing was compared.
    paired = {
        name: PairedTest.of(zip(agent_hits, hits, strict=True))
        for name, hits in baseline_hits.items()
        if n
    }
    return ScoreRow(
        asset=asset,
        timeframe=timeframe,
        n=n,
        failed=len(scores) - n,
        correct=correct,
        accuracy=_share(agent_hits, n),
        ci_low=interval[0] if interval else None,
        ci_high=interval[1] if interval else None,
        baselines={name: _share(hits, n) for name, hits in baseline_hits.items()},
        mean_risk_reward=sum(ratios) / len(ratios) if ratios else None,
        paired=paired,
    )


def score_windows(
    windows: Sequence[Window | InvalidWindow],
    calls: Mapping[str, AgentCall],
    *,
    seed: int,
    label: str,
    cutoff: RunCutoff | None = None,
) -> Evaluation:
    """Score every window (an invalid one, or one without a call, counts as failed) and
    build the table; with ``cutoff``, each window is tagged and the overall row is split by tag."""
    scores = [score_window(w, calls.get(w.window_id), seed, cutoff) for w in windows]
    groups: dict[tuple[str, str], list[WindowScore]] = {}
    for score in scores:
        groups.setdefault((score.asset, score.timeframe), []).append(score)
    rows = [score_row(asset, timeframe, groups[asset, timeframe]) for asset, timeframe in groups]
    overall = score_row(OVERALL, ALL, scores)
    summary = EvaluationSummary(
        label=label,
        seed=seed,
        windows=len(scores),
        failed=overall.failed,
        irregular=sum(1 for score in scores if score.spacing),
        rows=sorted(rows, key=lambda row: (row.asset, row.timeframe)),
        overall=overall,
        cutoff=cutoff,
        cutoff_rows=[
            score_row(tag, ALL, tagged)
            for tag in CutoffTag
            if (tagged := [s for s in scores if s.cutoff is tag])
        ]
        if cutoff
        else [],
    )
    return Evaluation(summary=summary, windows=scores)
