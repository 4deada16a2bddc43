"""The evaluation table as Markdown (for people), CSV (for spreadsheets) and JSON (everything).

Accuracies are fractions in CSV and JSON and percentages in Markdown; a number
that cannot exist (no window scored) is empty in CSV, ``null`` in JSON and a
dash in Markdown, never a zero. The paired tests against the baselines get a
table of their own in Markdown, so the accuracy table stays narrow, and three
columns per baseline (wins, losses, p) at the end of each CSV line.
"""

from __future__ import annotations

import csv
import io
from collections.abc import Iterator

from shared.evaluation.baselines import BASELINE_TITLES, BASELINES, SLOPE_BARS
from shared.evaluation.claims_report import before_cutoff_lines, claims_sections, cutoff_lead
from shared.evaluation.paired import paired_cell
from shared.evaluation.scoring import Evaluation, EvaluationSummary, ScoreRow, WindowScore
from shared.evaluation.windows import describe_spacing
from shared.market.bars import Timeframe

MAX_LISTED_WINDOWS = 50
"""Failed or irregular windows listed in the Markdown report; the JSON lists all of them."""

CSV_COLUMNS = (
    "asset",
    "timeframe",
    "n",
    "failed",
    "correct",
    "accuracy",
    "ci_low",
    "ci_high",
    *BASELINES,
    "mean_risk_reward",
    *(f"{name}_{part}" for name in BASELINES for part in ("wins", "losses", "p")),
)
"""Each baseline's paired test last: the agent's wins and losses against it and the p-value."""

PAIRED_TESTS_EXPLAINED = (
    "Each cell compares the agent with one baseline on the row's scored windows "
    "(McNemar's exact test): the windows the agent called right and the baseline wrong, "
    "then the windows the baseline called right and the agent wrong, and the two-sided "
    "p-value, the chance of a split at least that lopsided if both were equally accurate "
    "(each such window a fair coin). Windows both called alike say nothing about which is "
    "better and are not counted. A large p means the windows show no edge either way, not "
    "that there is none. Each test stands alone: no correction for the "
    f"{len(BASELINES)} baselines or the many rows, so among many comparisons of equal "
    "callers up to one in twenty shows p below 0.05."
)


def _rows(summary: EvaluationSummary) -> Iterator[ScoreRow]:
    yield from summary.rows
    yield summary.overall


def _percent(value: float | None) -> str:
    return "–" if value is None else f"{value:.1%}"


def _interval(row: ScoreRow) -> str:
    if row.ci_low is None or row.ci_high is None:
        return "–"
    return f"{row.ci_low:.1%}–{row.ci_high:.1%}"


def _failed(count: int) -> str:
    if count == 0:
        return "No window failed."
    if count == 1:
        return (
            "1 failed window is left out of every number of its row (its analysis failed "
            "or its rows are invalid; the reason is listed below)."
        )
    return (
        f"{count} failed windows are left out of every number of their rows (their analysis "
        "failed or their rows are invalid; the reasons are listed below)."
    )


def _irregular(count: int) -> str:
    if count == 0:
        return ""
    windows = "1 window's bars are" if count == 1 else f"{count} windows' bars are"
    return f" {windows} not evenly spaced (DST shifts, missing bars); they were analysed as given."


def _listed(title: str, lines: list[str]) -> list[str]:
    """A section of at most ``MAX_LISTED_WINDOWS`` lines, then how many more the JSON has."""
    if not lines:
        return []
    section = ["", f"## {title}", "", *lines[:MAX_LISTED_WINDOWS]]
    if len(lines) > MAX_LISTED_WINDOWS:
        section.append(f"- … and {len(lines) - MAX_LISTED_WINDOWS} more (see the JSON)")
    return section


def _spacing_line(score: WindowScore) -> str:
    return f"- `{score.window_id}`: {describe_spacing(score.spacing, Timeframe(score.timeframe))}"


