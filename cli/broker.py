"""`quantdesk broker ...`: the books bound to a real broker, as people watch and steer them.

Only the broker worker holds Alpaca's keys, so these commands work without them: they
read the SQL book (``status``, ``orders``), append to it (``halt``, ``resume``, an
adoption), and ask the broker through Temporal (``reconcile`` runs the ``Reconcile``
workflow, whose activity runs on the ``broker`` queue). Where the keys are set here too
(``APCA_API_KEY_ID``, ``APCA_API_SECRET_KEY``), ``status`` also reads the account.

Exit status: 0; 1 when something else failed (Temporal away, the run failed); 2 when the
input is wrong (no such book, a paper book, an adoption nobody explains); 3 when
``reconcile`` finds the book and the broker apart.
"""

from __future__ import annotations

import asyncio
import getpass
from collections.abc import Iterator
from contextlib import contextmanager
from datetime import UTC, datetime
from typing import Annotated

import typer
from rich.markup import escape
from rich.table import Table
from rich.text import Text
from temporalio.client import WorkflowFailureError

from activities.broker import Reconciliation
from cli.views import console, print_failure, print_links
from client.links import web_ui_url
from client.process_exit import fail_on_quantdesk_errors, finish
from shared.broker.book import BrokerBook
from shared.broker.intents import OPEN
from shared.broker.models import Adoption, Halt, IntentStatus, OrderIntent, Position
from shared.config import Settings, load_settings
from shared.errors import BrokerError, InvalidInput, QuantdeskError

broker_app = typer.Typer(
    help="Books bound to a real broker (Alpaca): status, orders, reconcile, halt, resume."
)

DRIFT_EXIT = 3
"""``reconcile``'s exit status when the book and the broker differ."""
EXIT_STATUSES: dict[type[QuantdeskError], int] = {InvalidInput: 2}
"""A wrong book or option exits 2, like a usage error; any other failure 1."""
ORDERS_SHOWN = 50


@contextmanager
def _books(settings: Settings) -> Iterator[BrokerBook]:
    books = BrokerBook.from_settings(settings)
    try:
        yield books
    finally:
        books.close()


def alpaca_mode(settings: Settings) -> Text:
    """Paper or LIVE, as this machine's settings say (the broker worker's decide): live
    trading is loud."""
    live = settings.alpaca.live
    return Text(settings.alpaca.trading_mode(), style="bold white on red" if live else "")


def halt_state(halts: list[Halt]) -> str:
    """The book's halt as markup: halted (who, why, since), or trading (and who resumed it)."""
    if not halts:
        return "[green]trading[/] (never halted)"
    last = halts[-1]
    when = f"{last.at:%Y-%m-%d %H:%M} UTC"
    if last.halted:
        return f"[bold red]HALTED[/] since {when} by {escape(last.who)}: {escape(last.reason)}"
    return f"[green]trading[/] (resumed {when} by {escape(last.who)})"


def _book_status(books: BrokerBook, settings: Settings, name: str, now: datetime) -> Table:
    book = books.bound(name)
    limits = settings.broker_limits
    table = Table.grid(padding=(0, 2))
    table.title = f"[bold]{name}[/]"
    table.title_justify = "left"
    table.add_column(style="bold")
    table.add_column()
    today = books.notional_today(name, now)
    table.add_row("broker", Text(f"{book.broker.value} · ").append_text(alpaca_mode(settings)))
    table.add_row("halt", halt_state(books.halts(name)))
    table.add_row("open intents", str(books.intent_count(name, OPEN)))
    table.add_row(
        "today",
        f"{today:,.2f} ordered of {limits.max_daily_notional:,.2f} a day; at most "
        f"{limits.max_order_notional:,.2f} an order",
    )
    table.add_row("allow-list", ", ".join(sorted(limits.symbols)) or "any symbol")
    table.add_row("cash (book)", f"{book.cash:,.2f} {book.currency}")
    return table


