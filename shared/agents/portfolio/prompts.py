"""The Portfolio flow's prompts: pure builders from each agent's spec and typed inputs.

The fork's PM saw no prices and none of the risk it computed. Here every price
is in the prompt next to its holding or candidate, the risk report is rendered
metric by metric (a metric that could not be measured says why), and the PM
reads the limits its orders will be scaled to before it writes them.
"""

from __future__ import annotations

from collections.abc import Iterable, Sequence
from typing import Any

from shared.agents.portfolio.inputs import (
    BookFacts,
    CandidateView,
    HoldingView,
    MacroInputs,
    MicroInputs,
    PmInputs,
    ReviewInputs,
    TickerDecision,
)
from shared.agents.portfolio.schemas import HoldingsReview, MacroSummary, MicroSummary
from shared.agents.portfolio.view import BenchLine, Beyond
from shared.agents.spec import AgentSpec
from shared.llm.contracts import ChatMessage
from shared.portfolio.limits import Limits
from shared.portfolio.market import Quote
from shared.portfolio.risk import Measured, RiskReport

NONE = "none"


def _messages(role: str, book: str, parts: Iterable[str | None]) -> list[ChatMessage]:
    system = (
        f"You are {role} of the paper portfolio {book}. Use only the figures given here; never "
        "invent a price or a metric, and say so where the data is marked simulated."
    )
    body = "\n\n".join(part for part in parts if part)
    return [ChatMessage(role="system", content=system), ChatMessage(role="user", content=body)]


def _heading(title: str, body: str) -> str:
    return f"## {title}\n{body.strip() or NONE}"


def _table(header: Sequence[str], rows: Iterable[Sequence[str]]) -> str:
    lines = ["| " + " | ".join(header) + " |", "|" + "---|" * len(header)]
    lines += ["| " + " | ".join(row) + " |" for row in rows]
    return "\n".join(lines) if len(lines) > 2 else NONE


def render_decision(decision: TickerDecision | None) -> str:
    """A Pipeline decision in a phrase."""
    if decision is None:
        return "no Pipeline decision"
    target = f", target {decision.price_target:.2f}" if decision.price_target else ""
    return f"{decision.rating.value} ({decision.signal.value}){target}"


def render_book(book: BookFacts) -> str:
    """Cash, value and return of the book."""
    return (
        f"As of {book.as_of.isoformat()}: cash {book.cash:,.2f} ({book.cash_weight:.1%}), "
        f"holdings {book.equity:,.2f}, total value {book.total_value:,.2f} {book.currency}, "
        f"return since inception {book.total_return:+.2%}, {book.positions} positions."
    )


def render_limits(limits: Limits, cash_equivalent: str) -> str:
    """The constraints every order is scaled to."""
    return (
        f"- at most {limits.max_positions} positions after the trades\n"
        f"- at most {limits.max_position_weight:.0%} of the total value in one position\n"
        f"- at most {limits.max_sector_weight:.0%} in one GICS sector\n"
        f"- at least {limits.min_cash_weight:.0%} kept in cash; cash above it is swept into "
        f"{cash_equivalent} (a T-bill ETF), which only the sweep trades\n"
        "Orders are filled at the as-of close plus slippage and fees; an order that breaks a "
        "limit is scaled down to fit, one without a price is refused."
    )


def render_holdings(holdings: Sequence[HoldingView]) -> str:
    """The holdings as a table, each with its close, weight, P&L and Pipeline decision."""
    header = ["ticker", "shares", "avg cost", "close", "value", "weight", "P&L", "P&L %"]
    rows = []
    for view in holdings:
        p = view.position
        close = f"{p.price:,.2f}" if p.priced else f"none ({p.price_note})"
        rows.append(
            [
                p.symbol,
                f"{p.shares:,}",
                f"{p.avg_cost:,.2f}",
                close,
                f"{p.value:,.2f}",
                f"{p.weight:.1%}",
                f"{p.unrealized_pnl:+,.2f}",
                f"{p.pnl_pct:+.1%}",
                p.sector.value if p.sector else "-",
                render_decision(view.decision),
            ]
        )
    return _table([*header, "sector", "Pipeline"], rows)


