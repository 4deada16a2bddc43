"""Sending one notice to Apprise URLs, each on its own, with a bounded wait.

Apprise (https://github.com/caronc/apprise) speaks to Slack, Telegram, e-mail, ntfy,
Matrix, JSON webhooks and a hundred more from one URL each. A URL holds its service's token
or password, so it is a secret: a ``Delivery`` names it as Apprise prints it with
``privacy=True`` (the secrets starred), and a failure's reason is Apprise's own warning
with the URL taken out.
"""

from __future__ import annotations

import hashlib
import logging

import apprise
from pydantic import SecretStr

from shared.notify.notices import Delivery, Notice


def target_id(url: SecretStr) -> str:
    """A URL's stable name in the ledger: a hash, never the secret."""
    return hashlib.sha256(url.get_secret_value().encode()).hexdigest()[:24]


def deliver(notice: Notice, url: SecretStr, timeout_seconds: float) -> Delivery:
    """``notice`` sent to ``url``, waiting at most ``timeout_seconds`` to connect and as long
    to read the answer: a service that is down costs that, never a hang."""
    raw = url.get_secret_value()
    service = apprise.Apprise.instantiate(raw)
    if service is None:
        scheme, sep, _ = raw.partition("://")
        return Delivery(
            target=f"{scheme}://…" if sep else "(not a URL)",
            ok=False,
            why="Apprise does not read this URL (see its wiki for the service's form)",
        )
    service.socket_connect_timeout = timeout_seconds
    service.socket_read_timeout = timeout_seconds
    # Apprise's form with the secrets starred, less the query of its own defaults.
    target = str(service.url(privacy=True)).split("?", 1)[0]
    with apprise.LogCapture(level=logging.WARNING) as said:
        ok = bool(service.notify(body=notice.text(), title=notice.title))
    if ok:
        return Delivery(target=target, ok=True)
    lines = [line for line in said.getvalue().splitlines() if line.strip()]
    reason = lines[-1].split(" - ", 2)[-1] if lines else "the service refused it"
    return Delivery(target=target, ok=False, why=reason.replace(raw, target))