def _account_lines(settings: Settings) -> list[str]:
    """The account at the broker, read here when the keys are; else where it is read."""
    if not settings.alpaca.has_keys:
        return [
            "account: read through the `broker` worker, which holds the keys "
            "(`quantdesk broker reconcile BOOK`)"
        ]
    from shared.broker.alpaca_client import AlpacaClient

    try:
        with AlpacaClient(settings.alpaca) as client:
            account, clock = client.account(), client.clock()
    except BrokerError as error:
        return [f"[red]account: cannot read it here: {escape(str(error))}[/]"]
    market = (
        f"open, closes {clock.next_close:%Y-%m-%d %H:%M} UTC"
        if clock.is_open
        else f"closed, opens {clock.next_open:%Y-%m-%d %H:%M} UTC"
    )
    return [
        f"account ({settings.alpaca.url}): cash {account.cash:,.2f} · buying power "
        f"{account.buying_power:,.2f} {account.currency} · status {account.status}",
        f"clock: {clock.timestamp:%Y-%m-%d %H:%M} UTC, market {market}",
    ]


def show_status(settings: Settings, book: str | None) -> None:
    """Print each book bound to a broker (or ``book``): broker, halt, intents, caps; then
    the account."""
    with _books(settings) as books:
        names = [book] if book else [b.name for b in books.bound_books()]
        if not names:
            console.print(
                "no book is bound to a broker: `quantdesk portfolio create NAME --cash N "
                "--broker alpaca` makes one"
            )
            return
        now = datetime.now(UTC)
        for name in names:
            console.print(_book_status(books, settings, name, now), "")
    limits = "the caps are this machine's QUANTDESK_BROKER_LIMITS; the broker worker's apply"
    console.print(*_account_lines(settings), f"[dim]{limits}[/]", sep="\n", highlight=False)


def orders_table(name: str, intents: list[OrderIntent], total: int) -> Table:
    """The intents, newest first, with how many the book has."""
    table = Table(title=f"{name}: order intents", show_edge=False)
    for column in ("client order id", "symbol", "side", "qty", "status", "broker order id"):
        table.add_column(column, overflow="fold")
    for column in ("filled", "avg fill"):
        table.add_column(column, justify="right")
    table.add_column("reason", overflow="fold", max_width=50)
    table.add_column("created")
    for intent in reversed(intents):
        table.add_row(
            intent.client_order_id,
            intent.symbol,
            intent.side.value,
            f"{intent.qty:,}",
            intent.status.value,
            intent.broker_order_id or "-",
            f"{intent.filled_qty:,}",
            f"{intent.avg_fill_price:,.4f}" if intent.avg_fill_price is not None else "-",
            escape(intent.reason or ""),
            f"{intent.created_at:%Y-%m-%d %H:%M:%S}",
        )
    table.caption = f"the latest {len(intents)} of {total}, newest first"
    return table


def show_orders(settings: Settings, book: str, status: IntentStatus | None, limit: int) -> None:
    """Print the book's latest ``limit`` intents (in ``status`` when given)."""
    with _books(settings) as books:
        books.bound(book)
        intents = books.intents(book, status, limit=limit)
        total = books.intent_count(book, status)
    if not intents:
        which = f" {status.value}" if status else ""
        console.print(f"{book} has no{which} order intents yet")
        return
    console.print(orders_table(book, intents, total))


# --- reconcile, and adopting the broker's numbers ---------------------------------------------


