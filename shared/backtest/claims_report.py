"""The backtest report's claims in Markdown: the cutoff headline first, the walk before and
after the training cutoff, the leaderboard against buy-and-hold and the Sharpe's tests."""

from __future__ import annotations

from shared.backtest.claims import BacktestClaims, PeriodScores
from shared.llm.knowledge import CutoffTag
from shared.stats.tables import leaderboard_markdown


def _pct(value: float | None) -> str:
    return "n/a" if value is None else f"{value:+.2%}"


def _figure(period: PeriodScores) -> str:
    return (
        f"{_pct(period.strategy.cumulative_return)} against buy-and-hold's "
        f"{_pct(period.buy_and_hold.cumulative_return)} over {period.steps} steps"
    )


def cutoff_lead(claims: BacktestClaims) -> str:
    """The paragraph that opens the report: all before the cutoff, or the after-cutoff figure."""
    cutoff = claims.cutoff
    models = f"Training cutoffs: {cutoff.describe()}."
    if not cutoff.known:
        return (
            "**The models' training cutoff is unknown, so no step can be shown to be after it; "
            f"every figure below may rest on remembered prices.** {models}"
        )
    if claims.all_before:
        return (
            f"**Every step falls before the models' training cutoff ({cutoff.last_day}): the "
            f"models may remember what followed each date, so no figure below is evidence of "
            f"skill.** {models}"
        )
    after = claims.period(CutoffTag.AFTER)
    lead = f"**Headline, after the training cutoff: {_figure(after)}.**" if after else ""
    before = claims.period(CutoffTag.BEFORE)
    if before is not None:
        lead += f" Before the cutoff (the models may remember these): {_figure(before)}."
    return f"{lead} {models}".strip()


def _periods_table(claims: BacktestClaims) -> str:
    lines = [
        "| steps | n | strategy | buy-and-hold | Sharpe | hit rate |",
        "|---|---:|---:|---:|---:|---:|",
    ]
    for p in claims.periods:
        sharpe = "n/a" if p.strategy.sharpe is None else f"{p.strategy.sharpe:.2f}"
        hit = "n/a" if p.strategy.hit_rate is None else f"{p.strategy.hit_rate:.2%}"
        lines.append(
            f"| {p.tag} | {p.steps} | {_pct(p.strategy.cumulative_return)} | "
            f"{_pct(p.buy_and_hold.cumulative_return)} | {sharpe} | {hit} |"
        )
    lines.append(
        "\nA step is before the cutoff when its analysis date is on or before it (the last "
        "three months before a stated cutoff, which models know only thinly, count as before)."
    )
    return "## Before and after the training cutoff\n\n" + "\n".join(lines)


def _tests_text(claims: BacktestClaims) -> str:
    t = claims.tests

    def p(value: float | None) -> str:
        return "n/a" if value is None else f"{value:.3f}"

    threshold = "n/a" if t.expected_max_sharpe is None else f"{t.expected_max_sharpe:.2f}"
    spa = (
        f"Hansen's SPA across the {t.spa_configurations} configuration(s) run on these dates: "
        f"p = {p(t.spa_p)} that none beats buy-and-hold."
        if t.spa_p is not None
        else "Hansen's SPA: n/a (too few dates)."
    )
    return (
        "## Does the Sharpe survive?\n\n"
        f"Probabilistic Sharpe ratio (true Sharpe above 0, given the returns' skew and "
        f"kurtosis): {p(t.psr)}. The trials ledger holds {t.trials} backtest "
        f"configuration(s); the best of that many unskilled ones would show a Sharpe of "
        f"{threshold} by luck, and the deflated Sharpe ratio (true Sharpe above that) is "
        f"{p(t.dsr)}. {spa}"
    )


def claims_parts(claims: BacktestClaims) -> list[str]:
    """The report's sections the claims add, after the metrics."""
    return [
        _periods_table(claims),
        "## Leaderboard\n\n"
        + "\n".join(
            leaderboard_markdown(
                [("strategy", claims.strategy), ("buy-and-hold", claims.buy_and_hold)]
            )
        ),
        _tests_text(claims),
    ]