def render_candidates(candidates: Sequence[CandidateView]) -> str:
    """The prioritised candidates, best first, with closes, scores and Pipeline decisions."""
    rows = []
    for view in candidates:
        c = view.candidate
        close = f"{view.quote.price:,.2f}" if isinstance(view.quote, Quote) else "none"
        rows.append(
            [
                c.ticker,
                c.sector.value if c.sector else "-",
                close,
                f"{c.score:g}",
                c.conviction.value,
                c.angle,
                "yes" if c.held else "no",
                render_decision(view.decision),
            ]
        )
    header = ["ticker", "sector", "close", "score", "conviction", "thesis", "held", "Pipeline"]
    return _table(header, rows)


def render_bench(bench: Sequence[BenchLine], beyond: Beyond | None) -> str | None:
    """The candidates below the cut: one line each, then the rest counted (None: no cut)."""
    if not bench and beyond is None:
        return None
    rows = [
        [f"{b.rank}", b.ticker, b.sector, f"{b.score:g}", b.rating.value if b.rating else "none"]
        for b in bench
    ]
    parts = [_table(["rank", "ticker", "sector", "score", "Pipeline"], rows)] if rows else []
    if beyond is not None:
        counted = ", ".join(f"{n} {rating}" for rating, n in beyond.by_rating.items())
        parts.append(
            f"And {beyond.count} more, ranked {beyond.first_rank} to "
            f"{beyond.first_rank + beyond.count - 1} ({counted}): not shown."
        )
    return "\n\n".join(parts)


def _metric(name: str, metric: Measured, pattern: str) -> str:
    if metric.value is None:
        return f"- {name}: not measured ({metric.reason})"
    return f"- {name}: {pattern.format(metric.value)}"


def render_risk(risk: RiskReport) -> str:
    """The risk report, metric by metric."""
    window = f"{risk.start} to {risk.end}" if risk.start else "no window"
    lines = [
        f"{risk.observations} daily returns, {window}; risk-free rate: {risk.risk_free}",
        _metric("mean daily return", risk.mean_daily_return, "{:+.3%}"),
        _metric("annualised volatility", risk.annualised_volatility, "{:.1%}"),
        _metric("Sharpe", risk.sharpe, "{:.2f}"),
        _metric("Sortino", risk.sortino, "{:.2f}"),
        _metric("1-day VaR 95%", risk.var_95_1d, "{:.2%} of the book"),
        _metric("1-day VaR 95% in money", risk.var_95_1d_amount, "{:,.2f}"),
        _metric("max drawdown", risk.max_drawdown, "{:.1%}"),
        _metric(f"beta against {risk.benchmark}", risk.beta, "{:.2f}"),
        _metric("average correlation of holdings", risk.average_correlation, "{:+.2f}"),
        "- sector weights: "
        + (", ".join(f"{s} {w:.1%}" for s, w in risk.sector_weights.items()) or NONE),
    ]
    lines += [f"- note: {note}" for note in risk.notes]
    return "\n".join(lines)


def render_review(review: HoldingsReview) -> str:
    """The reviewer's verdicts."""
    lines = [f"- {v.ticker}: {v.action.value} ({v.reason})" for v in review.verdicts]
    return "\n".join([review.summary, *lines])


def render_macro(macro: MacroSummary) -> str:
    """The macro summary."""
    points = "".join(f"\n- {point}" for point in macro.key_points)
    return f"Stance {macro.stance.value}; {macro.regime}. {macro.summary}{points}"


def render_micro(micro: MicroSummary) -> str:
    """The micro summary."""
    lines = [f"- {v.ticker}: {v.view.value} ({v.note})" for v in micro.views]
    return "\n".join([micro.summary, *lines])


