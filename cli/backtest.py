"""`quantdesk backtest`: walk a flow forward over past dates, live, then metrics and files.

The run is the ``Backtest`` workflow; this command starts it, shows the steps
as they are decided (signal, position, equity against buy-and-hold), then the
metrics table and the report, CSV and PNG, which it also copies from S3 into a
local folder.
"""

from __future__ import annotations

import asyncio
from datetime import datetime
from pathlib import Path
from typing import Any

import typer
from rich.table import Table

from cli.follow import Links, run_and_show
from cli.inputs import BudgetOption, BudgetTokensOption, LanguageOption, ProviderOption
from cli.views import console, leaderboard_table, plain
from client.inputs import check_input, llm_choice, new_workflow_id, run_terms
from client.process_exit import fail_on_quantdesk_errors, finish
from shared.agents.pipeline.roles import all_analysts
from shared.backtest import Flow
from shared.backtest.claims_report import cutoff_lead
from shared.backtest.report import POSITION_NAMES, metrics_rows
from shared.config import Settings, load_settings
from shared.storage.objects import ObjectStore
from workflows.backtest import BacktestInput, BacktestProgress, BacktestResult

RECENT_STEPS = 12
"""Steps the live view lists (the latest ones)."""


def _duration(seconds: float | None) -> str:
    if seconds is None:
        return "?"
    minutes, secs = divmod(int(seconds), 60)
    return f"{minutes}m{secs:02d}s" if minutes else f"{secs}s"


def _p(value: float | None) -> str:
    return "n/a" if value is None else f"{value:.3f}"


def progress_table(progress: BacktestProgress) -> Table:
    """The live view: the latest steps, then where the walk is and its equity so far."""
    table = Table(title="Backtest", show_edge=False)
    for column in ("step", "as of", "signal", "position", "lessons"):
        table.add_column(column)
    for record in progress.records[-RECENT_STEPS:]:
        learned = "" if record.lessons_recorded is None else str(record.lessons_recorded)
        table.add_row(
            str(record.step + 1),
            record.as_of.date().isoformat(),
            record.signal,
            POSITION_NAMES[record.position],
            learned,
        )
    equity = ""
    if progress.equity is not None and progress.buy_and_hold is not None:
        equity = f" · equity {progress.equity:.4f} vs buy-and-hold {progress.buy_and_hold:.4f}"
    usage = progress.usage.total
    table.caption = (
        f"{progress.phase} · {progress.decided}/{progress.scheduled} steps{equity}\n"
        f"LLM calls {usage.calls}, tokens {usage.total_tokens} · elapsed "
        f"{_duration(progress.elapsed_seconds)}, left ~{_duration(progress.estimate_seconds)}"
    )
    return table


def metrics_table(result: BacktestResult) -> Table:
    """The strategy against buy-and-hold, metric by metric."""
    table = Table(
        title=f"{result.flow.value} on {result.symbol}, {result.start} to {result.end}, "
        f"{len(result.steps)} steps every {result.every} bar(s)",
        show_edge=False,
    )
    table.add_column("metric")
    table.add_column("strategy", justify="right")
    table.add_column("buy-and-hold", justify="right")
    for row in metrics_rows(result.strategy, result.buy_and_hold):
        table.add_row(*row)
    usage = result.usage.total
    table.caption = (
        f"hits {result.strategy.hits}/{result.strategy.steps_with_position} · "
        f"LLM calls {usage.calls}, tokens {usage.total_tokens}, ${usage.cost_usd:.4f}"
    )
    return table


def save_files(settings: Settings, result: BacktestResult, folder: Path) -> list[Path]:
    """Copy the report, CSV and PNG from S3 into ``folder``; the paths written."""
    store = ObjectStore.from_settings(settings)
    folder.mkdir(parents=True, exist_ok=True)
    written = []
    for stored in (result.report, result.csv, result.chart):
        path = folder / Path(stored.report.key).name
        path.write_bytes(store.get_bytes(stored.report))
        written.append(path)
    return written


