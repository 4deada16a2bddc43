"""`quantdesk run ...`: start a flow, show its progress live, then a readable summary."""

from __future__ import annotations

import asyncio
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

import typer
from rich.panel import Panel
from rich.table import Table
from temporalio.client import Client
from temporalio.service import RPCError

from cli.follow import Links, run_and_show
from cli.inputs import (
    BudgetOption,
    BudgetTokensOption,
    EstimateOption,
    LanguageOption,
    ProviderOption,
    print_estimate,
)
from cli.views import console
from cli.watchlist import autorun_names
from client.inputs import check_input, llm_choice, new_workflow_id, run_terms
from client.process_exit import fail_on_quantdesk_errors, finish
from client.starting import check_autorun_names
from shared.agents.pipeline.roles import all_analysts
from shared.config import Settings, load_settings
from shared.llm.contracts import UsageReport
from workflows.autorun import AutoRunInput, AutoRunResult
from workflows.debate_contracts import DebateResult, RiskResult
from workflows.pipeline_contracts import PipelineInput, PipelineResult, PipelineState
from workflows.quantagent import QuantAgentInput, QuantAgentResult
from workflows.scan import ScanInput, ScanResult

run_app = typer.Typer(help="Run a flow on the stack and show its result.", no_args_is_help=True)


def quantagent_summary(result: QuantAgentResult, provider: str) -> Panel:
    """The decision panel of a finished QuantAgent run (``provider``: the run's, named when
    the charts were read as text)."""
    decision = result.decision
    colour = "green" if decision.decision.value == "LONG" else "red"
    pattern = result.pattern_report
    trend = result.trend_report
    lines = [
        f"[bold {colour}]{decision.decision.value}[/] {result.symbol} {result.timeframe.value} "
        f"as of {result.as_of.isoformat()} ({result.bars_analysed} bars)",
        f"horizon: {result.forecast_horizon}; risk/reward {decision.risk_reward_ratio}",
        "",
        f"[bold]why:[/] {decision.justification}",
        f"[bold]pattern:[/] {pattern.pattern.value if pattern.pattern else 'none'} "
        f"({pattern.bias.value}, {pattern.confidence:.2f})",
        f"[bold]trend:[/] {trend.price_action.value} → {trend.prediction.value} "
        f"({trend.confidence:.2f})",
        "[bold]indicators:[/] "
        + ", ".join(
            f"{k} {v:.4g}"
            for values in result.latest_indicators.values()
            for k, v in values.items()
            if v is not None
        ),
        usage_line(result.usage),
    ]
    if result.chart_input == "text":
        lines.append(
            "[bold]charts:[/] the pattern and trend agents read the charts as text "
            f"(provider {provider} has no vision)"
        )
    return Panel("\n".join(lines), title="QuantAgent decision", expand=False)


def usage_line(usage: UsageReport) -> str:
    """Calls, tokens and cost of a finished run."""
    total = usage.total
    return f"usage: {total.calls} LLM calls, {total.total_tokens} tokens, ${total.cost_usd:.4f}"


async def _run_quantagent(settings: Settings, payload: dict[str, Any], workflow_id: str) -> int:
    def show(result: QuantAgentResult) -> Links:
        console.print(quantagent_summary(result, payload["llm"]["provider"]))
        return [
            ("pattern chart", result.pattern_chart.url),
            ("trend chart", result.trend_chart.url),
        ]

    summary = f"QuantAgent {payload['symbol']} {payload['timeframe']}"
    return await run_and_show(
        settings, "QuantAgent", QuantAgentResult, payload, workflow_id, summary, show
    )


