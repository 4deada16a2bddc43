"""The fundamentals analyst: its spec, and its offline rules over ratios, statements and
insider trades."""

from __future__ import annotations

from collections.abc import Callable

from shared.agents.pipeline.analyst import Desk, analyst_spec
from shared.agents.pipeline.evidence import INF, Bands, Evidence, amount, banded, sign_of, signed
from shared.agents.pipeline.facts import Payloads, records
from shared.agents.pipeline.news_analyst import (
    catastrophic_events,
    event_evidence,
    news_items,
)
from shared.data.contracts import (
    Fundamentals,
    InsiderTransaction,
    Statement,
)
from shared.tools.catalog import FUNDAMENTALS_TOOLS

PE_BANDS: Bands[tuple[float, str]] = (
    (0.0, (-1.0, "negative: the company loses money")),
    (15.0, (1.0, "cheap")),
    (25.0, (0.4, "moderate")),
    (40.0, (-0.3, "rich")),
    (INF, (-0.8, "expensive")),
)
LEVERAGE_BANDS: Bands[tuple[float, str]] = (
    (0.0, (-1.0, "negative: equity is below zero")),
    (0.5, (0.6, "low leverage")),
    (1.5, (0.0, "moderate leverage")),
    (3.0, (-0.5, "high leverage")),
    (INF, (-1.0, "very high leverage")),
)
GROWTH_BANDS: Bands[tuple[float, str]] = (
    (-0.05, (-1.0, "shrinking")),
    (0.05, (0.0, "flat")),
    (INF, (1.0, "growing")),
)
MARGIN_BANDS: Bands[tuple[float, str]] = (
    (0.0, (-1.0, "loss-making")),
    (0.05, (-0.2, "thin")),
    (0.15, (0.3, "healthy")),
    (INF, (0.8, "high")),
)
YEAR_AGO = 4
"""Quarters back to the same quarter of the previous year."""


def statements(found: Payloads, tool: str) -> list[Statement]:
    """The tool's statements, newest first (as the tools return them)."""
    return sorted(records(found.get(tool, []), Statement), key=lambda s: s.period_end, reverse=True)


def _ratio(
    value: float | None, bands: Bands[tuple[float, str]], label: str, weight: float
) -> list[Evidence]:
    if value is None:
        return []
    vote, meaning = banded(value, bands)
    return [Evidence(vote, weight, f"{label} {value:.2f}: {meaning}")]


def _ratios(found: Payloads) -> list[Evidence]:
    evidence = []
    for profile in records(found.get("get_fundamentals"), Fundamentals)[:1]:
        evidence += _ratio(profile.pe_ratio, PE_BANDS, "P/E", 1.5)
        evidence += _ratio(profile.debt_to_equity, LEVERAGE_BANDS, "debt/equity", 1.0)
    return evidence


def _income(found: Payloads) -> list[Evidence]:
    income = [s for s in statements(found, "get_income_statement") if "revenue" in s.items]
    if not income:
        return []
    latest = income[0]
    base = income[min(YEAR_AGO, len(income) - 1)]
    evidence = []
    if base is not latest and base.items["revenue"] > 0:
        growth = latest.items["revenue"] / base.items["revenue"] - 1
        vote, meaning = banded(growth, GROWTH_BANDS)
        evidence.append(
            Evidence(
                vote,
                1.5,
                f"revenue {amount(latest.items['revenue'])} in {latest.fiscal_period} vs "
                f"{amount(base.items['revenue'])} in {base.fiscal_period}: {signed(growth)} "
                f"({meaning})",
            )
        )
    net = latest.items.get("net_income")
    if net is not None and latest.items["revenue"] > 0:
        margin = net / latest.items["revenue"]
        vote, meaning = banded(margin, MARGIN_BANDS)
        evidence.append(
            Evidence(vote, 1.0, f"net margin {margin:.1%} in {latest.fiscal_period} ({meaning})")
        )
    return evidence


def _balance(found: Payloads) -> list[Evidence]:
    evidence = []
    for sheet in statements(found, "get_balance_sheet")[:1]:
        equity, cash, debt = (sheet.items.get(k) for k in ("total_equity", "cash", "total_debt"))
        if equity is not None and equity < 0:
            evidence.append(
                Evidence(
                    -1.0,
                    2.0,
                    f"shareholders' equity is negative ({amount(equity)}) in {sheet.fiscal_period}",
                )
            )
        if cash is not None and debt is not None:
            covered = cash >= debt
            evidence.append(
                Evidence(
                    0.3 if covered else -0.3,
                    0.5,
                    f"cash {amount(cash)} {'covers' if covered else 'falls short of'} debt "
                    f"{amount(debt)} in {sheet.fiscal_period}",
                )
            )
    return evidence


def _cash_flow(found: Payloads) -> list[Evidence]:
    return [
        Evidence(
            sign_of(flow.items["free_cash_flow"]),
            1.0,
            f"free cash flow {amount(flow.items['free_cash_flow'])} in {flow.fiscal_period}",
        )
        for flow in statements(found, "get_cash_flow")[:1]
        if "free_cash_flow" in flow.items
    ]


def _insiders(found: Payloads) -> list[Evidence]:
    trades = records(found.get("get_insider_transactions", []), InsiderTransaction)
    if not trades:
        return []
    bought = sum(t.value for t in trades if t.side.lower() == "buy")
    sold = sum(t.value for t in trades if t.side.lower() == "sell")
    return [
        Evidence(
            0.5 * sign_of(bought - sold),
            0.5,
            f"insiders bought {amount(bought)} and sold {amount(sold)} in {len(trades)} filed trades",
        )
    ]


FUNDAMENTAL_RULES: tuple[Callable[[Payloads], list[Evidence]], ...] = (
    _ratios,
    _income,
    _balance,
    _cash_flow,
    _insiders,
)


def fundamentals_evidence(found: Payloads) -> list[Evidence]:
    """Valuation, leverage, growth, margins, cash and insiders, then any corporate catastrophe."""
    evidence = [e for rule in FUNDAMENTAL_RULES for e in rule(found)]
    return event_evidence(news_items(found, "get_company_news")) + evidence


def negative_equity(found: Payloads) -> str | None:
    """Abort rule: the latest balance sheet shows equity below zero."""
    for sheet in statements(found, "get_balance_sheet")[:1]:
        equity = sheet.items.get("total_equity")
        if equity is not None and equity < 0:
            return f"negative shareholders' equity of {amount(equity)} in {sheet.fiscal_period}"
    return None


def corporate_catastrophe(found: Payloads) -> str | None:
    """Abort rule: the company's own news reports a bankruptcy, delisting, fraud or halt."""
    events = catastrophic_events(news_items(found, "get_company_news"))
    if not events:
        return None
    event, item = events[0]
    return f'company news reports a {event} on {item.published_at:%Y-%m-%d}: "{item.title}"'


SPEC = analyst_spec(
    "fundamentals",
    title="the fundamentals analyst",
    focus="Read the company's ratios (P/E, price/book, debt/equity), its last statements (revenue "
    "growth, margins, free cash flow, equity) and insider trades; use only periods reported "
    "before the analysis time. Check the company news for corporate events.",
    # Bankruptcy, delisting, fraud and halts, which decide a critical abort, are news first.
    tools=(*FUNDAMENTALS_TOOLS, "get_company_news"),
    heading="Fundamentals analyst report",
    desk=Desk(fundamentals_evidence, aborts=(negative_equity, corporate_catastrophe)),
    may_abort=True,
)