async def _run(settings: Settings, payload: dict[str, Any], workflow_id: str, out: Path) -> int:
    async def show(result: BacktestResult) -> Links:
        if result.claims is not None:
            console.print(plain(cutoff_lead(result.claims)), soft_wrap=True, highlight=False)
        console.print(metrics_table(result))
        if result.claims is not None:
            claims = result.claims
            console.print(
                leaderboard_table(
                    "Leaderboard",
                    [("strategy", claims.strategy), ("buy-and-hold", claims.buy_and_hold)],
                )
            )
            tests = claims.tests
            console.print(
                f"PSR {_p(tests.psr)}; deflated over {tests.trials} configuration(s) "
                f"{_p(tests.dsr)}; SPA across {tests.spa_configurations} on these dates "
                f"p={_p(tests.spa_p)}",
                highlight=False,
            )
        paths = await asyncio.to_thread(save_files, settings, result, out)
        for path in paths:
            console.print(f"wrote {path}", soft_wrap=True, highlight=False)
        return [("report", result.report.url)]

    summary = (
        f"Backtest {payload['flow']} {payload['symbol']} "
        f"{payload['start']}..{payload['end']} every {payload['every']}"
    )
    return await run_and_show(
        settings,
        "Backtest",
        BacktestResult,
        payload,
        workflow_id,
        summary,
        show,
        progress_type=BacktestProgress,
        table=progress_table,
    )


def backtest(
    symbol: str = typer.Option(..., help="e.g. GOOG (bundled) or a sim ticker"),
    start: datetime = typer.Option(..., formats=["%Y-%m-%d"], help="first date, e.g. 2010-01-04"),
    end: datetime = typer.Option(..., formats=["%Y-%m-%d"], help="last date, e.g. 2012-12-31"),
    flow: Flow = typer.Option(Flow.PIPELINE, help="the flow to walk forward"),
    every: int = typer.Option(5, help="bars from one step to the next (1-60)"),
    analysts: str = typer.Option(all_analysts(), help="Pipeline: comma-separated analysts"),
    rounds: int = typer.Option(1, help="Pipeline: bull/bear debate rounds (1-5)"),
    risk_rounds: int = typer.Option(1, help="Pipeline: risk debate rounds (1-5)"),
    short: bool = typer.Option(True, "--short/--no-short", help="--no-short: SELL goes flat"),
    reflect: bool | None = typer.Option(
        None, "--reflect/--no-reflect", help="record lessons after each step (Pipeline default)"
    ),
    provider: ProviderOption = None,
    budget: BudgetOption = None,
    budget_tokens: BudgetTokensOption = None,
    language: LanguageOption = None,
    model: str | None = typer.Option(None, help="quick model"),
    deep_model: str | None = typer.Option(None, help="deep model"),
    vision_model: str | None = typer.Option(None, help="vision model (QuantAgent)"),
    out: Path | None = typer.Option(
        None, help="folder for the files (default: ./backtests/<workflow id>)"
    ),
) -> None:
    """Walk FLOW forward over SYMBOL's trading days, strictly as of each step, against
    buy-and-hold: cumulative and annualised return, Sharpe, max drawdown, hit rate, trades."""
    with fail_on_quantdesk_errors():
        settings = load_settings()
        payload: dict[str, Any] = {
            "flow": flow.value,
            "symbol": symbol,
            "start": start.date().isoformat(),
            "end": end.date().isoformat(),
            "every": every,
            "analysts": [name.strip() for name in analysts.split(",") if name.strip()],
            "debate_rounds": rounds,
            "risk_rounds": risk_rounds,
            "allow_short": short,
            "reflect": reflect,
            "llm": llm_choice(
                settings, provider, model=model, deep_model=deep_model, vision_model=vision_model
            ),
        }
        payload |= run_terms(budget, budget_tokens, language)
        check_input(BacktestInput, payload)
        workflow_id = new_workflow_id("backtest", symbol)
        folder = out or Path("backtests") / workflow_id
        status = asyncio.run(_run(settings, payload, workflow_id, folder))
    finish(status)


def register(app: typer.Typer) -> None:
    """Add ``quantdesk backtest`` to the command."""
    app.command("backtest")(backtest)