@run_app.command("quantagent")
def quantagent(
    symbol: str = typer.Argument(..., help="e.g. GOOG, EURUSD, BTCUSD, or the symbol of --csv"),
    timeframe: str = typer.Option("1d", help="1m 5m 15m 30m 1h 4h 1d 1wk 1mo"),
    provider: ProviderOption = None,
    budget: BudgetOption = None,
    budget_tokens: BudgetTokensOption = None,
    language: LanguageOption = None,
    estimate_only: EstimateOption = False,
    model: str | None = typer.Option(None, help="model for the indicator agent"),
    vision_model: str | None = typer.Option(None, help="model for the chart agents"),
    deep_model: str | None = typer.Option(None, help="model for the decision agent"),
    source: str = typer.Option("bundled", help="bars from: bundled, csv, yfinance"),
    csv: Path | None = typer.Option(None, help="analyse this CSV/Parquet file (implies csv)"),
    as_of: datetime | None = typer.Option(None, help="analysis time, UTC (default: latest)"),
    lookback: int = typer.Option(100, help="bars in the analysis window"),
) -> None:
    """Run the QuantAgent workflow for SYMBOL and print its decision."""
    with fail_on_quantdesk_errors():
        settings = load_settings()
        payload: dict[str, Any] = {
            "symbol": symbol,
            "timeframe": timeframe,
            "lookback": lookback,
            "source": source,
            "llm": llm_choice(
                settings, provider, model=model, vision_model=vision_model, deep_model=deep_model
            ),
        }
        if csv is not None:
            payload |= {"source": "csv", "csv_path": str(csv.resolve())}
        payload |= run_terms(budget, budget_tokens, language)
        check_input(QuantAgentInput, payload, as_of=as_of)
        if estimate_only:
            print_estimate(settings, "QuantAgent", payload)
            finish(0)
        workflow_id = new_workflow_id("quantagent", symbol)
        status = asyncio.run(_run_quantagent(settings, payload, workflow_id))
    finish(status)


# --- the per-ticker Pipeline and its debates ----------------------------------------------


def _pipeline_summary(result: PipelineResult) -> Panel:
    decision = result.decision
    colour = {"BUY": "green", "SELL": "red"}.get(decision.signal.value, "yellow")
    lines = [
        f"[bold {colour}]{decision.rating.value} ({decision.signal.value})[/] {result.symbol} "
        f"as of {result.as_of.isoformat()}",
        f"horizon: {decision.time_horizon}; price target: {decision.price_target or 'none'}",
        "",
        f"[bold]summary:[/] {decision.executive_summary}",
        f"[bold]thesis:[/] {decision.investment_thesis}",
    ]
    if result.abort_reason:
        lines.append(f"[bold red]critical abort:[/] {result.abort_reason}")
    if result.research_plan:
        lines.append(f"[bold]research plan:[/] {result.research_plan.recommendation.value}")
    if result.proposal:
        lines.append(
            f"[bold]trader:[/] {result.proposal.action.value}, "
            f"{result.proposal.position_sizing:.1%} of the portfolio"
        )
    lines.append(usage_line(result.usage))
    return Panel("\n".join(lines), title="Pipeline decision", expand=False)


def _show_pipeline(result: PipelineResult) -> Links:
    console.print(_pipeline_summary(result))
    return [("report", result.report.url)]


async def _run_pipeline(settings: Settings, payload: dict[str, Any], workflow_id: str) -> int:
    summary = f"Pipeline {payload['symbol']}"
    return await run_and_show(
        settings, "Pipeline", PipelineResult, payload, workflow_id, summary, _show_pipeline
    )


