"""`quantdesk up`, `status` and `down`: the local stack as one table.

`register(app)` adds the three commands to the main Typer app. They share one
runner: load settings, act, print the table and where things are, and leave
through ``finish`` (these commands use a temporalio client, see ``client.process_exit``).
While `up` waits it says for what on stderr, so stdout stays the table. `status`
also lists the runs whose workflow task keeps failing (``activities.stuck_runs``): the
stack is up, yet they wait for a fix; and, per quantdesk task queue, the workers of
every host polling it, as Temporal lists them (``cli.stack.pollers``): pid files only
know this host. `up` warns when its servers are shared but its book is a SQLite file
that no other host sees.
"""

from __future__ import annotations

import asyncio
from collections.abc import Awaitable, Callable, Sequence
from datetime import UTC, datetime
from functools import partial
from typing import Annotated, NoReturn

import typer
from rich import box
from rich.console import Console, RenderableType
from rich.table import Table
from rich.text import Text
from temporalio.service import RPCError

from activities.stuck_runs import stuck_runs
from cli.stack import supervisor
from cli.stack.cli_profile import remove_profile, write_profile
from cli.stack.components import ui_url
from cli.stack.console import console_url
from cli.stack.pollers import GONE_AFTER, QueueService, queue_services
from cli.stack.process_usage import shown_duration
from cli.stack.scrape_config import config_path
from cli.stack.supervisor import ALL_ROLES, ComponentReport, ComponentState
from cli.views import STUCK_TITLE, stuck_table
from client.process_exit import fail_on_quantdesk_errors, finish
from shared.config import ENV_PREFIX, Settings, load_settings
from shared.errors import InvalidInput, QuantdeskError
from workers.roles import ROLE_NAMES, WorkerRole, serving_roles, unanswered

Action = Callable[[Settings, Sequence[WorkerRole]], list[ComponentReport]]

STATE_STYLES = {
    ComponentState.STARTED: "green",
    ComponentState.RESTARTED: "green",
    ComponentState.ALREADY_RUNNING: "green",
    ComponentState.RUNNING: "green",
    ComponentState.EXTERNAL: "cyan",
    ComponentState.UNHEALTHY: "bold red",
    ComponentState.STOPPED: "dim",
    ComponentState.NOT_STARTED: "yellow",
}
RolesOption = Annotated[
    str | None,
    typer.Option(help=f"Comma-separated worker roles (default: all of {', '.join(ROLE_NAMES)})."),
]

STUCK_LIST_TIMEOUT = 15.0
"""How long `status` waits for the list of stuck runs (a visibility query, then each run)."""
POLLERS_TIMEOUT = 15.0
"""How long `status` waits for the pollers of every queue (two calls per queue)."""
POLLERS_TITLE = "who polls each task queue (from Temporal, every host)"
SHARED_BOOK_EXAMPLE = "postgresql+psycopg://quantdesk:PASSWORD@db-host:5432/quantdesk"

console = Console()
progress = Console(stderr=True)


def parse_roles(
    text: str | None, default: tuple[WorkerRole, ...] = ALL_ROLES, option: str = "--roles"
) -> tuple[WorkerRole, ...]:
    """The roles named (comma-separated) in ``option``, or ``default`` when it is not given."""
    if text is None:
        return default
    names = [name.strip() for name in text.split(",") if name.strip()]
    unknown = [name for name in names if name not in ROLE_NAMES]
    if unknown or not names:
        raise InvalidInput(
            option,
            f"unknown role {', '.join(unknown)}" if unknown else "no role named",
            fix=f"Use: {', '.join(ROLE_NAMES)}.",
        )
    return tuple(WorkerRole(name) for name in names)


def _say(line: str) -> None:
    """One line of what `up` is waiting for or restarting."""
    progress.print(Text(line, style="dim"), soft_wrap=True)


