"""Risk of the book as it stands, from daily closes up to the as-of date: nothing invented.

The book's value series is today's holdings (share counts) and cash carried
back over the window: V_t = cash + Σ shares_i × close_i,t on the sessions every
priced holding shares. From it, with r_t = V_t / V_{t-1} - 1 (simple returns,
because a book's return is the value-weighted sum of its holdings' and log
returns do not add up across holdings) and e_t = r_t - rf_t:

| metric | definition |
|---|---|
| annualised volatility | stdev(r, n-1) × √252 |
| Sharpe | mean(e) / stdev(e, n-1) × √252 |
| Sortino | mean(e) / DD × √252, DD = √(Σ min(e_t, 0)² / n) over *all* n days (target downside deviation) |
| 1-day historical VaR 95% | −r₍k₎, the k-th worst return, k = ⌈0.05·n⌉: a loss at least this large came on 5% of days |
| max drawdown | max_t (1 − V_t / max_{s≤t} V_s) |
| beta | cov(r, r_bench) / var(r_bench), both n-1, on the sessions both have |
| correlation | Pearson of two holdings' daily returns on the sessions both have |

rf_t is the T-bill ETF's daily return when the data has it (else 0, and the
report says so). A metric that cannot be measured (fewer than
``MIN_RETURNS`` returns, a zero denominator, an all-cash book) is ``None``
with the reason, never a number chosen to look plausible.
"""

from __future__ import annotations

import math
import statistics
from collections.abc import Mapping, Sequence
from datetime import date
from decimal import Decimal
from itertools import combinations

from pydantic import BaseModel, Field, model_validator

from shared.portfolio.limits import CASH, CASH_EQUIVALENT, sector_bucket
from shared.portfolio.market import Closes, QuoteMissing
from shared.portfolio.valuation import Valuation

TRADING_DAYS = 252
MIN_RETURNS = 20
"""About a month of sessions: fewer daily returns say nothing stable about risk."""
VAR_LEVEL = 0.95


class Measured(BaseModel):
    """A metric's value, or why there is none."""

    value: float | None = None
    reason: str | None = Field(None, description="set exactly when value is None")

    @model_validator(mode="after")
    def _value_or_reason(self) -> Measured:
        if (self.value is None) == (self.reason is None):
            raise ValueError("give either a value or the reason there is none")
        return self

    @classmethod
    def of(cls, value: float) -> Measured:
        """A measured value."""
        return cls(value=value)

    @classmethod
    def missing(cls, reason: str) -> Measured:
        """No value, and why."""
        return cls(reason=reason)


class Correlation(BaseModel):
    """The correlation of two holdings' daily returns."""

    a: str
    b: str
    value: Measured
    observations: int


class RiskReport(BaseModel):
    """The book's risk as of a date."""

    observations: int = Field(description="daily returns the series metrics rest on")
    start: date | None = None
    end: date | None = None
    daily_returns: list[float] = Field(description="the book's daily returns, oldest first")
    mean_daily_return: Measured
    annualised_volatility: Measured
    sharpe: Measured
    sortino: Measured
    var_95_1d: Measured = Field(description="1-day loss as a fraction of the book's value")
    var_95_1d_amount: Measured = Field(description="the same loss in money at today's value")
    max_drawdown: Measured
    beta: Measured
    benchmark: str
    risk_free: str = Field(description="where the risk-free rate came from")
    correlations: list[Correlation]
    average_correlation: Measured
    sector_weights: dict[str, float] = Field(
        description="share of the total value per GICS sector, plus cash and cash equivalents"
    )
    largest_sector: str | None = None
    notes: list[str] = Field(default_factory=list)


def simple_returns(values: Sequence[float]) -> list[float]:
    """r_t = v_t / v_{t-1} - 1."""
    return [b / a - 1 for a, b in zip(values, values[1:], strict=False)]


def annualised_volatility(returns: Sequence[float]) -> float:
    """Sample standard deviation of daily returns, scaled by √252."""
    return statistics.stdev(returns) * math.sqrt(TRADING_DAYS)


def sharpe(excess: Sequence[float]) -> float | None:
    """Annualised mean over standard deviation of excess returns; None if they never vary."""
    spread = statistics.stdev(excess)
    return statistics.fmean(excess) / spread * math.sqrt(TRADING_DAYS) if spread > 0 else None


def downside_deviation(excess: Sequence[float]) -> float:
    """√(Σ min(e, 0)² / n) over every day, the days above the target counting as zero."""
    return math.sqrt(sum(min(e, 0.0) ** 2 for e in excess) / len(excess))


