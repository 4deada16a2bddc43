"""`quantdesk portfolio ...`: create, inspect and run books; `approve` / `reject` a run.

A book is bound to its broker when it is created (``--broker``: paper, filled at the
as-of closes, or alpaca; `quantdesk broker ...` watches and steers those). The book
commands read the database and the data layer directly (no stack
needed); `show` values the holdings at the closes as of ``--as-of``, by default
the book's own paper clock: the as-of time of its latest trade or snapshot.
`portfolio run` starts the ``Portfolio`` workflow; `approve ID` / `reject ID`
show a waiting run's plan and answer it.
"""

from __future__ import annotations

import asyncio
from datetime import UTC, datetime
from decimal import Decimal, InvalidOperation
from typing import Any

import typer
from rich.console import Console
from rich.table import Table

from cli.inputs import (
    BudgetOption,
    BudgetTokensOption,
    EstimateOption,
    LanguageOption,
    ProviderOption,
)
from client.inputs import run_terms
from client.process_exit import fail_on_quantdesk_errors, finish
from shared.config import Settings, load_settings
from shared.errors import InvalidInput
from shared.portfolio.models import BrokerKind, Portfolio
from shared.portfolio.store import PortfolioStore

portfolio_app = typer.Typer(
    help="Portfolios (paper, or bound to a broker): create, list, show, trades, snapshots."
)
console = Console()


def _store(settings: Settings) -> PortfolioStore:
    return PortfolioStore.from_settings(settings)


def _aware(as_of: datetime | None) -> datetime | None:
    if as_of is None:
        return None
    return as_of if as_of.tzinfo else as_of.replace(tzinfo=UTC)


def _signed(value: Decimal | float, pattern: str = "{:+,.2f}") -> str:
    colour = "green" if value > 0 else "red" if value < 0 else "white"
    return f"[{colour}]{pattern.format(value)}[/]"


def create_book(
    settings: Settings, name: str, cash: str, *, currency: str = "USD", broker: BrokerKind
) -> Portfolio:
    """Create the book, bound to ``broker`` for good, and say so; a book at Alpaca also says
    paper or (loudly) LIVE."""
    try:
        amount = Decimal(cash.replace(",", "").replace("_", ""))
    except InvalidOperation:
        raise InvalidInput("cash", f"{cash!r} is not a number", fix="Use e.g. 100000.") from None
    created = _store(settings).create(name, amount, currency=currency.upper(), broker=broker)
    console.print(
        f"created [bold]{created.name}[/] with {created.cash:,.2f} {created.currency}, "
        f"trading at the {created.broker.value} broker"
    )
    if created.broker is not BrokerKind.PAPER:
        from cli.broker import alpaca_mode

        console.print(alpaca_mode(settings), highlight=False)
    return created


def books_table(books: list[Portfolio]) -> Table:
    """Every book with its broker and cash."""
    table = Table(title="Portfolios", show_edge=False)
    for column in ("name", "broker", "cash", "initial cash", "currency", "created"):
        table.add_column(column)
    for book in books:
        table.add_row(
            book.name,
            book.broker.value,
            f"{book.cash:,.2f}",
            f"{book.initial_cash:,.2f}",
            book.currency,
            book.created_at.strftime("%Y-%m-%d %H:%M"),
        )
    return table


@portfolio_app.command("create")
def create(
    name: str = typer.Argument(..., help="letters, digits, _ . - (up to 64)"),
    cash: str = typer.Option(..., help="starting cash, e.g. 100000"),
    currency: str = typer.Option("USD", help="ISO currency code"),
    broker: BrokerKind = typer.Option(
        BrokerKind.PAPER,
        help="where its orders go, for good: paper (filled at the closes) or alpaca",
    ),
) -> None:
    """Create the book NAME holding CASH, bound to its broker for good."""
    with fail_on_quantdesk_errors():
        create_book(load_settings(), name, cash, currency=currency, broker=broker)
    finish(0)


@portfolio_app.command("list")
def list_books() -> None:
    """Every book with its broker and cash."""
    with fail_on_quantdesk_errors():
        books = _store(load_settings()).portfolios()
        console.print(books_table(books) if books else "no portfolios yet")
    finish(0)