def _show(reports: list[ComponentReport]) -> None:
    table = Table(box=box.SIMPLE_HEAD, show_edge=False)
    table.add_column("component", no_wrap=True)
    table.add_column("pid", no_wrap=True)
    # On a narrow terminal the address folds; names and states stay whole and greppable.
    table.add_column("address", overflow="fold")
    table.add_column("state", no_wrap=True)
    table.add_column("memory", justify="right", no_wrap=True)
    table.add_column("up for", justify="right", no_wrap=True)
    table.add_column("metrics", no_wrap=True)
    for report in reports:
        state = Text(report.state.value, style=STATE_STYLES[report.state])
        usage = report.usage
        memory = f"{usage.rss_mb:,.0f} MB" if usage else "-"
        age = shown_duration(usage.up_seconds) if usage else "-"
        metrics = f":{report.metrics.rpartition(':')[2]}" if report.metrics else "-"
        row = (report.name, str(report.pid or "-"), report.address, state, memory, age, metrics)
        table.add_row(*row)
    console.print(table)
    if measured := [r.usage.rss_mb for r in reports if r.usage]:
        console.print(f"{sum(measured):,.0f} MB in {len(measured)} processes", highlight=False)
    for report in reports:
        if report.detail:
            console.print(Text(f"{report.name}: {report.detail}", style="red"), soft_wrap=True)


def _show_endpoints(settings: Settings, *, cli_profile: bool = False) -> None:
    """Where a user points a browser or a client once the stack is up; with ``cli_profile``
    (`up` on the embedded stack), the `temporal` CLI's profile written for it."""
    console.print(f"Console          {console_url(settings)}", highlight=False)
    if settings.temporal.embedded:
        console.print(f"Temporal Web UI  {ui_url(settings)}", highlight=False)
    console.print(
        f"Temporal         {settings.temporal.address} (namespace {settings.temporal.namespace})",
        highlight=False,
    )
    if cli_profile and settings.temporal.embedded:
        for index, line in enumerate(write_profile(settings).lines()):
            label = "Temporal CLI" if index == 0 else ""
            console.print(f"{label:<17}{line}", highlight=False, soft_wrap=True)
    scheme = "https" if settings.s3.secure else "http"
    console.print(f"S3               {scheme}://{settings.s3.endpoint}", highlight=False)
    if settings.local_llm.model is not None:
        console.print(
            f"Local LLM        {settings.local_llm.url} ({settings.local_llm.model})",
            highlight=False,
        )
    console.print(f"Logs             {(settings.data_dir / 'logs').resolve()}", highlight=False)
    console.print(
        f"Metrics          prometheus --config.file={config_path(settings)}", highlight=False
    )


async def stuck_section(settings: Settings) -> RenderableType:
    """The runs whose workflow task keeps failing, as a table, or a line saying there are none."""
    from workers.client import connect

    runs = await stuck_runs(await connect(settings))
    if not runs:
        return Text(f"{STUCK_TITLE}: none", style="dim")
    return stuck_table(runs.values())


def _ago(when: datetime | None, now: datetime) -> Text:
    """How long ago a poller last polled; dim once it has probably stopped."""
    if when is None:
        return Text("-")
    age = now - when
    shown = f"{age.total_seconds():.0f} s ago"
    return Text(f"{shown} (gone?)", style="dim") if age > GONE_AFTER else Text(shown)


def pollers_table(services: Sequence[QueueService], now: datetime) -> Table:
    """One row per poller of each queue (a queue nobody polls says so), by host."""
    table = Table(title=POLLERS_TITLE, title_justify="left", box=box.SIMPLE_HEAD, show_edge=False)
    # On a narrow terminal the identity and what a queue serves fold (an LLM queue serves
    # many providers); the queue, host and times stay whole and greppable.
    for column in ("queue", "host"):
        table.add_column(column, no_wrap=True)
    table.add_column("identity", overflow="fold")
    for column in ("polls for", "last poll"):
        table.add_column(column, no_wrap=True)
    table.add_column("serves", overflow="fold")
    for service in services:
        if not service.pollers:
            none = Text("no poller", style="yellow")
            table.add_row(service.queue, none, "", "", "", service.serves)
        for index, poller in enumerate(service.pollers):
            first = index == 0
            table.add_row(
                service.queue if first else "",
                poller.host,
                poller.identity,
                ", ".join(poller.kinds),
                _ago(poller.last_poll, now),
                service.serves if first else "",
            )
    return table


async def pollers_section(settings: Settings) -> RenderableType:
    """``pollers_table`` of every quantdesk queue, as Temporal lists its pollers now."""
    from workers.client import connect

    services = await queue_services(await connect(settings), settings)
    return pollers_table(services, datetime.now(UTC))


