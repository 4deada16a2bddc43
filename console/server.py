"""`quantdesk console`: serve the console in the foreground until SIGTERM or Ctrl-C.

Checked before it binds: a host beyond loopback needs a token (``client.access``),
and the port must be free, else the error names the setting to change.
"""

from __future__ import annotations

from collections.abc import Callable

from client.access import check_bind
from shared.config import ENV_PREFIX, Settings
from shared.errors import ConfigError
from shared.ports import port_is_free

PORT_SETTING = f"{ENV_PREFIX}CONSOLE__PORT"


def serve(settings: Settings, say: Callable[[str], None]) -> None:
    """Serve until stopped (uvicorn shuts down in order on SIGTERM and SIGINT)."""
    import uvicorn

    from console.app import create_app
    from workers.metrics_exporter import metrics_runtime

    check_bind(settings)
    host, port = settings.console.host, settings.console.port
    if not port_is_free(port, host):
        raise ConfigError(
            PORT_SETTING,
            f"port {port} on {host} is already in use",
            fix=f"Stop what uses it, or set {PORT_SETTING} to a free port.",
        )
    if metrics_runtime(settings.metrics) is not None:  # bound now, used when it connects
        say(f"metrics at http://{settings.metrics.host}:{settings.metrics.port}/metrics")
    say(f"quantdesk console at http://{host}:{port}")
    uvicorn.run(create_app(settings), host=host, port=port, log_level="warning")