def sortino(excess: Sequence[float]) -> float | None:
    """Annualised mean excess return over the downside deviation; None if no day fell short."""
    downside = downside_deviation(excess)
    return statistics.fmean(excess) / downside * math.sqrt(TRADING_DAYS) if downside > 0 else None


def historical_var(returns: Sequence[float], level: float = VAR_LEVEL) -> float:
    """The k-th worst return's loss, k = ⌈(1 - level)·n⌉."""
    k = max(1, math.ceil(round((1 - level) * len(returns), 9)))
    return -sorted(returns)[k - 1]


def max_drawdown(values: Sequence[float]) -> float:
    """The deepest fall from a running peak, as a fraction of that peak."""
    peak, deepest = values[0], 0.0
    for value in values:
        peak = max(peak, value)
        deepest = max(deepest, 1 - value / peak)
    return deepest


def beta(returns: Sequence[float], benchmark: Sequence[float]) -> float | None:
    """cov(r, b) / var(b); None when the benchmark never moved."""
    spread = statistics.variance(benchmark)
    return statistics.covariance(returns, benchmark) / spread if spread > 0 else None


def _aligned(series: Mapping[date, float], dates: Sequence[date]) -> list[float] | None:
    """The values on ``dates``, or None if any is missing."""
    if not all(d in series for d in dates):
        return None
    return [series[d] for d in dates]


def _too_short(count: int) -> str:
    return f"only {count} daily returns in the window (at least {MIN_RETURNS} are needed)"


def _by_date(closes: Closes) -> dict[date, float]:
    return dict(zip(closes.dates, closes.closes, strict=True))


def measure_risk(
    valuation: Valuation,
    history: Mapping[str, Closes | QuoteMissing],
    benchmark: Closes | QuoteMissing,
    risk_free: Closes | QuoteMissing | None,
    *,
    benchmark_symbol: str,
) -> RiskReport:
    """The report for the book in ``valuation``, from each holding's closes in ``history``."""
    notes: list[str] = []
    held = {p.symbol: p.shares for p in valuation.positions}
    priced: dict[str, dict[date, float]] = {}
    for symbol in held:
        found = history.get(symbol)
        if isinstance(found, Closes) and found.dates:
            priced[symbol] = _by_date(found)
        else:
            why = found.reason if isinstance(found, QuoteMissing) else "no history"
            notes.append(f"{symbol} is left out of the series metrics: {why}")
    sectors = _sector_weights(valuation)
    largest = next((s for s in sectors if s not in (CASH, CASH_EQUIVALENT)), None)
    correlations = _correlations(priced)
    report = RiskReport(
        observations=0,
        daily_returns=[],
        mean_daily_return=Measured.missing("no series"),
        annualised_volatility=Measured.missing("no series"),
        sharpe=Measured.missing("no series"),
        sortino=Measured.missing("no series"),
        var_95_1d=Measured.missing("no series"),
        var_95_1d_amount=Measured.missing("no series"),
        max_drawdown=Measured.missing("no series"),
        beta=Measured.missing("no series"),
        benchmark=benchmark_symbol,
        risk_free="none",
        correlations=correlations,
        average_correlation=_average(correlations),
        sector_weights=sectors,
        largest_sector=largest,
        notes=notes,
    )
    if not held:
        return _all_cash(report)
    if not priced:
        return _unmeasured(report, "no holding has a price history as of the date")
    dates = sorted(set.intersection(*(set(series) for series in priced.values())))
    values = [float(valuation.cash) + sum(held[s] * priced[s][d] for s in priced) for d in dates]
    returns = simple_returns(values)
    report.observations = len(returns)
    if dates:
        report.start, report.end = dates[0], dates[-1]
    report.daily_returns = returns
    if len(returns) < MIN_RETURNS:
        return _unmeasured(report, _too_short(len(returns)))
    rf, report.risk_free = _risk_free(risk_free, dates, report.notes)
    excess = [r - f for r, f in zip(returns, rf, strict=True)]
    total = float(valuation.total_value)
    var = historical_var(returns)
    report.mean_daily_return = Measured.of(statistics.fmean(returns))
    report.annualised_volatility = Measured.of(annualised_volatility(returns))
    report.sharpe = _or(sharpe(excess), "the book's excess returns never varied")
    report.sortino = _or(
        sortino(excess), "no day returned less than the risk-free rate: no downside to divide by"
    )
    report.var_95_1d = Measured.of(var)
    report.var_95_1d_amount = Measured.of(var * total)
    report.max_drawdown = Measured.of(max_drawdown(values))
    report.beta = _beta(returns, dates, benchmark, benchmark_symbol)
    return report


