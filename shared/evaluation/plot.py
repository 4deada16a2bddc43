"""The evaluation plot: accuracy with its 95% Wilson interval per asset, baselines marked.

Drawn on the Agg backend under the chart module's render lock (the charts worker
renders from a thread pool), encoded without metadata so the same table gives
the same PNG.
"""

from __future__ import annotations

from matplotlib.figure import Figure

from shared.charts.candles import drawing, png_bytes
from shared.evaluation.baselines import BASELINE_TITLES, BASELINES
from shared.evaluation.scoring import EvaluationSummary, ScoreRow

BASELINE_MARKERS = {"random": "x", "linreg_slope": "^", "always_long": "s"}
BASELINE_COLOURS = {"random": "#7f7f7f", "linreg_slope": "#d62728", "always_long": "#2ca02c"}
AGENT_COLOUR = "#1f5bd6"
BASELINE_OFFSETS = {"random": 0.15, "linreg_slope": 0.25, "always_long": 0.35}
"""Baselines sit side by side right of the agent's point, so no marker hides another."""


def plotted_rows(summary: EvaluationSummary) -> list[ScoreRow]:
    """The points of the plot, left to right: each asset, overall, then the windows before
    and after the training cutoff."""
    return [*summary.rows, summary.overall, *summary.cutoff_rows]


def render_accuracy_plot(summary: EvaluationSummary) -> bytes:
    """PNG bytes of the plot of ``summary``; rows without scored windows show no point."""
    rows = plotted_rows(summary)
    with drawing():
        figure = Figure(
            figsize=(max(6.4, 1.2 * len(rows) + 2.5), 5.2), dpi=100, layout="constrained"
        )
        axes = figure.add_subplot()
        labelled: set[str] = set()

        def legend_once(label: str) -> str | None:
            """Each series is named once in the legend, at its first point."""
            if label in labelled:
                return None
            labelled.add(label)
            return label

        for x, row in enumerate(rows):
            if row.accuracy is None or row.ci_low is None or row.ci_high is None:
                continue
            axes.errorbar(
                [x],
                [row.accuracy],
                yerr=[[row.accuracy - row.ci_low], [row.ci_high - row.accuracy]],
                fmt="o",
                color=AGENT_COLOUR,
                capsize=5,
                label=legend_once("agent (95% Wilson interval)"),
            )
            for name in BASELINES:
                value = row.baselines[name]
                if value is not None:
                    axes.plot(
                        [x + BASELINE_OFFSETS[name]],
                        [value],
                        BASELINE_MARKERS[name],
                        color=BASELINE_COLOURS[name],
                        label=legend_once(BASELINE_TITLES[name]),
                    )
        axes.axhline(0.5, color="#999999", linestyle="--", linewidth=1)
        axes.set_xticks(range(len(rows)), [f"{row.label}\nn={row.n}" for row in rows])
        axes.set_xlim(-0.5, len(rows) - 0.4)
        axes.set_ylim(0, 1)
        axes.set_ylabel("accuracy")
        axes.yaxis.set_major_formatter(lambda value, _: f"{value:.0%}")
        axes.set_title(f"{summary.label}: direction over the next {summary.held_out} bars")
        axes.grid(axis="y", color="#e6e6e6")
        if labelled:
            figure.legend(loc="outside lower center", ncols=len(labelled), fontsize=8)
        return png_bytes(figure)
