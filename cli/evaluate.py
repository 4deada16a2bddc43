"""`quantdesk eval quantagent`: run the benchmark protocol, follow it with a progress bar,
print the table and write the four reports next to you.

The reports are stored in S3 by the workflow; this command downloads them into
``--out/<workflow id>/`` so they can be opened, diffed and committed like any file.
"""

from __future__ import annotations

import asyncio
import functools
from pathlib import Path
from typing import Any

import typer
from rich.progress_bar import ProgressBar
from rich.table import Table

from cli.follow import Links, run_and_show
from cli.inputs import BudgetOption, BudgetTokensOption, LanguageOption, ProviderOption
from cli.views import console, leaderboard_table, plain
from client.inputs import check_input, llm_choice, new_workflow_id, run_terms
from client.process_exit import fail_on_quantdesk_errors, finish
from shared.config import Settings, load_settings
from shared.evaluation.baselines import BASELINE_TITLES, BASELINES
from shared.evaluation.claims_report import cutoff_lead
from shared.evaluation.paired import format_p, paired_cell
from shared.evaluation.probes import PROBES, ProbeReport, Rate, Variant
from shared.evaluation.scoring import EvaluationSummary, ScoreRow
from shared.storage.objects import ObjectStore
from workflows.evaluate import (
    DEFAULT_CONCURRENCY,
    EvaluateInput,
    EvaluateProgress,
    EvaluateResult,
)

eval_app = typer.Typer(help="Score a flow on benchmark windows.", no_args_is_help=True)
REPORT_FILES = {
    "markdown": "evaluation.md",
    "csv": "evaluation.csv",
    "json_table": "evaluation.json",
    "plot": "evaluation.png",
}
"""Field of ``EvaluationReports`` -> the local file it is written to."""
PROBES_FILE = "probes.json"
"""With variants: the probe tables and the anonymised gap, from the result."""


def progress_view(progress: EvaluateProgress) -> Table:
    """A bar of windows done, with failures, windows in flight and the accuracy so far."""
    view = Table.grid(padding=(0, 2))
    accuracy = "–" if progress.accuracy is None else f"{progress.accuracy:.1%}"
    view.add_row(
        f"[bold]{progress.phase}[/]",
        ProgressBar(total=max(progress.total, 1), completed=progress.done, width=40),
        f"{progress.done}/{progress.total or '?'} windows",
        f"[red]{progress.failed} failed[/]" if progress.failed else "0 failed",
        f"{progress.running} running",
        f"accuracy so far {accuracy}",
    )
    return view


def _percent(value: float | None) -> str:
    return "–" if value is None else f"{value:.1%}"


def summary_table(summary: EvaluationSummary) -> Table:
    """The evaluation table as the terminal shows it."""
    table = Table(title=f"Evaluation: {summary.label}", show_edge=False)
    for heading in ("asset", "n", "failed", "accuracy", "95% CI"):
        table.add_column(heading, justify="left" if heading == "asset" else "right")
    for name in BASELINES:
        table.add_column(BASELINE_TITLES[name], justify="right")
    table.add_column("mean R/R", justify="right")

    def add(row: ScoreRow, style: str = "") -> None:
        interval = (
            "–"
            if row.ci_low is None or row.ci_high is None
            else f"{row.ci_low:.1%}–{row.ci_high:.1%}"
        )
        ratio = "–" if row.mean_risk_reward is None else f"{row.mean_risk_reward:.2f}"
        table.add_row(
            row.label,
            str(row.n),
            str(row.failed),
            _percent(row.accuracy),
            interval,
            *(_percent(row.baselines[name]) for name in BASELINES),
            ratio,
            style=style,
        )

    for row in summary.rows:
        add(row)
    add(summary.overall, "bold")
    for row in summary.cutoff_rows:
        add(row, "italic")
    irregular = (
        f"; {summary.irregular} with irregular spacing (see the report)"
        if summary.irregular
        else ""
    )
    table.caption = (
        f"{summary.windows} windows, last {summary.held_out} bars held out; "
        f"random baseline seed {summary.seed}{irregular}"
    )
    return table


def paired_table(summary: EvaluationSummary) -> Table:
    """The agent against each baseline on each row's windows: wins–losses and McNemar's p."""
    table = Table(title="Paired tests against the baselines", show_edge=False)
    table.add_column("asset")
    for name in BASELINES:
        table.add_column(f"vs {BASELINE_TITLES[name]}", justify="right")
    for row in [*summary.rows, summary.overall]:
        table.add_row(
            row.label,
            *(paired_cell(row.paired.get(name)) for name in BASELINES),
            style="bold" if row is summary.overall else "",
        )
    table.caption = (
        "agent right, baseline wrong – the reverse;\nMcNemar's exact p, two-sided, uncorrected"
    )
    return table