def drift_lines(result: Reconciliation) -> list[Table | str]:
    """Where the book and the broker differ, as a table of shares and lines; or "clean"."""
    drift = result.drift
    shown: list[Table | str] = []
    if drift.shares:
        table = Table(title="shares", show_edge=False, title_justify="left")
        for column in ("symbol", "book", "broker", "broker - book"):
            table.add_column(column, justify="left" if column == "symbol" else "right")
        for symbol, book, broker, delta in result.differing_shares():
            table.add_row(symbol, f"{book:,}", f"{broker:,}", f"{delta:+,}")
        shown.append(table)
    if drift.cash:
        shown.append(
            f"cash: book {result.book_cash:,.2f}, broker {result.broker_cash:,.2f} "
            f"(broker - book {drift.cash:+,.2f})"
        )
    if drift.unbooked_fills:
        shown.append(f"fills the broker has and the book lacks: {', '.join(drift.unbooked_fills)}")
    if drift.unknown_fills:
        shown.append(f"fills the book has and the broker lacks: {', '.join(drift.unknown_fills)}")
    at = f"against the broker at {result.at:%Y-%m-%d %H:%M:%S} UTC"
    shown.append(f"[bold green]clean[/] {at}" if drift.clean else f"[bold red]drift[/] {at}")
    return shown


def adoption_lines(adoption: Adoption) -> list[Table | str]:
    """What the adoption did: the book's holdings and cash before and after (the broker's)."""

    def held(positions: list[Position]) -> dict[str, str]:
        return {p.symbol: f"{p.shares:,} @ {p.avg_cost:,.2f}" for p in positions}

    before, after = held(adoption.positions_before), held(adoption.positions_after)
    table = Table(show_edge=False)
    for column in ("", "before (book)", "after (broker)"):
        table.add_column(column)
    for symbol in sorted(before.keys() | after.keys()):
        table.add_row(symbol, before.get(symbol, "-"), after.get(symbol, "-"))
    table.add_row("cash", f"{adoption.cash_before:,.2f}", f"{adoption.cash_after:,.2f}")
    said = (
        f"[bold]adopted[/] the broker's numbers into {adoption.book} as of "
        f"{adoption.as_of:%Y-%m-%d %H:%M:%S} UTC, by {escape(adoption.who)}: "
        f"{escape(adoption.reason)}"
    )
    return [said, table]


async def reconcile_book(
    settings: Settings, book: str, *, adopt: bool = False, who: str = "", reason: str = ""
) -> int:
    """Run ``Reconcile`` for the book on the workflows queue, wait, print the drift; with
    ``adopt`` make the broker's numbers the book's. 0 clean (or adopted), 3 drift, 1 failed."""
    from cli.follow import result_across_outages
    from cli.stack.console import console_link
    from client.inputs import new_workflow_id
    from workers.client import connect
    from workflows.reconcile import ReconcileInput, ReconcileWorkflow

    if adopt and not (who.strip() and reason.strip()):
        raise InvalidInput(
            "--adopt",
            "adopting the broker's numbers needs who chose to and why",
            fix="Add --who NAME --reason TEXT.",
        )
    with _books(settings) as books:
        books.bound(book)
    client = await connect(settings)
    handle = await client.start_workflow(
        ReconcileWorkflow.run,
        ReconcileInput(portfolio=book),
        id=new_workflow_id("reconcile", book),
        task_queue=settings.queues.workflows,
        static_summary=f"Reconcile {book}",
    )
    ui_url = web_ui_url(settings, handle.id, handle.result_run_id)
    console.print(f"started [bold]{handle.id}[/]; the `broker` worker reads the broker")
    try:
        result: Reconciliation = await result_across_outages(handle)
    except WorkflowFailureError as error:
        print_failure(error)
        print_links(("Web UI", ui_url))
        return 1
    for shown in drift_lines(result):
        console.print(shown, highlight=False)
    status = 0 if result.drift.clean else DRIFT_EXIT
    if adopt and not result.drift.clean:
        with _books(settings) as books:
            adoption = books.adopt_broker(
                book,
                result.broker_positions,
                result.broker_cash,
                as_of=result.at,
                who=who,
                reason=reason,
            )
        for shown in adoption_lines(adoption):
            console.print(shown, highlight=False)
        status = 0
    elif adopt:
        console.print("nothing to adopt: the book agrees with the broker")
    elif not result.drift.clean:
        console.print(
            f"to make the broker's numbers the book's: quantdesk broker reconcile {book} "
            "--adopt --who NAME --reason TEXT",
            highlight=False,
        )
    page = await asyncio.to_thread(console_link, settings, handle.id)
    print_links(*([("console", page)] if page else []), ("Web UI", ui_url))
    return status