def review_prompt(spec: AgentSpec[ReviewInputs, Any], inputs: ReviewInputs) -> list[ChatMessage]:
    """The holdings reviewer: each holding's close, P&L, weight and fresh Pipeline decision."""
    task = spec.brief.format(cash_equivalent=inputs.book.cash_equivalent)
    return _messages(
        spec.title,
        inputs.book.portfolio,
        [
            _heading("Book", render_book(inputs.book)),
            _heading("Holdings", render_holdings(inputs.holdings)),
            _heading("Limits", render_limits(inputs.book.limits, inputs.book.cash_equivalent)),
            _heading("Task", task),
        ],
    )


def macro_prompt(spec: AgentSpec[MacroInputs, Any], inputs: MacroInputs) -> list[ChatMessage]:
    """The macro summarizer: the Scan's macro picture, themes and risks."""
    scan = inputs.scan
    if scan is None:
        material = "No Scan summary was given for this run."
    else:
        context = scan.macro_context
        themes = "\n".join(
            f"- {t.theme} ({t.conviction.value}, {t.timeframe}): {t.description}"
            for t in scan.key_themes
        )
        material = (
            f"{scan.executive_summary}\n\nEconomic cycle: {context.economic_cycle}\n"
            f"Central bank: {context.central_bank_stance}\nGeopolitical risks: "
            f"{'; '.join(context.geopolitical_risks) or NONE}\n\nThemes:\n{themes}\n\n"
            f"Risk factors: {'; '.join(scan.risk_factors) or NONE}"
        )
    task = spec.brief.format(date=inputs.as_of.date().isoformat())
    return _messages(
        spec.title,
        inputs.portfolio,
        [_heading("Scan summary", material), _heading("Task", task)],
    )


def micro_prompt(spec: AgentSpec[MicroInputs, Any], inputs: MicroInputs) -> list[ChatMessage]:
    """The micro summarizer: holdings and candidates, with their Pipeline decisions."""
    decisions = [
        f"- {d.symbol}: {render_decision(d)}. {d.executive_summary}"
        for d in [v.decision for v in inputs.holdings] + [v.decision for v in inputs.candidates]
        if d is not None
    ]
    return _messages(
        spec.title,
        inputs.portfolio,
        [
            _heading("Holdings", render_holdings(inputs.holdings)),
            _heading("Candidates", render_candidates(inputs.candidates)),
            _heading("Pipeline decisions", "\n".join(decisions)),
            _heading("Task", spec.brief),
        ],
    )


def pm_prompt(spec: AgentSpec[PmInputs, Any], inputs: PmInputs) -> list[ChatMessage]:
    """The book manager: prices, cash, total value, holdings, risk, limits, then decide."""
    book = inputs.book
    task = spec.brief.format(min_cash=f"{book.limits.min_cash_weight:.0%}")
    candidates = [
        f"- {v.candidate.ticker}: " + "; ".join(v.candidate.reasons) for v in inputs.candidates
    ]
    bench = render_bench(inputs.bench, inputs.beyond)
    return _messages(
        spec.title,
        book.portfolio,
        [
            _heading("Book", render_book(book)),
            _heading("Holdings", render_holdings(inputs.holdings)),
            _heading("Candidates, best first", render_candidates(inputs.candidates)),
            _heading("Why the candidates rank so", "\n".join(candidates)),
            bench
            and _heading("Below the cut, one line each (buy only from the list above)", bench),
            _heading("Risk of the book as it stands", render_risk(inputs.risk)),
            _heading("Limits", render_limits(book.limits, book.cash_equivalent)),
            _heading("Holdings review", render_review(inputs.review)),
            _heading("Macro", render_macro(inputs.macro)),
            _heading("Micro", render_micro(inputs.micro)),
            _heading("Task", task),
        ],
    )