@portfolio_app.command("show")
def show(
    name: str = typer.Argument(...),
    as_of: datetime | None = typer.Option(
        None, help="value at the closes as of this time, UTC (default: the book's latest trade)"
    ),
) -> None:
    """The holdings of NAME with price, value, weight, P&L and sector."""
    from shared.data.factory import build_router
    from shared.portfolio.market import MarketReader
    from shared.portfolio.valuation import value_book

    with fail_on_quantdesk_errors():
        settings = load_settings()
        store = _store(settings)
        book = store.get(name)
        when = _aware(as_of) or store.last_activity(name) or datetime.now(UTC)
        held = store.holdings(name)
        reader = MarketReader(build_router(settings), when)
        valuation = value_book(book, held, reader.quotes(h.symbol for h in held), when)
        title = f"{name} ({book.broker.value} broker) as of {when.isoformat()}"
        table = Table(title=title, show_edge=False)
        for column in ("symbol", "shares", "avg cost", "price", "value", "weight", "P&L"):
            table.add_column(column, justify="right" if column != "symbol" else "left")
        table.add_column("P&L %", justify="right")
        table.add_column("sector")
        for p in valuation.positions:
            table.add_row(
                p.symbol,
                f"{p.shares:,}",
                f"{p.avg_cost:,.2f}",
                f"{p.price:,.2f}" + ("" if p.priced else "*"),
                f"{p.value:,.2f}",
                f"{p.weight:.1%}",
                _signed(p.unrealized_pnl),
                _signed(p.pnl_pct, "{:+.1%}"),
                p.sector.value if p.sector else "-",
            )
        table.caption = (
            f"cash {valuation.cash:,.2f} ({valuation.cash_weight:.1%}) · equity "
            f"{valuation.equity:,.2f} · total {valuation.total_value:,.2f} {book.currency} · "
            f"return {valuation.total_return:+.2%}"
        )
        console.print(table)
        for p in valuation.positions:
            if not p.priced:
                console.print(f"* {p.symbol} {p.price_note}", highlight=False)
    finish(0)


@portfolio_app.command("trades")
def trades(
    name: str = typer.Argument(...),
    limit: int = typer.Option(50, min=1, help="the latest N trades"),
) -> None:
    """The trades of NAME, oldest first."""
    with fail_on_quantdesk_errors():
        booked = _store(load_settings()).trades(name, limit=limit)
        table = Table(title=f"{name}: trades", show_edge=False)
        for column in ("as of", "side", "symbol", "shares", "price", "value", "fees"):
            table.add_column(column)
        table.add_column("realized P&L")
        table.add_column("rationale", overflow="fold", max_width=60)
        for t in booked:
            table.add_row(
                t.executed_at.strftime("%Y-%m-%d"),
                t.side.value,
                t.symbol,
                f"{t.shares:,}",
                f"{t.price:,.4f}",
                f"{t.value:,.2f}",
                f"{t.fees:,.2f}",
                _signed(t.realized_pnl) if t.realized_pnl is not None else "",
                t.rationale,
            )
        console.print(table if booked else f"{name} has no trades yet")
    finish(0)


@portfolio_app.command("snapshots")
def snapshots(
    name: str = typer.Argument(...),
    limit: int = typer.Option(50, min=1, help="the latest N snapshots"),
) -> None:
    """The recorded snapshots of NAME, in time order."""
    with fail_on_quantdesk_errors():
        taken = _store(load_settings()).snapshots(name, limit=limit)
        table = Table(title=f"{name}: snapshots", show_edge=False)
        for column in ("as of", "total value", "cash", "equity", "positions", "run"):
            table.add_column(column)
        for s in taken:
            table.add_row(
                s.as_of.strftime("%Y-%m-%d %H:%M"),
                f"{s.total_value:,.2f}",
                f"{s.cash:,.2f}",
                f"{s.equity:,.2f}",
                str(len(s.positions)),
                s.key,
            )
        console.print(table if taken else f"{name} has no snapshots yet")
    finish(0)


# --- a Portfolio run, and its approval ----------------------------------------------------------


def _plan_table(pending: Any) -> Table:
    """The orders an approver is asked about."""
    table = Table(title=f"{pending.portfolio}: plan", show_edge=False)
    for column in ("#", "side", "symbol", "shares", "fill ~", "cash", "origin", "adjusted"):
        table.add_column(column)
    for o in pending.plan.orders:
        table.add_row(
            str(o.index),
            o.side.value,
            o.symbol,
            f"{o.shares:,}",
            f"{o.fill_price:,.2f}",
            f"{o.est_cash_change:+,.2f}",
            o.origin.value,
            "; ".join(o.adjustments),
        )
    projected = pending.plan.projected
    table.caption = (
        f"after: cash {projected.cash:,.2f} ({projected.cash_weight:.1%}), "
        f"{projected.positions} positions; refused: {len(pending.plan.rejected)}"
    )
    return table


