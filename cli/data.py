"""`quantdesk data check SYMBOL --as-of DATE`: what an agent of a run at that time would read,
kind by kind, and why each vendor of a chain did or did not answer (``shared.data.check``).

It reads through the router the tools workers build from the same settings (routes, keys,
the disk cache), so no stack is needed.
"""

from __future__ import annotations

import json
from datetime import UTC, datetime
from pathlib import Path

import typer
from rich.console import Console
from rich.table import Table
from rich.text import Text

from cli.data_record import record_app
from client.process_exit import fail_on_quantdesk_errors, finish
from shared.config import load_settings
from shared.data.check import CheckQuery, KindCheck, check
from shared.data.contracts import DataKind, Sector
from shared.data.factory import Routes, build_router, routes_of
from shared.errors import InvalidInput

data_app = typer.Typer(help="The data layer: which vendor serves what, as of when.")
data_app.add_typer(record_app, name="record")
console = Console()
guidance = Console(stderr=True)


def _as_of(text: str | None) -> datetime:
    """``--as-of``: a date (its end of day is not assumed: midnight UTC) or a time with a zone;
    now when not given."""
    if text is None:
        return datetime.now(UTC)
    try:
        parsed = datetime.fromisoformat(text)
    except ValueError:
        raise InvalidInput(
            "--as-of",
            f"{text!r} is not a date or time",
            fix="Use e.g. 2024-03-28 or 2024-03-28T20:00Z.",
        ) from None
    if parsed.tzinfo is None:
        if len(text) > 10:
            raise InvalidInput(
                "--as-of", f"{text} has no timezone", fix="Add one, e.g. Z or +00:00."
            )
        parsed = parsed.replace(tzinfo=UTC)
    return parsed


def _kinds(text: str | None) -> list[DataKind]:
    if text is None:
        return list(DataKind)
    names = [name.strip().lower() for name in text.split(",") if name.strip()]
    unknown = [name for name in names if name not in {kind.value for kind in DataKind}]
    if unknown or not names:
        raise InvalidInput(
            "--kind",
            f"unknown kind {', '.join(unknown) or '(none given)'}",
            fix=f"Use: {', '.join(kind.value for kind in DataKind)}.",
        )
    return [DataKind(name) for name in names]


def _table(checks: list[KindCheck]) -> Table:
    table = Table(show_edge=False)
    for column in ("kind", "vendor", "records", "latest"):
        table.add_column(column, no_wrap=True)
    table.add_column("why not the others / why none", overflow="fold")
    for outcome in checks:
        vendor = Text(outcome.vendor) if outcome.vendor else Text("none", style="yellow")
        latest = outcome.latest.isoformat() if outcome.latest else "-"
        why = "\n".join(outcome.passed) if outcome.vendor else outcome.problem
        table.add_row(outcome.kind.value, vendor, str(outcome.records), latest, why)
    return table


def _say(line: str) -> None:
    """A line of progress, on stderr."""
    guidance.print(line, highlight=False)


@data_app.command("sec-mirror")
def sec_mirror(
    files: list[Path] = typer.Argument(
        None,
        help="bulk files downloaded already (company_tickers.json, companyfacts.zip, "
        "submissions.zip); default: download them from the SEC",
    ),
) -> None:
    """Keep the SEC's nightly bulk files in the data dir: the sec vendor then reads company
    facts, filings and tickers from them, not the API."""
    from shared.data.sec_mirror import MIRROR_DIR, copy_into_mirror, download_mirror

    with fail_on_quantdesk_errors():
        settings = load_settings()
        folder = settings.data_dir / MIRROR_DIR
        if files:
            sizes = copy_into_mirror(files, folder)
        else:
            sizes = download_mirror(settings.sec, folder, _say)
    for name, size in sizes.items():
        console.print(f"{folder / name}  {size:,} bytes", highlight=False)
    finish(0)


@data_app.command("check")
def check_command(
    symbol: str = typer.Argument(..., help="ticker, e.g. AAPL"),
    as_of: str | None = typer.Option(None, "--as-of", help="date or time (default: now)"),
    kind: str | None = typer.Option(None, "--kind", help="kinds, comma-separated (default: all)"),
    series: str = typer.Option("CPI", help="the macro series to read"),
    sector: Sector = typer.Option(Sector.INFORMATION_TECHNOLOGY, help="the industry kind's sector"),
    as_json: bool = typer.Option(False, "--json", help="print every kind's records as JSON"),
) -> None:
    """Per kind: the vendor that answered, its records (count, latest date) and why every other
    vendor of the chain did not."""
    with fail_on_quantdesk_errors():
        query = CheckQuery(symbol.strip().upper(), _as_of(as_of), series.upper(), sector)
        kinds = _kinds(kind)
        settings = load_settings()
        checks = check(build_router(settings), query, kinds)
    if as_json:
        print(json.dumps([c.model_dump(mode="json") for c in checks], indent=2), flush=True)
    else:
        console.print(_chains_table(routes_of(settings), kinds))
        console.print(f"{query.symbol} as of {query.as_of.isoformat()}", highlight=False)
        console.print(_table(checks))
    finish(0)


@data_app.command("chains")
def chains_command() -> None:
    """The chain of vendors each kind is asked in, and the vendors left out (not set up) and
    why: your QUANTDESK_DATA_ROUTES where set, else the defaults with what you have set up."""
    with fail_on_quantdesk_errors():
        routes = routes_of(load_settings())
    console.print(_chains_table(routes, list(DataKind)))
    finish(0)


def _chains_table(routes: Routes, kinds: list[DataKind]) -> Table:
    table = Table(title="chains (first that answers wins)", show_edge=False)
    table.add_column("kind", no_wrap=True)
    table.add_column("vendors, in order", overflow="fold")
    for kind in kinds:
        table.add_row(kind.value, " → ".join(routes.chains[kind]))
    for vendor, why in routes.left_out.items():
        table.add_row(Text(f"({vendor})", style="dim"), Text(f"left out: {why}", style="dim"))
    return table
