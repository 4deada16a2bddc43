"""The evaluation report's claims in Markdown: the cutoff headline first, then the windows by
cutoff, the direction tests, the leaderboard against buy-and-hold and the repeat spread.

The headline is the figure of the windows after the models' training cutoff: before it,
a model may remember how a window ended. A run whose windows all fall before the cutoff
says so before anything else.
"""

from __future__ import annotations

from shared.evaluation.scoring import OVERALL, Evaluation, EvaluationSummary, ScoreRow
from shared.llm.knowledge import CutoffTag
from shared.stats.results import TARGET_ACCURACY, DirectionTests
from shared.stats.tables import leaderboard_markdown

TESTS_EXPLAINED = (
    "n eff: windows worth of independent evidence, after windows whose held-out bars "
    "overlap in time share their luck (Kish's design effect). p vs 50% and p vs always long: "
    "one-sided binomial tests of the accuracy on n eff. PT: the Pesaran–Timmermann test, "
    "the accuracy against what calls with the same long share would score by chance; "
    "'over trials' deflates its p by every evaluation configuration in the trials ledger. "
    f"Needed: windows to detect {TARGET_ACCURACY:.0%} at 80% power (one-sided 5%)."
)


def _pct(value: float | None) -> str:
    return "–" if value is None else f"{value:.1%}"


def _p(value: float | None) -> str:
    return "–" if value is None else f"{value:.3g}"


def _interval(row: ScoreRow) -> str:
    if row.ci_low is None or row.ci_high is None:
        return "–"
    return f"{row.ci_low:.1%}–{row.ci_high:.1%}"


def _figure(row: ScoreRow) -> str:
    windows = "window" if row.n == 1 else "windows"
    return f"{_pct(row.accuracy)} (95% CI {_interval(row)}) on {row.n} {windows}"


def cutoff_lead(summary: EvaluationSummary) -> list[str]:
    """The lines that open the report: all before the cutoff, or the after-cutoff headline."""
    cutoff = summary.cutoff
    if cutoff is None:
        return []
    rows = {row.asset: row for row in summary.cutoff_rows}
    models = f"Training cutoffs: {cutoff.describe()}."
    if not cutoff.known:
        return [
            f"**The models' training cutoff is unknown, so no window can be shown to be "
            f"after it; every figure below may include remembered outcomes.** {models}",
        ]
    if summary.all_before_cutoff:
        return [
            f"**All {summary.overall.n} scored windows fall before the models' training "
            f"cutoff ({cutoff.last_day}): the models may remember how each one ended, so no "
            f"figure below is evidence of skill.** {models}",
        ]
    after = rows[CutoffTag.AFTER]
    lines = [f"**Headline, after the training cutoff: accuracy {_figure(after)}.**"]
    before = rows.get(CutoffTag.BEFORE)
    if before is not None and before.n:
        lines.append(f"Before the cutoff (the models may remember these): {_figure(before)}.")
    return [" ".join(lines) + f" {models}"]


def _cutoff_table(summary: EvaluationSummary) -> list[str]:
    if not summary.cutoff_rows:
        return []
    last = summary.cutoff.last_day if summary.cutoff else None
    lines = [
        "",
        "## Before and after the training cutoff",
        "",
        "| windows | n | failed | accuracy | 95% CI |",
        "|---|---:|---:|---:|---:|",
    ]
    for row in summary.cutoff_rows:
        lines.append(
            f"| {row.asset} | {row.n} | {row.failed} | {_pct(row.accuracy)} | {_interval(row)} |"
        )
    when = f" ({last})" if last else ""
    return [
        *lines,
        "",
        f"A window is before the cutoff{when} when the last bar the agent saw is on or before "
        "it (the last three months before a stated cutoff, which models know only thinly, "
        "count as before): the model may know what came next.",
    ]


def _tests_row(name: str, tests: DirectionTests) -> str:
    n_eff = "–" if tests.n_effective is None else f"{tests.n_effective:.1f}"
    enough = {None: "–", True: "yes", False: "no"}[tests.enough]
    cells = [
        name,
        str(tests.n),
        n_eff,
        _pct(tests.up_rate),
        _pct(tests.long_share),
        _p(tests.p_vs_half),
        _p(tests.p_vs_always_long),
        "–" if tests.pt_statistic is None else f"{tests.pt_statistic:.2f}",
        _p(tests.pt_p),
        _p(tests.pt_p_deflated),
        "–" if tests.needed_vs_half is None else str(tests.needed_vs_half),
        "–" if tests.needed_vs_always_long is None else str(tests.needed_vs_always_long),
        enough,
    ]
    return "| " + " | ".join(cells) + " |"


def _tests_section(summary: EvaluationSummary) -> list[str]:
    claims = summary.claims
    if claims is None:
        return []
    headings = (
        "windows | n | n eff | rose | LONG calls | p vs 50% | p vs always long | PT | PT p | "
        "PT p over trials | needed vs 50% | needed vs always long | had them"
    )
    order = [OVERALL, *(tag.value for tag in CutoffTag)]
    trials = next(iter(claims.tests.values())).trials
    return [
        "",
        "## Does the accuracy beat the calls' own bias?",
        "",
        f"| {headings} |",
        "|---|" + "---:|" * 12,
        *(_tests_row(name, claims.tests[name]) for name in order if name in claims.tests),
        "",
        TESTS_EXPLAINED + f" The ledger holds {trials} evaluation configuration(s).",
    ]


def _leaderboard_section(summary: EvaluationSummary) -> list[str]:
    claims = summary.claims
    if claims is None:
        return []
    return [
        "",
        "## Trading the calls",
        "",
        "Each scored window traded over its held-out bars (long on LONG, short on SHORT), "
        "windows decided at the same time equally weighted, against always long on the "
        "same windows.",
        "",
        *leaderboard_markdown([("agent", claims.agent), ("buy-and-hold", claims.buy_and_hold)]),
    ]


def _spread_section(summary: EvaluationSummary) -> list[str]:
    spread = summary.claims.spread if summary.claims else None
    if spread is None:
        return []
    each = ", ".join(_pct(a) for a in spread.accuracies)
    return [
        "",
        "## Repeats",
        "",
        f"Each window ran {spread.repeats} times and counts once, by its majority call. "
        f"Accuracy of each repeat alone: {each} (spread {_pct(spread.low)}–{_pct(spread.high)}); "
        f"{_pct(spread.unanimous)} of the windows got the same call every time.",
    ]


def claims_sections(evaluation: Evaluation) -> list[str]:
    """Everything the claims add after the paired tests, in order."""
    summary = evaluation.summary
    return [
        *_cutoff_table(summary),
        *_tests_section(summary),
        *_leaderboard_section(summary),
        *_spread_section(summary),
    ]


def before_cutoff_lines(evaluation: Evaluation) -> list[str]:
    """One line per window before the cutoff (the report lists the first of them)."""
    return [
        f"- `{w.window_id}`: decided {w.decided_at:%Y-%m-%d %H:%M}, before the cutoff"
        for w in evaluation.windows
        if w.cutoff is CutoffTag.BEFORE and w.decided_at is not None
    ]
