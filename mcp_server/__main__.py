"""`python -m mcp_server [--http]` (what `quantdesk mcp` runs): serve the desk to an AI
assistant over the Model Context Protocol.

Stdio by default, as hosts launch a local server (`claude mcp add quantdesk -- quantdesk
mcp`): stdout carries the protocol only, everything else goes to stderr. ``--http`` serves
streamable HTTP at ``http://HOST:PORT/mcp`` (``QUANTDESK_MCP__HOST`` / ``__PORT``) under
the console's rules (``mcp_server.http``).
"""

from __future__ import annotations

import typer

from client.process_exit import finish, run_command
from shared.config import load_settings

app = typer.Typer(add_completion=False, pretty_exceptions_enable=False)


@app.command()
def mcp(
    http: bool = typer.Option(False, "--http", help="serve streamable HTTP, not stdio"),
    # The range is checked here: the settings' copy below is not validated again.
    port: int | None = typer.Option(
        None, min=1, max=65535, help="--http: port (default QUANTDESK_MCP__PORT)"
    ),
) -> None:
    """Serve the desk's runs, reports, books and approvals to an MCP host."""
    import anyio

    from mcp_server.server import build_server
    from workers.metrics_exporter import metrics_runtime

    settings = load_settings()
    if port is not None:
        settings = settings.model_copy(
            update={"mcp": settings.mcp.model_copy(update={"port": port})}
        )
    server = build_server(settings)
    metrics_runtime(settings.metrics)  # its /metrics, when a port is set: bound now
    if http:
        import uvicorn

        from mcp_server.http import MCP_PATH, http_app

        asgi = http_app(server, settings)
        host, bound = settings.mcp.host, settings.mcp.port
        typer.echo(f"quantdesk MCP at http://{host}:{bound}{MCP_PATH}", err=True)
        uvicorn.run(asgi, host=host, port=bound, log_level="warning")
    else:
        anyio.run(server.run_stdio_async)
    finish(0)


def main() -> None:
    """The command, its errors said in one line."""
    run_command(lambda: app(prog_name="quantdesk mcp"), "quantdesk mcp")


if __name__ == "__main__":
    main()
