"""The console as a component of `quantdesk up`: its launch spec and its health.

`up` runs `quantdesk console` (``console.server``) with the stack's settings, on
``QUANTDESK_CONSOLE__PORT`` (8400); it is healthy once ``/health`` answers ``ok``.
A console bound beyond loopback without a token fails `up` before anything starts.
"""

from __future__ import annotations

import sys

from cli.stack.servers import NoJson, PortClaim, ServerLaunch, json_at
from client.links import CODEC_PREFIX
from shared.config import ENV_PREFIX, Settings
from shared.errors import ConfigError
from shared.extras import install_command

CONSOLE = "console"


def console_url(settings: Settings) -> str:
    """Where a browser on this machine opens the console."""
    return settings.console.local_url()


def codec_endpoint(settings: Settings) -> str:
    """The console's codec endpoint, for the Web UI to read payloads through: large ones are
    kept in S3 (``workers.payload_storage``), and all are sealed when encryption is on. Asks
    for the keys, so `up` stops with the setting to fix before it starts a server whose runs
    nothing could read."""
    settings.payload_keys()
    return f"{console_url(settings)}{CODEC_PREFIX}"


def console_server(settings: Settings) -> ServerLaunch:
    """`quantdesk console` on the configured host and port, checked before it starts."""
    from client.access import check_bind

    try:
        import fastapi  # noqa: F401
        import uvicorn  # noqa: F401
    except ImportError:
        raise ConfigError(
            CONSOLE,
            "the console's packages are not installed",
            fix=f"Install them with `{install_command('console')}`.",
        ) from None
    check_bind(settings)
    env = {
        f"{ENV_PREFIX}CONSOLE__HOST": settings.console.host,
        f"{ENV_PREFIX}CONSOLE__PORT": str(settings.console.port),
    }
    ports = [PortClaim(settings.console.port, f"{ENV_PREFIX}CONSOLE__PORT", "web console")]
    return ServerLaunch(CONSOLE, [sys.executable, "-m", CONSOLE], ports, env=env)


def health_problem(settings: Settings) -> str | None:
    """Whether the console answers ``/health`` with ``{"status": "ok"}``."""
    url = f"{console_url(settings)}/health"
    try:
        body = json_at(url)
    except NoJson as problem:
        return str(problem)
    return None if body == {"status": "ok"} else f"{url} answers {body!r}"


def console_link(settings: Settings, workflow_id: str) -> str | None:
    """The run's page in the console, if the console answers; None when it is not running
    (a link that does not open is worse than none)."""
    if health_problem(settings) is not None:
        return None
    return f"{console_url(settings)}/runs/{workflow_id}"
