"""What a backtest can claim beyond its metrics table: the records (plain pydantic, so the
workflow may import them); ``shared.backtest.measure`` fills them.

- each step's tag against the models' training cutoff, and the metrics of the steps
  after it (the headline) and before it, beside buy-and-hold over the same closes;
- the leaderboard columns of the daily returns, the strategy's and buy-and-hold's;
- the Sharpe's tests: probabilistic, deflated by every configuration in the trials
  ledger, and Hansen's SPA across the configurations run on the same dates.
"""

from __future__ import annotations

from pydantic import BaseModel, Field

from shared.backtest.metrics import Performance
from shared.llm.knowledge import CutoffTag, RunCutoff
from shared.stats.results import Leaderboard, SharpeTests


class PeriodScores(BaseModel):
    """The strategy and buy-and-hold over the steps of one side of the cutoff."""

    tag: CutoffTag
    steps: int = Field(ge=1)
    strategy: Performance
    buy_and_hold: Performance


class BacktestClaims(BaseModel):
    """The statistics of a backtest beyond its metrics."""

    cutoff: RunCutoff
    tags: list[CutoffTag] = Field(description="each step's tag, in step order")
    periods: list[PeriodScores] = Field(description="before the cutoff, then after it")
    strategy: Leaderboard
    buy_and_hold: Leaderboard
    tests: SharpeTests

    @property
    def all_before(self) -> bool:
        """Every step was decided on or before the cutoff."""
        return bool(self.tags) and all(tag is CutoffTag.BEFORE for tag in self.tags)

    def period(self, tag: CutoffTag) -> PeriodScores | None:
        """The scores of the steps tagged ``tag``, if any."""
        return next((p for p in self.periods if p.tag is tag), None)