@run_app.command("pipeline")
def pipeline(
    symbol: str = typer.Argument(..., help="e.g. GOOG (bundled) or a sim ticker"),
    as_of: datetime | None = typer.Option(None, help="analysis time, UTC (default: latest bar)"),
    rounds: int = typer.Option(1, help="bull/bear debate rounds (1-5)"),
    risk_rounds: int = typer.Option(1, help="risk debate rounds (1-5)"),
    analysts: str = typer.Option(all_analysts(), help="comma-separated subset of the analysts"),
    provider: ProviderOption = None,
    budget: BudgetOption = None,
    budget_tokens: BudgetTokensOption = None,
    language: LanguageOption = None,
    estimate_only: EstimateOption = False,
    model: str | None = typer.Option(None, help="quick model (analysts, debaters, trader)"),
    deep_model: str | None = typer.Option(None, help="deep model (the two managers)"),
    macro_context: str | None = typer.Option(None, help="macro summary text for the analysts"),
    macro_key: str | None = typer.Option(
        None, help="a stored Scan summary as BUCKET/KEY (e.g. the key `run scan` prints)"
    ),
) -> None:
    """Run the per-ticker Pipeline for SYMBOL and print the portfolio manager's decision."""
    with fail_on_quantdesk_errors():
        settings = load_settings()
        payload: dict[str, Any] = {
            "symbol": symbol,
            "analysts": [name.strip() for name in analysts.split(",") if name.strip()],
            "debate_rounds": rounds,
            "risk_rounds": risk_rounds,
            "macro_context": macro_context,
            "macro_context_key": _object_ref(macro_key, "--macro-key") if macro_key else None,
            "llm": llm_choice(settings, provider, model=model, deep_model=deep_model),
        }
        payload |= run_terms(budget, budget_tokens, language)
        check_input(PipelineInput, payload, as_of=as_of)
        if estimate_only:
            print_estimate(settings, "Pipeline", payload)
            finish(0)
        workflow_id = new_workflow_id("pipeline", symbol)
        status = asyncio.run(_run_pipeline(settings, payload, workflow_id))
    finish(status)


def _object_ref(text: str, option: str) -> dict[str, str]:
    """``BUCKET/KEY`` or ``s3://BUCKET/KEY`` as an object reference."""
    bucket, _, key = text.removeprefix("s3://").partition("/")
    if not bucket or not key:
        raise typer.BadParameter(f"{text!r} is not BUCKET/KEY", param_hint=option)
    return {"bucket": bucket, "key": key}


async def _rerun(settings: Settings, source_id: str, part: str) -> int:
    """Start ``part`` (Debate or Risk) alone from the saved state of Pipeline ``source_id``."""
    from workers.client import connect

    client: Client = await connect(settings)
    try:
        state = await client.get_workflow_handle(source_id).query(
            "state", result_type=PipelineState
        )
    except RPCError as error:
        console.print(
            f"[bold red]cannot read the state of {source_id}:[/] {error}", highlight=False
        )
        return 1
    if state is None:
        console.print(f"[bold red]{source_id} has no saved state yet[/]")
        return 1
    try:
        child_input = state.debate_input() if part == "Debate" else state.risk_input()
    except ValueError as error:
        console.print(f"[bold red]cannot re-run the {part.lower()}:[/] {error}")
        return 1

    def show(result: DebateResult | RiskResult) -> Links:
        lines = [f"**{t.speaker.value} {t.round}**: {t.argument}" for t in result.transcript]
        if isinstance(result, DebateResult):
            plan = result.research_plan
            lines.append(f"research plan: {plan.recommendation.value}: {plan.rationale}")
        panel = Panel("\n".join(lines), title=f"{part} re-run", expand=False)
        console.print(panel, highlight=False)
        return []

    stamp = datetime.now(UTC).strftime("%Y%m%dT%H%M%S")
    result_type: type[DebateResult | RiskResult] = DebateResult if part == "Debate" else RiskResult
    workflow_id = f"{source_id}-{part.lower()}-rerun-{stamp}"
    summary = f"{part} {state.symbol}, re-run from {source_id}"
    return await run_and_show(
        settings,
        part,
        result_type,
        child_input,
        workflow_id,
        summary,
        show,
        gap=False,
        client=client,
    )


@run_app.command("debate")
def debate(
    source: str = typer.Option(..., "--from", help="workflow id of a finished or failed Pipeline"),
) -> None:
    """Re-run only the bull/bear debate (and research plan) from a Pipeline's saved state."""
    with fail_on_quantdesk_errors():
        status = asyncio.run(_rerun(load_settings(), source, "Debate"))
    finish(status)


@run_app.command("risk")
def risk(
    source: str = typer.Option(..., "--from", help="workflow id of a finished or failed Pipeline"),
) -> None:
    """Re-run only the risk debate from a Pipeline's saved state."""
    with fail_on_quantdesk_errors():
        status = asyncio.run(_rerun(load_settings(), source, "Risk"))
    finish(status)


