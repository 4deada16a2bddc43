"""`quantdesk budget`: what a run or a book spent against its limit, and raising the limit
(``shared.spending``). A raise resumes the runs waiting on it."""

from __future__ import annotations

import asyncio

import typer
from rich.console import Console

from client.process_exit import fail_on_quantdesk_errors, finish
from client.spending import Raised, raise_book_limit, raise_run_limit, root_of
from shared.config import Settings, load_settings
from shared.errors import InvalidInput
from shared.spending.ledger import SpendLedger, Standing

budget_app = typer.Typer(help="Spending limits: what runs and books spent, and raising them.")
console = Console()


def standing_line(standing: Standing) -> str:
    """``$3.95 of $4.00, 120,400 tokens (no token limit)``."""
    spent, limit = standing.spent, standing.limit
    usd = f"${spent.usd:,.2f}" + (f" of ${limit.usd:,.2f}" if limit.usd is not None else "")
    tokens = f"{spent.tokens:,} tokens" + (
        f" of {limit.tokens:,}" if limit.tokens is not None else ""
    )
    return f"{usd}, {tokens}"


def _one_of(run: str | None, book: str | None) -> None:
    if (run is None) == (book is None):
        raise InvalidInput("RUN", "name a run or a book (--book), one of them")


async def _raise(
    settings: Settings, run: str | None, book: str | None, usd: float | None, tokens: int | None
) -> Raised:
    from workers.client import connect

    client = await connect(settings)
    if book is not None:
        return await raise_book_limit(client, settings, book, usd, tokens)
    assert run is not None
    return await raise_run_limit(client, settings, run, usd, tokens)


@budget_app.command("raise")
def raise_(
    run: str | None = typer.Argument(None, help="the run (or any run of its tree)"),
    book: str | None = typer.Option(None, help="raise this book's daily limit instead"),
    to: float | None = typer.Option(None, "--to", help="the new limit in USD"),
    tokens: int | None = typer.Option(None, help="the new token limit"),
) -> None:
    """Raise a run's limit (its whole tree's) or a book's daily one, and resume what waits."""
    with fail_on_quantdesk_errors():
        _one_of(run, book)
        settings = load_settings()
        raised = asyncio.run(_raise(settings, run, book, to, tokens))
        console.print(f"{raised.scope}: {standing_line(raised.standing)}", highlight=False)
        told = ", ".join(raised.resumed) or "none was running"
        console.print(f"resumed: {told}", highlight=False)
    finish(0)


async def _root(settings: Settings, run: str) -> str:
    from workers.client import connect

    return await root_of(await connect(settings), run)


@budget_app.command("show")
def show(
    run: str | None = typer.Argument(None, help="the run (or any run of its tree)"),
    book: str | None = typer.Option(None, help="this book's spending today (UTC) instead"),
) -> None:
    """What a run's tree, or a book today, spent against its limit."""
    with fail_on_quantdesk_errors():
        _one_of(run, book)
        settings = load_settings()
        ledger = SpendLedger.from_settings(settings)
        if book is not None:
            line = (
                f"book {book} today: {standing_line(ledger.book_standing(book, settings.budget))}"
            )
        else:
            assert run is not None
            root = asyncio.run(_root(settings, run))
            line = f"run {root}: {standing_line(ledger.run_standing(root))}"
        console.print(line, highlight=False)
    finish(0)
