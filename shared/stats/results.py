"""The records of the statistics, plain pydantic (no numerical library): the workflows and the
reports import them; ``direction`` and ``returns`` fill them.

A figure that cannot exist (too few windows, a series that never varies) is None and shows
as a dash or ``n/a``, never as a zero.
"""

from __future__ import annotations

from pydantic import BaseModel, Field, computed_field

TARGET_ACCURACY = 0.55
"""The edge every report says whether it could have detected: 55% right."""
POWER = 0.8
ALPHA = 0.05


class DirectionTests(BaseModel):
    """Whether a set of direction calls beats the claims a reader would compare it with."""

    n: int = Field(ge=0, description="windows scored (repeats of one window count once)")
    n_effective: float | None = Field(
        None,
        description="windows worth of independent evidence: n over the design effect of "
        "windows whose held-out bars overlap in time (the same dates, any asset)",
    )
    clusters: int = Field(0, description="groups of windows whose held-out spans overlap")
    up_rate: float | None = Field(
        None, description="share of windows that rose: the always-long baseline's accuracy"
    )
    long_share: float | None = Field(None, description="share of the calls that were LONG")
    p_vs_half: float | None = Field(
        None, description="one-sided binomial p of the accuracy against 50%, on n_effective"
    )
    p_vs_always_long: float | None = Field(
        None, description="one-sided binomial p against the always-long rate, on n_effective"
    )
    pt_statistic: float | None = Field(
        None,
        description="Pesaran–Timmermann statistic: accuracy against the accuracy calls made "
        "independently of the outcome would have, with the same long share; None when every "
        "call or every outcome was the same (the test is undefined)",
    )
    pt_p: float | None = Field(None, description="its one-sided p-value")
    trials: int = Field(1, ge=1, description="evaluation configurations in the trials ledger")
    pt_p_deflated: float | None = Field(
        None, description="the PT p-value over every trial (Šidák: 1 − (1 − p)^trials)"
    )
    needed_vs_half: int | None = Field(
        None, description="windows needed to detect 55% against 50% at 80% power (α 5%)"
    )
    needed_vs_always_long: int | None = Field(
        None,
        description="windows needed to detect 55% against the always-long rate; None when "
        "that rate is 55% or more (55% would not beat it)",
    )

    @computed_field  # type: ignore[prop-decorator]
    @property
    def enough(self) -> bool | None:
        """Whether the effective sample reached the windows needed against 50%."""
        if self.n_effective is None or self.needed_vs_half is None:
            return None
        return self.n_effective >= self.needed_vs_half


class Leaderboard(BaseModel):
    """The columns of the public leaderboards (StockBench, FINSABER) for one return series."""

    periods: int = Field(ge=0, description="returns measured")
    cumulative_return: float | None = None
    annualised_return: float | None = None
    volatility: float | None = Field(None, description="annualised standard deviation")
    sharpe: float | None = Field(None, description="annualised, no risk-free rate")
    sharpe_low: float | None = Field(
        None, description="95% stationary-bootstrap interval of the Sharpe, lower end"
    )
    sharpe_high: float | None = None
    sortino: float | None = Field(None, description="annualised, downside deviation below 0")
    max_drawdown: float | None = None
    win_rate: float | None = Field(None, description="decisions that made money / decisions")
    cost_per_decision: float | None = Field(None, description="LLM USD per decision")


class SharpeTests(BaseModel):
    """Whether a backtest's Sharpe survives its sample and every configuration tried."""

    psr: float | None = Field(
        None, description="probabilistic Sharpe ratio: P(true Sharpe > 0) given skew and kurtosis"
    )
    trials: int = Field(1, ge=1, description="backtest configurations in the trials ledger")
    expected_max_sharpe: float | None = Field(
        None,
        description="annualised Sharpe the best of `trials` unskilled configurations would "
        "show by luck (the deflated ratio's threshold)",
    )
    dsr: float | None = Field(
        None, description="deflated Sharpe ratio: P(true Sharpe > expected_max_sharpe)"
    )
    spa_configurations: int = Field(
        0, description="configurations on the same symbol and dates in Hansen's SPA test"
    )
    spa_p: float | None = Field(
        None,
        description="Hansen's SPA consistent p-value: no configuration beats buy-and-hold",
    )