def _or(value: float | None, reason: str) -> Measured:
    return Measured.of(value) if value is not None else Measured.missing(reason)


def _all_cash(report: RiskReport) -> RiskReport:
    """Cash neither moves nor tracks the market; a ratio of returns to risk is undefined."""
    undefined = "an all-cash book has no returns over cash to relate to risk"
    report.annualised_volatility = Measured.of(0.0)
    report.var_95_1d = Measured.of(0.0)
    report.var_95_1d_amount = Measured.of(0.0)
    report.max_drawdown = Measured.of(0.0)
    report.beta = Measured.of(0.0)
    report.mean_daily_return = Measured.of(0.0)
    report.sharpe = Measured.missing(undefined)
    report.sortino = Measured.missing(undefined)
    report.notes.append("the book holds only cash")
    return report


def _unmeasured(report: RiskReport, reason: str) -> RiskReport:
    for name in (
        "mean_daily_return",
        "annualised_volatility",
        "sharpe",
        "sortino",
        "var_95_1d",
        "var_95_1d_amount",
        "max_drawdown",
        "beta",
    ):
        setattr(report, name, Measured.missing(reason))
    return report


def _risk_free(
    closes: Closes | QuoteMissing | None, dates: Sequence[date], notes: list[str]
) -> tuple[list[float], str]:
    """Each day's risk-free return from the T-bill ETF, or zeros (and a note) without it."""
    if isinstance(closes, Closes):
        aligned = _aligned(_by_date(closes), dates)
        if aligned is not None:
            return simple_returns(aligned), f"{closes.symbol} daily returns"
        notes.append(
            f"{closes.symbol} lacks some sessions of the window: risk-free rate taken as 0"
        )
    else:
        why = closes.reason if closes is not None else "not asked for"
        notes.append(f"no T-bill prices ({why}): risk-free rate taken as 0")
    return [0.0] * (len(dates) - 1), "0 (no T-bill prices)"


def _beta(
    returns: list[float],
    dates: Sequence[date],
    benchmark: Closes | QuoteMissing,
    symbol: str,
) -> Measured:
    if isinstance(benchmark, QuoteMissing):
        return Measured.missing(f"no {symbol} closes: {benchmark.reason}")
    bench = _by_date(benchmark)
    pairs = [
        (r, bench[b] / bench[a] - 1)
        for r, a, b in zip(returns, dates, dates[1:], strict=False)
        if a in bench and b in bench
    ]
    if len(pairs) < MIN_RETURNS:
        return Measured.missing(f"{symbol}: {_too_short(len(pairs))} on the book's sessions")
    mine, theirs = zip(*pairs, strict=True)
    return _or(beta(mine, theirs), f"{symbol} never moved in the window")


def _correlations(priced: Mapping[str, Mapping[date, float]]) -> list[Correlation]:
    found = []
    for a, b in combinations(sorted(priced), 2):
        dates = sorted(set(priced[a]) & set(priced[b]))
        ra = simple_returns([priced[a][d] for d in dates])
        rb = simple_returns([priced[b][d] for d in dates])
        if len(ra) < MIN_RETURNS:
            value = Measured.missing(_too_short(len(ra)))
        elif statistics.pstdev(ra) == 0 or statistics.pstdev(rb) == 0:
            value = Measured.missing("one of the two never moved")
        else:
            value = Measured.of(statistics.correlation(ra, rb))
        found.append(Correlation(a=a, b=b, value=value, observations=len(ra)))
    return found


def _average(correlations: Sequence[Correlation]) -> Measured:
    values = [c.value.value for c in correlations if c.value.value is not None]
    if not values:
        why = "fewer than two holdings with history" if not correlations else "no pair measured"
        return Measured.missing(why)
    return Measured.of(statistics.fmean(values))


def _sector_weights(valuation: Valuation) -> dict[str, float]:
    """Share of total value per sector, cash and cash equivalents apart; largest first."""
    total = valuation.total_value
    if not total:
        return {}
    sums: dict[str, Decimal] = {CASH: valuation.cash}
    for p in valuation.positions:
        bucket = sector_bucket(p.symbol, p.sector) or CASH_EQUIVALENT
        sums[bucket] = sums.get(bucket, Decimal(0)) + p.value
    weights = {name: float(value / total) for name, value in sums.items()}
    return dict(sorted(weights.items(), key=lambda item: -item[1]))