def _rate(rate: Rate | None) -> str:
    if rate is None or rate.value is None or rate.ci_low is None or rate.ci_high is None:
        return "–"
    return f"{rate.value:.0%} ({rate.hits}/{rate.n}, {rate.ci_low:.0%}–{rate.ci_high:.0%})"


def probe_table(report: ProbeReport) -> Table:
    """Every caller's probes, one row each (the Markdown report has a table per caller)."""
    table = Table(title="Counterfactual probes", show_edge=False)
    table.add_column("caller")
    for heading in ("mirrored: flipped", "rescaled: kept", "random walk: right", "long bias"):
        table.add_column(heading, justify="right")
    for caller in report.callers:
        table.add_row(
            caller.caller,
            *(
                _rate(rate)
                for rate in (
                    caller.flip_rate,
                    caller.consistency,
                    caller.walk_accuracy,
                    caller.long_bias,
                )
            ),
        )
    table.caption = "share (windows, 95% Wilson interval); a chart reader: ~100%, 100%, ~50%, ~50%"
    return table


def gap_table(report: ProbeReport) -> Table:
    """The agent's accuracy on the real windows and on the same windows anonymised."""
    table = Table(title="Raw against anonymised", show_edge=False)
    for heading in ("asset", "n", "raw", "anonymised", "gap", "McNemar"):
        table.add_column(heading, justify="left" if heading == "asset" else "right")
    for row in report.gap:
        paired = (
            "–"
            if row.paired is None
            else f"{row.paired.wins}–{row.paired.losses}, {format_p(row.paired.p_value)}"
        )
        table.add_row(
            row.label,
            str(row.n),
            _percent(row.raw),
            _percent(row.anonymised),
            "–" if row.gap is None else f"{row.gap:+.1%}",
            paired,
            style="bold" if row.asset == "overall" else "",
        )
    table.caption = "gap = raw − anonymised: what the ticker and the period were worth"
    return table


def tests_line(summary: EvaluationSummary) -> str:
    """The headline windows' tests in one sentence: effective n, PT and the power it had."""
    claims = summary.claims
    if claims is None:
        return ""
    name = str(summary.headline.asset)
    tests = claims.tests.get(name) or claims.tests["overall"]
    n_eff = "–" if tests.n_effective is None else f"{tests.n_effective:.1f}"
    pt = "undefined" if tests.pt_p is None else f"p={tests.pt_p:.3g}"
    had = {None: "", True: " (had them)", False: " (did not have them)"}[tests.enough]
    return (
        f"{name}: {tests.n} windows, {n_eff} effective; Pesaran–Timmermann {pt}; "
        f"{tests.needed_vs_half} windows needed to detect 55% against 50% at 80% power{had}."
    )


def write_reports(settings: Settings, result: EvaluateResult, folder: Path) -> list[Path]:
    """Download the stored reports into ``folder``; the paths written."""
    store = ObjectStore.from_settings(settings)
    folder.mkdir(parents=True, exist_ok=True)
    written = []
    for field, name in REPORT_FILES.items():
        stored = getattr(result.reports, field)
        path = folder / name
        path.write_bytes(store.get_bytes(stored.report))
        written.append(path)
    if result.probes is not None:
        path = folder / PROBES_FILE
        path.write_text(result.probes.model_dump_json(indent=2) + "\n")
        written.append(path)
    return written


async def _evaluate(
    settings: Settings, payload: dict[str, Any], workflow_id: str, out: Path
) -> int:
    def show(result: EvaluateResult) -> Links:
        for line in cutoff_lead(result.summary):
            console.print(plain(line), soft_wrap=True, highlight=False)
        console.print(summary_table(result.summary))
        console.print()
        console.print(paired_table(result.summary))
        claims = result.summary.claims
        if claims is not None:
            console.print()
            console.print(
                leaderboard_table(
                    "Trading the calls",
                    [("agent", claims.agent), ("always long", claims.buy_and_hold)],
                )
            )
            console.print(plain(tests_line(result.summary)), soft_wrap=True, highlight=False)
        if result.probes is not None and result.probes.callers:
            console.print()
            console.print(probe_table(result.probes))
        if result.probes is not None and result.probes.gap:
            console.print()
            console.print(gap_table(result.probes))
        for path in write_reports(settings, result, out / workflow_id):
            console.print(f"wrote {path}", soft_wrap=True, highlight=False)
        stored = result.reports.markdown.report
        folder = stored.key.rsplit("/", 1)[0]
        console.print(f"stored in s3://{stored.bucket}/{folder}/", soft_wrap=True, highlight=False)
        return []

    summary = f"Evaluate QuantAgent, {payload['llm']['provider']}"
    return await run_and_show(
        settings,
        "Evaluate",
        EvaluateResult,
        payload,
        workflow_id,
        summary,
        show,
        progress_type=EvaluateProgress,
        table=progress_view,
    )


