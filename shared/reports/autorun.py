"""The AutoRun report: what the desk saw, decided and traded in one run, for people.

One typed model (``AutoRunReport``) holds everything; ``render_markdown`` writes
a summary first, one row per candidate (rating, signal, conviction, what the portfolio
did with it, and whether its Pipeline finished), because at a hundred names that table
is what a person reads; then the scan and its shortlist, the portfolio's trades,
refusals and risk, what the run cost, and last each ticker's detail (its decision,
price chart and Pipeline report), linked from its row. The HTML page is made from this
same Markdown (``shared.reports.html``): the summary sorts by a click on a header, and
the charts stay files beside the page, loaded as they are scrolled to.
"""

from __future__ import annotations

from pydantic import AwareDatetime, BaseModel, Field

from shared.agents.portfolio.inputs import TickerDecision
from shared.agents.portfolio.report import STATUS_WORDS, PortfolioOutcome
from shared.agents.scan.schemas import ScanSummary
from shared.llm.contracts import Usage
from shared.portfolio.risk import Measured
from shared.reports.html import table_cell

SUMMARY_ANCHOR = "summary"


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


def ticker_anchor(symbol: str) -> str:
    """The id of a ticker's detail heading, the target of its summary row's link."""
    return "t-" + "".join(c if c.isalnum() else "_" for c in symbol)


def _actions(outcome: PortfolioOutcome | None) -> dict[str, str]:
    """What the portfolio did with each ticker it named: traded, refused, held or passed over."""
    if outcome is None:
        return {}
    actions = {c.ticker: "passed over" for c in outcome.candidates.dropped}
    actions |= {str(ticker): "hold" for ticker in outcome.decision.holds}
    for refused in outcome.rejected:
        actions[refused.symbol] = f"{refused.side.value} {refused.shares:,} refused"
    for executed in outcome.executed:
        trade = executed.trade
        actions[trade.symbol] = f"{trade.side.value} {trade.shares:,} @ {trade.price:,.2f}"
    return actions


def _summary(report: AutoRunReport) -> str:
    """One row per candidate, failed ones included, in the order they were chosen."""
    decided = {d.symbol: d for d in report.decisions}
    failed = {f.symbol: f.reason for f in report.failures}
    scanned = report.scan.stocks_to_investigate if report.scan else []
    conviction = {s.ticker: s.conviction.value for s in scanned}
    actions = _actions(report.portfolio_outcome)
    symbols = list(dict.fromkeys([*report.candidates, *decided, *failed]))
    rows = []
    for symbol in symbols:
        decision = decided.get(symbol)
        if decision is not None:
            ticker = f"[{symbol}](#{ticker_anchor(symbol)})"
            rating, signal, status = decision.rating.value, decision.signal.value, "analysed"
        else:
            ticker, rating, signal = symbol, "", ""
            status = f"failed: {failed[symbol]}" if symbol in failed else "not analysed"
        action = actions.get(symbol, "no trade" if report.portfolio_outcome else "")
        cells = [ticker, rating, signal, conviction.get(symbol, ""), action]
        rows.append("| " + " | ".join([*cells, table_cell(status)]) + " |")
    header = (
        "| ticker | rating | signal | conviction | portfolio | status |\n|---|---|---|---|---|---|"
    )
    return "\n".join([header, *rows]) if rows else "No candidates."


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
        f"### {decision.symbol}: {decision.rating.value} ({decision.signal.value}) "
        f"{{#{ticker_anchor(decision.symbol)}}}",
        f"Price target {target}. {decision.executive_summary}",
    ]
    if decision.symbol in report.charts:
        lines.append(f"![{decision.symbol} price]({report.charts[decision.symbol]})")
    links = [f"[back to the summary](#{SUMMARY_ANCHOR})"]
    if decision.symbol in report.report_urls:
        links.insert(0, f"[Full Pipeline report]({report.report_urls[decision.symbol]})")
    lines.append(" · ".join(links))
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
    """The whole run as Markdown: the summary, the run's parts, then each ticker's detail."""
    parts = [
        f"# AutoRun {report.portfolio} as of {report.as_of:%Y-%m-%d}",
        f"Run `{report.workflow_id}`: {len(report.candidates)} candidate(s), "
        f"{len(report.decisions)} decided, {len(report.failures)} failed.",
        f"## Summary {{#{SUMMARY_ANCHOR}}}\n{_summary(report)}",
        *(
            [f"## Scan\n{report.scan.executive_summary}", f"### Shortlist\n{_shortlist(report)}"]
            if report.scan
            else ["## Scan\nNo scan: the run analysed the names it was given."]
        ),
    ]
    if report.portfolio_outcome is not None:
        parts.append(_portfolio(report.portfolio_outcome, report.portfolio_report_url))
    parts.append(f"## Cost\n{_cost(report.usage)}")
    parts.append("## Decisions")
    parts.extend(_decision(report, d) for d in report.decisions)
    if not report.decisions:
        parts.append("No ticker was analysed.")
    return "\n\n".join(parts) + "\n"