def _show_cluster(settings: Settings, reports: list[ComponentReport]) -> None:
    """``stuck_section`` and ``pollers_section``, once Temporal is healthy (nothing to ask
    otherwise)."""
    if not any(report.name == "temporal" and report.healthy for report in reports):
        return
    sections: list[tuple[str, Callable[[Settings], Awaitable[RenderableType]], float]] = [
        (STUCK_TITLE, stuck_section, STUCK_LIST_TIMEOUT),
        (POLLERS_TITLE, pollers_section, POLLERS_TIMEOUT),
    ]
    for title, section_of, timeout in sections:
        try:
            section = asyncio.run(asyncio.wait_for(section_of(settings), timeout))
        except (RPCError, TimeoutError, QuantdeskError) as error:
            section = Text(f"{title}: not listed ({error})", style="yellow")
        console.print(section, soft_wrap=True)
        console.print()


def private_book_warning(settings: Settings) -> str | None:
    """Why other hosts will not see this host's book, when its servers are shared (neither is
    embedded) but the book is a SQLite file; None otherwise."""
    shared = not settings.temporal.embedded and not settings.s3.embedded
    url = settings.resolved_database_url
    if not shared or not url.startswith("sqlite"):
        return None
    return (
        f"warning: this host keeps its book in a SQLite file ({url.removeprefix('sqlite:///')}) "
        "that workers on other hosts cannot see: the trades and positions they book go to "
        f"files of their own. Give every host one PostgreSQL database: {ENV_PREFIX}DATABASE_URL="
        f"{SHARED_BOOK_EXAMPLE}"
    )


def _run(
    action: Action,
    roles: str | None,
    *,
    strict: bool,
    endpoints: bool,
    cluster: bool = False,
    book: bool = False,
    cli_profile: bool = False,
    every: bool = False,
) -> NoReturn:
    """Act on the stack, print the outcome (with ``cluster``: the stuck runs and the pollers;
    with ``book``: a warning if the book is not shared; with ``cli_profile``: the `temporal`
    CLI's profile, once every component is healthy), exit 1 if ``strict`` and a component is
    unhealthy. Without ``--roles`` it acts on the roles that can serve (``every``: on all)."""
    with fail_on_quantdesk_errors():
        settings = load_settings()
        default = ALL_ROLES if every else serving_roles(settings)
        reports = action(settings, parse_roles(roles, default))
        healthy = all(report.healthy for report in reports)
        _show(reports)
        if not roles and not every and (left := unanswered(settings)):
            for role, why in left.items():
                _say(f"role {role.value} cannot answer: {why}")
            _say(
                "their queues are polled all the same: a run on such a provider waits at its "
                "first call naming the key to set (then `quantdesk up` and `quantdesk resume`)"
            )
        if cluster:
            _show_cluster(settings, reports)
        if endpoints:
            _show_endpoints(settings, cli_profile=cli_profile and healthy)
            _warn_if_live(settings)
        if book and (warning := private_book_warning(settings)):
            progress.print(Text(warning, style="bold yellow"), soft_wrap=True)
    finish(1 if strict and not healthy else 0)


def _warn_if_live(settings: Settings) -> None:
    """Say loudly, at every `up` and `status`, that a broker worker trades real money."""
    if settings.alpaca.live:
        progress.print(Text(settings.alpaca.trading_mode(), style="bold white on red"))


def _down_and_forget_profile(
    settings: Settings, roles: Sequence[WorkerRole]
) -> list[ComponentReport]:
    """`down` of the whole stack, then ``remove_profile``: no profile left pointing at it."""
    reports = supervisor.down(settings, roles)
    if settings.temporal.embedded:
        remove_profile(settings)
    return reports


def register(app: typer.Typer) -> None:
    """Add `up`, `status` and `down` to ``app``."""

    @app.command()
    def up(
        roles: RolesOption = None,
        split: Annotated[
            bool,
            typer.Option(
                help="One worker process per role (isolation, or to scale one) instead of one "
                "process serving every role."
            ),
        ] = False,
    ) -> None:
        """Start (or restart) what is missing or stuck, wait until all is healthy; idempotent."""
        _run(
            partial(supervisor.up, say=_say, split=split),
            roles,
            strict=True,
            endpoints=True,
            book=True,
            cli_profile=True,
        )

    @app.command()
    def status(roles: RolesOption = None) -> None:
        """Show each component's pid, address and health, the runs whose workflow task keeps
        failing and who polls each task queue on every host; exit 1 if a component is not
        healthy."""
        _run(supervisor.status, roles, strict=True, endpoints=True, cluster=True)

    @app.command()
    def down(roles: RolesOption = None) -> None:
        """Stop the processes `up` started: workers first (they drain), then the servers, and
        the `temporal` CLI's profile `up` wrote for them."""
        _run(_down_and_forget_profile, roles, strict=False, endpoints=False, every=True)
