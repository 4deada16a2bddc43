"""`quantdesk data record social`: store what StockTwits serves about now in the local vendor's
``social.jsonl``, so that runs as of later times read the posts as they were
(``shared.data.social_record``).

It reads the desk's settings (the data directory, the watchlists' database, the quota shared
with the tools workers), so no stack is needed.
"""

from __future__ import annotations

import json
from datetime import timedelta

import typer
from rich.console import Console
from rich.table import Table
from rich.text import Text

from client.process_exit import fail_on_quantdesk_errors, finish
from shared.config import Settings, load_settings
from shared.data.social_record import DEFAULT_LIMIT, RecordReport, record_for_desk
from shared.errors import InvalidInput
from shared.watchlists.store import WatchlistStore
from shared.watchlists.symbols import split_symbols, symbol_list

record_app = typer.Typer(
    help="Record sources that serve only the present, for runs as of later times."
)
console = Console()

OUTCOME_STYLES = {"recorded": "", "no data": "yellow", "failed": "red"}


def chosen_symbols(settings: Settings, watchlist: str | None, symbols: str | None) -> list[str]:
    """The symbols of ``--watchlist`` or of ``--symbols``: exactly one of them."""
    if watchlist is not None and symbols is None:
        return WatchlistStore.from_settings(settings).get(watchlist).symbols
    if symbols is not None and watchlist is None:
        return symbol_list(split_symbols([symbols]), field="--symbols")
    raise InvalidInput(
        "--watchlist/--symbols",
        "give exactly one of them",
        fix="Use e.g. --watchlist core, or --symbols AAPL,MSFT.",
    )


def _table(report: RecordReport) -> Table:
    table = Table(title=f"social posts recorded in {report.store}", show_edge=False)
    for column in ("symbol", "outcome", "read", "new", "newest post"):
        table.add_column(column, no_wrap=True)
    table.add_column("note", overflow="fold")
    for row in report.symbols:
        note = row.said or ("posts before these may be missing" if row.may_have_missed else "")
        table.add_row(
            row.symbol,
            Text(row.outcome, style=OUTCOME_STYLES[row.outcome]),
            str(row.fetched),
            str(row.new),
            row.newest.isoformat() if row.newest else "-",
            note,
        )
    table.caption = f"{report.new} new post(s) as of {report.at.isoformat()}"
    return table


@record_app.command("social")
def social(
    watchlist: str | None = typer.Option(None, "--watchlist", help="a watchlist's name"),
    symbols: str | None = typer.Option(None, "--symbols", help="e.g. AAPL,MSFT"),
    days: int = typer.Option(7, "--days", min=1, max=30, help="keep posts of the last days"),
    limit: int = typer.Option(
        DEFAULT_LIMIT, "--limit", min=1, max=800, help="posts read a symbol (30 a request)"
    ),
    as_json: bool = typer.Option(False, "--json", help="print the report as JSON"),
) -> None:
    """Store the posts StockTwits serves now about each symbol (the new ones only) in the
    data dir's data/social.jsonl; later runs read them as of their own time. Exit status 1
    when a symbol could not be read.

    On a schedule, as a flow: `quantdesk schedule create social-core --flow record-social
    --cron "*/15 13-21 * * 1-5" --input '{"watchlist": "core"}'`.
    """
    with fail_on_quantdesk_errors():
        settings = load_settings()
        report = record_for_desk(
            settings,
            chosen_symbols(settings, watchlist, symbols),
            window=timedelta(days=days),
            limit=limit,
        )
    if as_json:
        print(json.dumps(report.model_dump(mode="json"), indent=2), flush=True)
    else:
        console.print(_table(report))
    finish(1 if report.failed else 0)
