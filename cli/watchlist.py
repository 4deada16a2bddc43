"""`quantdesk watchlist ...`: named lists of symbols an AutoRun analyses (`--watchlist NAME`).

The commands read the database and the data layer directly (no stack needed). Symbols
come as arguments (spaces or commas) or from ``--csv FILE`` (a ``symbol`` column, or one
per line); each is checked against the data before anything is written, and every
unknown one is named.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

import typer
from rich.console import Console
from rich.table import Table

from client.process_exit import fail_on_quantdesk_errors, finish
from shared.config import Settings, load_settings
from shared.errors import InvalidInput
from shared.watchlists.csv_file import read_symbols
from shared.watchlists.edits import WatchlistEdits
from shared.watchlists.store import Watchlist
from shared.watchlists.symbols import split_symbols

watchlist_app = typer.Typer(help="Watchlists: the names an AutoRun follows (--watchlist NAME).")
console = Console()

SymbolsArgument = typer.Argument(None, help="symbols, separated by spaces or commas")
CsvOption = typer.Option(None, "--csv", help="a CSV with a `symbol` column, or one per line")


def given_symbols(symbols: list[str] | None, csv: Path | None) -> list[str]:
    """The symbols of the arguments, then of the CSV file; neither given is refused."""
    listed = split_symbols(symbols or [])
    if csv is not None:
        listed += read_symbols(csv)
    if not listed and csv is None:
        raise InvalidInput("symbols", "none given", fix="Name symbols, or give --csv FILE.")
    return listed


def autorun_names(watchlist: str | None, symbols: str | None, scan: bool | None) -> dict[str, Any]:
    """The AutoRun input keys of `run autorun --watchlist/--symbols/--scan`, only those given
    (a run started without them is the run it always was)."""
    given: dict[str, Any] = {"watchlist": watchlist, "scan": scan}
    if symbols is not None:
        given["symbols"] = split_symbols([symbols])
    return {key: value for key, value in given.items() if value is not None}


def watchlist_table(watchlist: Watchlist) -> Table:
    """The watchlist's symbols in order."""
    table = Table(title=f"Watchlist {watchlist.name}", show_edge=False)
    table.add_column("#", justify="right")
    table.add_column("symbol")
    for index, symbol in enumerate(watchlist.symbols, start=1):
        table.add_row(str(index), symbol)
    table.caption = (
        f"{len(watchlist.symbols)} symbol(s), updated {watchlist.updated_at:%Y-%m-%d %H:%M}"
    )
    return table


def create_watchlist(settings: Settings, name: str, symbols: list[str]) -> Watchlist:
    """Create the watchlist from known symbols, and say so."""
    created = WatchlistEdits(settings).create(name, symbols)
    console.print(
        f"created watchlist [bold]{created.name}[/] with {len(created.symbols)} symbol(s)"
    )
    return created


def add_to_watchlist(settings: Settings, name: str, symbols: list[str]) -> Watchlist:
    """Append known symbols to the watchlist, and say so."""
    changed = WatchlistEdits(settings).add(name, symbols)
    console.print(f"{changed.name} now follows {len(changed.symbols)} symbol(s)")
    return changed


def remove_from_watchlist(settings: Settings, name: str, symbols: list[str]) -> Watchlist:
    """Remove symbols from the watchlist (known to the data or not: a delisted name goes)."""
    changed = WatchlistEdits(settings).remove(name, symbols)
    console.print(f"{changed.name} now follows {len(changed.symbols)} symbol(s)")
    return changed


def show_watchlist(settings: Settings, name: str) -> Watchlist:
    """Print the watchlist's symbols."""
    watchlist = WatchlistEdits(settings).store.get(name)
    console.print(watchlist_table(watchlist))
    return watchlist


def delete_watchlist(settings: Settings, name: str) -> None:
    """Delete the watchlist, and say so."""
    WatchlistEdits(settings).store.delete(name)
    console.print(f"deleted watchlist [bold]{name}[/]")


def list_watchlists(settings: Settings) -> list[Watchlist]:
    """Print every watchlist with its size and first symbols."""
    found = WatchlistEdits(settings).store.watchlists()
    if not found:
        console.print("no watchlists yet")
        return found
    table = Table(title="Watchlists", show_edge=False)
    for column in ("name", "symbols", "first", "updated"):
        table.add_column(column)
    for watchlist in found:
        first = ", ".join(watchlist.symbols[:8]) + (" …" if len(watchlist.symbols) > 8 else "")
        table.add_row(
            watchlist.name,
            str(len(watchlist.symbols)),
            first,
            f"{watchlist.updated_at:%Y-%m-%d %H:%M}",
        )
    console.print(table)
    return found


@watchlist_app.command("create")
def create(
    name: str = typer.Argument(..., help="letters, digits, _ . - (up to 64)"),
    symbols: list[str] | None = SymbolsArgument,
    csv: Path | None = CsvOption,
) -> None:
    """Create the watchlist NAME of SYMBOLS (and/or the symbols of --csv FILE)."""
    with fail_on_quantdesk_errors():
        create_watchlist(load_settings(), name, given_symbols(symbols, csv))
    finish(0)


@watchlist_app.command("add")
def add(
    name: str = typer.Argument(...),
    symbols: list[str] | None = SymbolsArgument,
    csv: Path | None = CsvOption,
) -> None:
    """Append SYMBOLS (and/or those of --csv FILE) to the watchlist NAME."""
    with fail_on_quantdesk_errors():
        add_to_watchlist(load_settings(), name, given_symbols(symbols, csv))
    finish(0)


@watchlist_app.command("remove")
def remove(name: str = typer.Argument(...), symbols: list[str] | None = SymbolsArgument) -> None:
    """Remove SYMBOLS from the watchlist NAME."""
    with fail_on_quantdesk_errors():
        remove_from_watchlist(load_settings(), name, given_symbols(symbols, None))
    finish(0)


@watchlist_app.command("show")
def show(name: str = typer.Argument(...)) -> None:
    """The symbols of the watchlist NAME, in order."""
    with fail_on_quantdesk_errors():
        show_watchlist(load_settings(), name)
    finish(0)


@watchlist_app.command("delete")
def delete(name: str = typer.Argument(...)) -> None:
    """Delete the watchlist NAME."""
    with fail_on_quantdesk_errors():
        delete_watchlist(load_settings(), name)
    finish(0)


@watchlist_app.command("list")
def list_all() -> None:
    """Every watchlist with its size."""
    with fail_on_quantdesk_errors():
        list_watchlists(load_settings())
    finish(0)
