"""The AutoRun report: what the desk saw, decided and traded in one run, for people.

One typed model (``AutoRunReport``) holds everything; ``render_markdown`` writes
it in the order the run went: the scan and its shortlist, each ticker's decision
with its price chart, the tickers that failed and why, the portfolio's trades,
refusals and risk, and what the run cost. The HTML page is made from this same
Markdown (``shared.reports.html``), with the charts inlined.
"""

from __future__ import annotations

from pydantic import AwareDatetime, BaseModel, Field

from shared.agents.portfolio.inputs import TickerDecision
from shared.agents.portfolio.report import STATUS_WORDS, PortfolioOutcome
from shared.agents.scan.schemas import ScanSummary
from shared.llm.contracts import Usage
from shared.portfolio.risk import Measured


class TickerFailure(BaseModel):
    """A ticker whose Pipeline did not finish: the run went on without it."""

    symbol: str
    reason: str


class AutoRunReport(BaseModel):
    """Everything the run report shows."""

    workflow_id: str
    portfolio: str
    as_of: AwareDatetime
    scan: ScanSummary | None = Field(None, description="None: the run was given its names")
    candidates: list[str] = Field(
        description="the names given, the shortlist at the conviction bar, then holdings"
    )
    decisions: list[TickerDecision]
    report_urls: dict[str, str] = Field(default_factory=dict, description="per ticker")
    charts: dict[str, str] = Field(
        default_factory=dict, description="ticker → the chart's name in the report's folder"
    )
    failures: list[TickerFailure] = Field(default_factory=list)
    portfolio_outcome: PortfolioOutcome | None = None
    portfolio_report_url: str | None = None
    usage: dict[str, Usage] = Field(description="per part of the run: scan, pipelines, portfolio")


def chart_name(symbol: str) -> str:
    """The file name of a ticker's chart next to the report (and its Markdown image src)."""
    safe = "".join(c if c.isalnum() else "_" for c in symbol)
    return f"chart-{safe}.png"


def _measured(value: Measured, fmt: str) -> str:
    return format(value.value, fmt) if value.value is not None else f"n/a ({value.reason})"


def _shortlist(report: AutoRunReport) -> str:
    stocks = report.scan.stocks_to_investigate if report.scan else []
    rows = [
        f"| {s.ticker} | {s.name} | {s.sector.value} | {s.thesis_angle.value} | "
        f"{s.conviction.value} | {'yes' if s.smart_money else ''} |"
        for s in stocks
    ]
    header = (
        "| ticker | name | sector | thesis | conviction | smart money |\n|---|---|---|---|---|---|"
    )
    return "\n".join([header, *rows]) if rows else "The scan shortlisted nothing."


def _decision(report: AutoRunReport, decision: TickerDecision) -> str:
    target = f"{decision.price_target:,.2f}" if decision.price_target else "none"
    lines = [
        f"### {decision.symbol}: {decision.rating.value} ({decision.signal.value})",
        f"Price target {target}. {decision.executive_summary}",
    ]
    if decision.symbol in report.charts:
        lines.append(f"![{decision.symbol} price]({report.charts[decision.symbol]})")
    if decision.symbol in report.report_urls:
        lines.append(f"[Full Pipeline report]({report.report_urls[decision.symbol]})")
    return "\n\n".join(lines)


def _portfolio(outcome: PortfolioOutcome, url: str | None) -> str:
    risk = outcome.risk
    fills = [
        f"| {e.trade.side.value} | {e.trade.symbol} | {e.trade.shares:,} | {e.trade.price:,.2f} | "
        f"{e.trade.fees:,.2f} |"
        for e in outcome.executed
    ]
    trades = (
        "\n".join(["| side | symbol | shares | price | fees |\n|---|---|---|---|---|", *fills])
        if fills
        else "No trades."
    )
    refused = "\n".join(
        f"- {r.side.value} {r.shares:,} {r.symbol}: {r.reason}" for r in outcome.rejected
    )
    snapshot = outcome.snapshot
    parts = [
        f"## Portfolio {outcome.portfolio}",
        f"Decision {STATUS_WORDS[outcome.status]}. {outcome.decision.portfolio_thesis}",
        f"### Trades\n{trades}",
        f"### Refused orders\n{refused or 'none'}",
        "### Risk before the trades\n"
        f"- volatility (annualised): {_measured(risk.annualised_volatility, '.1%')}\n"
        f"- Sharpe: {_measured(risk.sharpe, '.2f')}; Sortino: {_measured(risk.sortino, '.2f')}\n"
        f"- 1-day VaR 95%: {_measured(risk.var_95_1d, '.2%')}\n"
        f"- max drawdown: {_measured(risk.max_drawdown, '.1%')}; beta vs {risk.benchmark}: "
        f"{_measured(risk.beta, '.2f')}",
        f"### The book after\nTotal {snapshot.total_value:,.2f}, cash {snapshot.cash:,.2f}, "
        f"{len(snapshot.positions)} position(s).",
    ]
    if url:
        parts.append(f"[Full portfolio report]({url})")
    return "\n\n".join(parts)


def _cost(usage: dict[str, Usage]) -> str:
    rows = [
        f"| {part} | {u.calls} | {u.total_tokens:,} | ${u.cost_usd:,.4f} |"
        for part, u in usage.items()
    ]
    total = sum(usage.values(), Usage())
    rows.append(f"| **total** | {total.calls} | {total.total_tokens:,} | ${total.cost_usd:,.4f} |")
    unpriced = (
        f"\n\n{total.unpriced_calls} call(s) to unpriced models." if total.unpriced_calls else ""
    )
    return "| part | LLM calls | tokens | cost |\n|---|---|---|---|\n" + "\n".join(rows) + unpriced


def render_markdown(report: AutoRunReport) -> str:
    """The whole run as Markdown, in the order it went."""
    parts = [
        f"# AutoRun {report.portfolio} as of {report.as_of:%Y-%m-%d}",
        f"Run `{report.workflow_id}`. Candidates: {', '.join(report.candidates) or 'none'}.",
        *(
            [f"## Scan\n{report.scan.executive_summary}", f"### Shortlist\n{_shortlist(report)}"]
            if report.scan
            else ["## Scan\nNo scan: the run analysed the names it was given."]
        ),
        "## Decisions",
        *(_decision(report, d) for d in report.decisions),
    ]
    if not report.decisions:
        parts.append("No ticker was analysed.")
    if report.failures:
        parts.append(
            "## Tickers that failed\n"
            + "\n".join(f"- {f.symbol}: {f.reason}" for f in report.failures)
        )
    if report.portfolio_outcome is not None:
        parts.append(_portfolio(report.portfolio_outcome, report.portfolio_report_url))
    parts.append(f"## Cost\n{_cost(report.usage)}")
    return "\n\n".join(parts) + "\n"