# --- the Scan ------------------------------------------------------------------------------

CONVICTION_STYLE = {"high": "bold green", "medium": "yellow", "low": "dim"}


def shortlist_table(result: ScanResult) -> Table:
    """The shortlist, one stock a row, best first."""
    table = Table(title=f"Stocks to investigate, scan as of {result.as_of:%Y-%m-%d}")
    for column in ("ticker", "name", "sector", "angle", "conviction", "smart money", "catalyst"):
        table.add_column(column)
    for stock in result.summary.stocks_to_investigate:
        style = CONVICTION_STYLE[stock.conviction.value]
        table.add_row(
            stock.ticker,
            stock.name,
            stock.sector.value,
            stock.thesis_angle.value,
            f"[{style}]{stock.conviction.value}[/]",
            "yes" if stock.smart_money else "",
            stock.key_catalysts[0] if stock.key_catalysts else "",
        )
    sectors = ", ".join(sector.value for sector in result.deep_dive_sectors)
    table.caption = (
        f"timeframe {result.summary.timeframe}; deep dive: {sectors}; LLM calls "
        f"{result.usage.total.calls}, tokens {result.usage.total.total_tokens}"
    )
    return table


def _show_scan(result: ScanResult) -> Links:
    console.print(Panel(result.summary.executive_summary, title="Market scan", expand=False))
    console.print(shortlist_table(result))
    return [("summary", result.summary_markdown.url), ("summary JSON", result.summary_json.url)]


async def _run_scan(settings: Settings, payload: dict[str, Any], workflow_id: str) -> int:
    summary = f"Scan as of {payload.get('as_of') or 'the latest data'}"
    return await run_and_show(
        settings, "Scan", ScanResult, payload, workflow_id, summary, _show_scan
    )


@run_app.command("scan")
def scan(
    as_of: datetime | None = typer.Option(None, help="scan time, UTC (default: latest bar)"),
    max_tickers: int = typer.Option(10, help="most stocks to shortlist (1-25)"),
    provider: ProviderOption = None,
    budget: BudgetOption = None,
    budget_tokens: BudgetTokensOption = None,
    language: LanguageOption = None,
    estimate_only: EstimateOption = False,
    model: str | None = typer.Option(None, help="quick model (the four scanners)"),
    deep_model: str | None = typer.Option(None, help="deep model (deep dive and synthesis)"),
) -> None:
    """Run the market Scan and print its shortlist of stocks to investigate."""
    with fail_on_quantdesk_errors():
        settings = load_settings()
        payload: dict[str, Any] = {
            "max_tickers": max_tickers,
            "llm": llm_choice(settings, provider, model=model, deep_model=deep_model),
        }
        payload |= run_terms(budget, budget_tokens, language)
        check_input(ScanInput, payload, as_of=as_of)
        if estimate_only:
            print_estimate(settings, "Scan", payload)
            finish(0)
        workflow_id = new_workflow_id("scan")
        status = asyncio.run(_run_scan(settings, payload, workflow_id))
    finish(status)


# --- AutoRun: the whole desk --------------------------------------------------------------


def decisions_table(result: AutoRunResult) -> Table:
    """Each analysed ticker's decision, and the ones that failed."""
    table = Table(title=f"AutoRun {result.portfolio} as of {result.as_of:%Y-%m-%d}")
    for column in ("ticker", "rating", "signal", "price target", "summary"):
        table.add_column(column)
    for decision in result.decisions:
        colour = {"BUY": "green", "SELL": "red"}.get(decision.signal.value, "yellow")
        target = f"{decision.price_target:,.2f}" if decision.price_target else ""
        table.add_row(
            decision.symbol,
            decision.rating.value,
            f"[{colour}]{decision.signal.value}[/]",
            target,
            decision.executive_summary[:90],
        )
    for failure in result.failures:
        table.add_row(failure.symbol, "[bold red]failed[/]", "", "", failure.reason[:90])
    total = result.usage.total
    table.caption = (
        f"shortlist {', '.join(result.shortlist) or 'none'}; portfolio {result.portfolio_status}, "
        f"{result.trades} trade(s), {result.refused} refused; LLM calls {total.calls}, "
        f"tokens {total.total_tokens}, ${total.cost_usd:.4f}"
    )
    return table