def windows_spec(
    data: Path | None,
    symbols: list[str],
    *,
    timeframe: str,
    count: int,
    seed: int,
    bars: int,
    source: str,
    csv: Path | None,
) -> dict[str, Any]:
    """The workflow's ``windows`` input: a benchmark directory, or cuts from a source."""
    if (data is None) == (not symbols):
        raise typer.BadParameter("give exactly one of --data DIR and --symbol SYMBOL")
    if data is not None:
        return {"kind": "directory", "path": str(data.resolve())}
    spec: dict[str, Any] = {
        "kind": "cut",
        "symbols": [s.strip() for value in symbols for s in value.split(",") if s.strip()],
        "timeframe": timeframe,
        "count": count,
        "seed": seed,
        "bars": bars,
        "source": source,
    }
    if csv is not None:
        spec |= {"source": "csv", "csv_path": str(csv.resolve())}
    return spec


@eval_app.command("quantagent")
def quantagent(
    data: Path | None = typer.Option(
        None, help="benchmark directory: <asset>/<ASSET>_<tf>_<n>.csv, 100 bars each"
    ),
    symbol: list[str] = typer.Option(
        [], help="cut windows from a source instead (repeat, or comma-separated)"
    ),
    timeframe: str = typer.Option("1d", help="bar length of cut windows"),
    count: int = typer.Option(20, help="cut windows per symbol"),
    seed: int = typer.Option(0, help="where cut windows fall, and the random baseline's seed"),
    bars: int = typer.Option(100, help="bars per cut window (the agent sees all but 3)"),
    source: str = typer.Option("bundled", help="bars of cut windows from: bundled, csv, yfinance"),
    csv: Path | None = typer.Option(None, help="cut windows from this CSV file (implies csv)"),
    provider: ProviderOption = None,
    budget: BudgetOption = None,
    budget_tokens: BudgetTokensOption = None,
    language: LanguageOption = None,
    model: str | None = typer.Option(None, help="model for the indicator agent"),
    vision_model: str | None = typer.Option(None, help="model for the chart agents"),
    deep_model: str | None = typer.Option(None, help="model for the decision agent"),
    concurrency: int = typer.Option(DEFAULT_CONCURRENCY, help="windows analysed at once"),
    repeats: int = typer.Option(
        1, help="analyse each window N times (non-deterministic models); it counts once"
    ),
    out: Path = typer.Option(Path("evaluations"), help="reports go to OUT/<workflow id>/"),
    anonymise: bool = typer.Option(
        False,
        "--anonymise",
        help="also analyse each window with the ticker, dates and price level disguised, "
        "and report the raw-versus-anonymised gap per asset",
    ),
) -> None:
    """Run QuantAgent on every window, then print accuracy with intervals against baselines."""
    _run_evaluation(
        "evaluate-quantagent",
        [Variant.ANONYMISED] if anonymise else [],
        data=data,
        symbol=symbol,
        timeframe=timeframe,
        count=count,
        seed=seed,
        bars=bars,
        source=source,
        csv=csv,
        provider=provider,
        budget=budget,
        budget_tokens=budget_tokens,
        language=language,
        model=model,
        vision_model=vision_model,
        deep_model=deep_model,
        concurrency=concurrency,
        repeats=repeats,
        out=out,
    )


@eval_app.command("probes")
@functools.wraps(quantagent, assigned=("__module__", "__annotations__"))
def probes(**options: Any) -> None:
    """Run QuantAgent on every window and on changed copies of it (mirrored, rescaled, a random
    walk), then print how each agent and baseline reacts: flip rate, consistency, long bias."""
    anonymise = options.pop("anonymise")
    _run_evaluation(
        "evaluate-probes", [*PROBES, *([Variant.ANONYMISED] if anonymise else [])], **options
    )


def _run_evaluation(
    kind: str,
    variants: list[Variant],
    *,
    data: Path | None,
    symbol: list[str],
    timeframe: str,
    count: int,
    seed: int,
    bars: int,
    source: str,
    csv: Path | None,
    provider: str | None,
    budget: float | None,
    budget_tokens: int | None,
    language: str | None,
    model: str | None,
    vision_model: str | None,
    deep_model: str | None,
    concurrency: int,
    repeats: int,
    out: Path,
) -> None:
    """Start the evaluation the options name, follow it, print and write its reports."""
    with fail_on_quantdesk_errors():
        settings = load_settings()
        payload: dict[str, Any] = {
            "windows": windows_spec(
                data,
                symbol,
                timeframe=timeframe,
                count=count,
                seed=seed,
                bars=bars,
                source=source,
                csv=csv,
            ),
            "llm": llm_choice(
                settings, provider, model=model, vision_model=vision_model, deep_model=deep_model
            ),
            "concurrency": concurrency,
            "seed": seed,
            "repeats": repeats,
            "variants": [variant.value for variant in variants],
        }
        payload |= run_terms(budget, budget_tokens, language)
        check_input(EvaluateInput, payload)
        workflow_id = new_workflow_id(kind)
        status = asyncio.run(_evaluate(settings, payload, workflow_id, out))
    finish(status)
