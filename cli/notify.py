"""`quantdesk notify test`: one message to every URL the desk's notices go to, and which
failed and why (``shared.notify``). It reads the settings only: no stack is needed."""

from __future__ import annotations

import socket
from datetime import UTC, datetime

import typer
from pydantic import SecretStr
from rich.console import Console
from rich.table import Table
from rich.text import Text

from client.process_exit import fail_on_quantdesk_errors, finish
from shared.config import NotifySettings, load_settings
from shared.errors import ConfigError
from shared.notify.notices import Notice, NoticeKind
from shared.notify.sender import deliver, target_id

notify_app = typer.Typer(help="Notices to people: Slack, e-mail, webhooks... (Apprise URLs).")
console = Console()


def every_url(config: NotifySettings) -> list[SecretStr]:
    """Each URL of ``urls``, ``routes`` and ``escalate_urls`` once, in that order."""
    routed = [url for urls in config.routes.values() for url in urls]
    seen: dict[str, SecretStr] = {}
    for url in [*config.urls, *routed, *config.escalate_urls]:
        seen.setdefault(target_id(url), url)
    return list(seen.values())


@notify_app.command("test")
def test() -> None:
    """Send a test notice to every URL configured (QUANTDESK_NOTIFY__URLS, __ROUTES,
    __ESCALATE_URLS) and say which took it; exit status 1 when one did not."""
    with fail_on_quantdesk_errors():
        config = load_settings().notify
        urls = every_url(config)
        if not urls:
            raise ConfigError(
                "QUANTDESK_NOTIFY__URLS",
                "no URL is configured, so no notice goes anywhere",
                fix="Set it to Apprise URLs, e.g. 'json://hooks.example.org/desk "
                "mailto://user:pass@smtp.example.org?to=ops@example.org'.",
            )
        notice = Notice(
            kind=NoticeKind.TEST,
            run=f"notify-test-{datetime.now(UTC):%Y%m%dT%H%M%S}",
            title="quantdesk: a test notice",
            body=f"Sent by `quantdesk notify test` on {socket.gethostname()}: notices reach you here.",
        )
        deliveries = [deliver(notice, url, config.timeout_seconds) for url in urls]
    table = Table(show_edge=False)
    for column in ("URL", "sent", "why not"):
        table.add_column(column, overflow="fold")
    for delivery in deliveries:
        sent = Text("yes", style="green") if delivery.ok else Text("no", style="red")
        table.add_row(delivery.target, sent, delivery.why)
    console.print(table)
    finish(0 if all(delivery.ok for delivery in deliveries) else 1)