async def _run_autorun(
    settings: Settings, payload: dict[str, Any], workflow_id: str, out: Path
) -> int:
    from client.reports import download_reports, report_refs

    async def show(result: AutoRunResult) -> Links:
        console.print(decisions_table(result))
        refs = report_refs(result.report.model_dump(mode="json"))
        paths = await asyncio.to_thread(download_reports, settings, refs, out / workflow_id)
        return [("report", str(paths[0].resolve())), ("report (S3)", result.report_url)]

    summary = f"AutoRun {payload['portfolio']}"
    return await run_and_show(
        settings, "AutoRun", AutoRunResult, payload, workflow_id, summary, show
    )


@run_app.command("autorun")
def autorun(
    portfolio: str = typer.Option("desk", help="the book to manage (created if missing)"),
    cash: float = typer.Option(100_000, help="starting cash of a new book"),
    as_of: datetime | None = typer.Option(None, help="analysis time, UTC (default: latest)"),
    watchlist: str | None = typer.Option(None, help="analyse this watchlist's names"),
    symbols: str | None = typer.Option(None, help="analyse these names, e.g. QBTX,LMNW"),
    scan: bool | None = typer.Option(
        None, "--scan/--no-scan", help="add the Scan's shortlist (default: only without names)"
    ),
    max_tickers: int = typer.Option(10, help="most stocks the Scan shortlists (1-25)"),
    min_conviction: str = typer.Option("medium", help="low, medium or high"),
    analysts: str = typer.Option(all_analysts(), help="comma-separated subset of the analysts"),
    rounds: int = typer.Option(1, help="bull/bear debate rounds (1-5)"),
    risk_rounds: int = typer.Option(1, help="risk debate rounds (1-5)"),
    concurrency: int = typer.Option(4, help="Pipelines at once"),
    approval: str = typer.Option("auto", help="auto, or required (wait for quantdesk approve)"),
    reflect: bool = typer.Option(True, help="start one Reflect per decision"),
    provider: ProviderOption = None,
    budget: BudgetOption = None,
    budget_tokens: BudgetTokensOption = None,
    language: LanguageOption = None,
    estimate_only: EstimateOption = False,
    model: str | None = typer.Option(None, help="quick model"),
    deep_model: str | None = typer.Option(None, help="deep model (managers, synthesis)"),
    out: Path = typer.Option(Path("reports"), help="folder the report is downloaded into"),
) -> None:
    """Run the whole desk: Scan (or a watchlist), a Pipeline per candidate, Portfolio, report,
    Reflects."""
    with fail_on_quantdesk_errors():
        settings = load_settings()
        payload: dict[str, Any] = {
            "portfolio": portfolio,
            "initial_cash": cash,
            "max_tickers": max_tickers,
            "min_conviction": min_conviction,
            "analysts": [name.strip() for name in analysts.split(",") if name.strip()],
            "debate_rounds": rounds,
            "risk_rounds": risk_rounds,
            "concurrency": concurrency,
            "approval": approval,
            "reflect": reflect,
            "llm": llm_choice(settings, provider, model=model, deep_model=deep_model),
        }
        payload |= autorun_names(watchlist, symbols, scan)
        payload |= run_terms(budget, budget_tokens, language)
        check_input(AutoRunInput, payload, as_of=as_of)
        if estimate_only:
            print_estimate(settings, "AutoRun", payload)
            finish(0)
        check_autorun_names(settings, payload)
        workflow_id = new_workflow_id("autorun", portfolio)
        status = asyncio.run(_run_autorun(settings, payload, workflow_id, out))
    finish(status)