def _paired_section(summary: EvaluationSummary) -> list[str]:
    """The agent against each baseline, row by row: wins–losses and the p-value."""
    headings = ["asset", *(f"vs {BASELINE_TITLES[name]}" for name in BASELINES)]
    lines = [
        "",
        "## Paired tests against the baselines",
        "",
        "| " + " | ".join(headings) + " |",
        "|" + "|".join(["---"] + ["---:"] * len(BASELINES)) + "|",
    ]
    for row in _rows(summary):
        name = f"**{row.label}**" if row is summary.overall else row.label
        cells = [name, *(paired_cell(row.paired.get(baseline)) for baseline in BASELINES)]
        lines.append("| " + " | ".join(cells) + " |")
    return [*lines, "", PAIRED_TESTS_EXPLAINED]


def render_markdown(evaluation: Evaluation) -> str:
    """The table with the protocol and the baselines explained, the paired tests, then the
    failed and irregular windows."""
    summary = evaluation.summary
    headings = ["asset", "n", "failed", "accuracy", "95% CI"]
    headings += [BASELINE_TITLES[name] for name in BASELINES] + ["mean R/R"]
    lead = cutoff_lead(summary)
    lines = [
        f"# Evaluation: {summary.label}",
        "",
        *(lead + [""] if lead else []),
        f"{summary.windows} windows; the agent saw all but the last {summary.held_out} bars "
        f"of each. A LONG call is right when the close {summary.held_out} bars later is above "
        f"the last close it saw, a SHORT call when it is not. {_failed(summary.failed)}"
        f"{_irregular(summary.irregular)}",
        "",
        "| " + " | ".join(headings) + " |",
        "|" + "|".join(["---"] + ["---:"] * (len(headings) - 1)) + "|",
    ]
    for row in _rows(summary):
        name = f"**{row.label}**" if row is summary.overall else row.label
        ratio = "–" if row.mean_risk_reward is None else f"{row.mean_risk_reward:.2f}"
        cells = [name, str(row.n), str(row.failed), _percent(row.accuracy), _interval(row)]
        cells += [_percent(row.baselines[name]) for name in BASELINES] + [ratio]
        lines.append("| " + " | ".join(cells) + " |")
    lines += [
        "",
        f"Baselines, on the same windows and visible bars: random is a fair coin seeded by "
        f"{summary.seed} and the window id; linreg slope calls LONG when the least-squares "
        f"slope of the last {SLOPE_BARS} visible closes is positive; always long calls LONG.",
        *_paired_section(summary),
        *claims_sections(evaluation),
    ]
    windows = evaluation.windows
    lines += _listed(
        "Failed windows", [f"- `{w.window_id}`: {w.error}" for w in windows if w.error is not None]
    )
    lines += _listed("Irregular spacing", [_spacing_line(w) for w in windows if w.spacing])
    lines += _listed("Windows before the training cutoff", before_cutoff_lines(evaluation))
    return "\n".join(lines) + "\n"


def _csv_value(value: object) -> object:
    if value is None:
        return ""
    return round(value, 6) if isinstance(value, float) else value


def _paired_values(row: ScoreRow) -> dict[str, object]:
    """The row's paired-test columns; p in six significant digits, as a tiny p would round
    to zero in six decimals. A row without scored windows has none (empty cells)."""
    values: dict[str, object] = {}
    for name, test in row.paired.items():
        values |= {f"{name}_wins": test.wins, f"{name}_losses": test.losses}
        values[f"{name}_p"] = f"{test.p_value:.6g}"
    return values


def render_csv(summary: EvaluationSummary) -> str:
    """One line per row of the table, the overall row, then one per cutoff tag (asset
    ``before cutoff``, ``after cutoff`` or ``unknown``, timeframe ``all``)."""
    buffer = io.StringIO()
    writer = csv.writer(buffer, lineterminator="\n")
    writer.writerow(CSV_COLUMNS)
    for row in [*_rows(summary), *summary.cutoff_rows]:
        values = row.model_dump() | row.baselines | _paired_values(row)
        writer.writerow([_csv_value(values.get(column)) for column in CSV_COLUMNS])
    return buffer.getvalue()


def render_json(evaluation: Evaluation) -> str:
    """The table and every window behind it."""
    return evaluation.model_dump_json(indent=2) + "\n"