# --- halt and resume ------------------------------------------------------------------------


def halt_book(settings: Settings, book: str, reason: str, who: str) -> Halt:
    """Record the book's halt and say what it does."""
    with _books(settings) as books:
        books.bound(book)
        halt = books.halt(book, reason, who)
    console.print(
        f"[bold red]halted {book}[/] by {escape(halt.who)}: {escape(halt.reason)}\n"
        "The broker worker cancels its open orders at its next look at them; new orders are "
        f"refused until `quantdesk broker resume {book}`.",
        highlight=False,
    )
    return halt


def resume_book(settings: Settings, book: str, who: str) -> Halt | None:
    """Record the book's resume, if it is halted; what was recorded."""
    with _books(settings) as books:
        books.bound(book)
        if books.halted(book) is None:
            console.print(f"{book} is not halted: nothing to resume")
            return None
        resumed = books.resume(book, who)
    console.print(
        f"[green]resumed {book}[/] by {escape(resumed.who)}: its orders may go again",
        highlight=False,
    )
    return resumed


# --- the commands ------------------------------------------------------------------------


BookArgument = Annotated[str, typer.Argument(help="a book created with --broker alpaca")]
"""The BOOK argument of every command but ``status``."""


@broker_app.command("status")
def status(
    book: str | None = typer.Argument(None, help="one book (default: every book at a broker)"),
) -> None:
    """Each book at a broker: paper or LIVE, halt, open intents, today's notional against
    the caps, the allow-list; the account when Alpaca's keys are set here."""
    with fail_on_quantdesk_errors(EXIT_STATUSES):
        show_status(load_settings(), book)
    finish(0)


@broker_app.command("orders")
def orders(
    book: BookArgument,
    status: IntentStatus | None = typer.Option(None, help="only intents in this status"),
    limit: int = typer.Option(ORDERS_SHOWN, min=1, help="the latest N intents"),
) -> None:
    """The book's order intents, newest first: ids, symbol, side, qty, status, fills, reason."""
    with fail_on_quantdesk_errors(EXIT_STATUSES):
        show_orders(load_settings(), book, status, limit)
    finish(0)


@broker_app.command("reconcile")
def reconcile(
    book: BookArgument,
    adopt: bool = typer.Option(
        False,
        "--adopt",
        help="make the broker's positions and cash the book's (needs --who, --reason)",
    ),
    who: str = typer.Option("", help="who adopts the broker's numbers"),
    reason: str = typer.Option("", help="why"),
) -> None:
    """Compare the book with its broker through the `broker` worker (the Reconcile workflow)
    and print the drift. Exit 0 when clean (or adopted), 3 when they differ, 2 for a wrong
    book or option, 1 when the run failed."""
    with fail_on_quantdesk_errors(EXIT_STATUSES):
        settings = load_settings()
        code = asyncio.run(reconcile_book(settings, book, adopt=adopt, who=who, reason=reason))
    finish(code)


@broker_app.command("halt")
def halt(
    book: BookArgument,
    reason: str = typer.Option(..., help="why: shown wherever the halt is"),
    who: str = typer.Option("", help="who halts it (default: your OS user)"),
) -> None:
    """Stop the book's orders: open ones are canceled, new ones refused, until `resume`."""
    with fail_on_quantdesk_errors(EXIT_STATUSES):
        halt_book(load_settings(), book, reason, who or getpass.getuser())
    finish(0)


@broker_app.command("resume")
def resume(
    book: BookArgument,
    who: str = typer.Option("", help="who resumes it (default: your OS user)"),
) -> None:
    """Let the halted book's orders go again."""
    with fail_on_quantdesk_errors(EXIT_STATUSES):
        resume_book(load_settings(), book, who or getpass.getuser())
    finish(0)