async def _answer(settings: Settings, workflow_id: str, update: str, by: str, note: str) -> None:
    """Show the waiting plan, then send the ``approve`` or ``reject`` update bound to the hash of
    the plan shown (``client.books``): a plan that changed since is refused, not answered."""
    from client.books import answer_plan, waiting_plan
    from client.desk import Desk
    from workflows.portfolio import ApprovalRequest

    desk = Desk(settings)
    target, pending = await waiting_plan(desk, workflow_id, plan_hash=None)
    console.print(_plan_table(pending))
    asked = ApprovalRequest(by=by, note=note, plan_hash=pending.digest())
    answer = await answer_plan(desk, target, update, asked)
    console.print(f"{target}: {answer.message}", highlight=False)


def register(app: typer.Typer) -> None:
    """Add ``approve`` and ``reject`` to the ``quantdesk`` command."""

    @app.command("approve")
    def approve(
        workflow_id: str = typer.Argument(..., help="a Portfolio run waiting for approval"),
        by: str = typer.Option("", help="who approves"),
        note: str = typer.Option("", help="why"),
    ) -> None:
        """Approve a waiting Portfolio run's plan: it trades."""
        with fail_on_quantdesk_errors():
            asyncio.run(_answer(load_settings(), workflow_id, "approve", by, note))
        finish(0)

    @app.command("reject")
    def reject(
        workflow_id: str = typer.Argument(..., help="a Portfolio run waiting for approval"),
        by: str = typer.Option("", help="who rejects"),
        note: str = typer.Option("", help="why"),
    ) -> None:
        """Reject a waiting Portfolio run's plan: nothing trades."""
        with fail_on_quantdesk_errors():
            asyncio.run(_answer(load_settings(), workflow_id, "reject", by, note))
        finish(0)


async def _run_portfolio(settings: Settings, payload: dict[str, Any], workflow_id: str) -> int:
    from cli.follow import Links, run_and_show
    from workflows.portfolio import PortfolioProgress, PortfolioResult

    def show(result: PortfolioResult) -> Links:
        console.print(
            f"[bold]{result.portfolio}[/]: {result.status.value}; {len(result.executed)} trades, "
            f"{len(result.rejected)} refused; total after {result.snapshot.total_value:,.2f}",
            highlight=False,
        )
        for refused in result.rejected:
            console.print(f"  refused {refused.side.value} {refused.symbol}: {refused.reason}")
        return [("report", result.report.url)]

    summary = f"Portfolio {payload['portfolio']}"
    return await run_and_show(
        settings,
        "Portfolio",
        PortfolioResult,
        payload,
        workflow_id,
        summary,
        show,
        gap=False,
        progress_type=PortfolioProgress,
    )


@portfolio_app.command("run")
def run(
    name: str = typer.Argument(..., help="the book to manage"),
    as_of: datetime = typer.Option(..., help="prices, risk and fills as of this time, UTC"),
    scan_summary: str | None = typer.Option(None, help="BUCKET/KEY of a Scan's summary JSON"),
    approval: str = typer.Option("auto", help="auto, or required (then `quantdesk approve ID`)"),
    provider: ProviderOption = None,
    budget: BudgetOption = None,
    budget_tokens: BudgetTokensOption = None,
    language: LanguageOption = None,
    estimate_only: EstimateOption = False,
    model: str | None = typer.Option(None, help="quick model (reviewer, summaries)"),
    deep_model: str | None = typer.Option(None, help="deep model (the book manager)"),
) -> None:
    """Run the Portfolio workflow for NAME and print what it traded."""
    from cli.inputs import print_estimate
    from cli.run import _object_ref
    from client.inputs import check_input, llm_choice, new_workflow_id
    from workflows.portfolio import PortfolioInput

    with fail_on_quantdesk_errors():
        settings = load_settings()
        payload: dict[str, Any] = {
            "portfolio": name,
            "approval": approval,
            "llm": llm_choice(settings, provider, model=model, deep_model=deep_model),
        }
        if scan_summary:
            payload["scan_summary"] = _object_ref(scan_summary, "--scan-summary")
        payload |= run_terms(budget, budget_tokens, language)
        check_input(PortfolioInput, payload, as_of=as_of)
        if estimate_only:
            print_estimate(settings, "Portfolio", payload)
            finish(0)
        workflow_id = new_workflow_id("portfolio", name)
        status = asyncio.run(_run_portfolio(settings, payload, workflow_id))
    finish(status)
