"""`quantdesk mcp --http`: the MCP server over streamable HTTP, with the console's rules.

On loopback (the default) it is as open as the console; bound beyond loopback it refuses
to start without ``QUANTDESK_MCP__TOKEN``, and with a token every request must carry it as
``Authorization: Bearer``. A request a browser sends from a page of another site (its
``Origin`` is not the server's own) is refused with 403 whatever its method, so no web
page can drive the desk through a person's browser.
"""

from __future__ import annotations

from mcp.server.mcpserver import MCPServer
from starlette.applications import Starlette
from starlette.middleware.base import BaseHTTPMiddleware
from starlette.requests import Request
from starlette.responses import PlainTextResponse, Response

from client.access import Handler, is_foreign, refuse_open_bind, token_gate
from shared.config import ENV_PREFIX, Settings

MCP_PATH = "/mcp"
MCP_HOST_SETTING = f"{ENV_PREFIX}MCP__HOST"


def check_bind(settings: Settings) -> None:
    """Refuse to serve beyond loopback without a token, naming the setting to set."""
    how = "hosts then send `Authorization: Bearer ...`"
    refuse_open_bind("MCP server", settings.mcp.host, settings.mcp.token, MCP_HOST_SETTING, how)


async def own_origin_only(request: Request, call_next: Handler) -> Response:
    """403 for a request sent from a page of another site."""
    if is_foreign(request):
        origin = request.headers.get("origin")
        return PlainTextResponse(f"refused: a page of {origin} may not use this server", 403)
    return await call_next(request)


def http_app(server: MCPServer, settings: Settings) -> Starlette:
    """The streamable HTTP app at ``/mcp``, behind the token (when set) and the Origin check."""
    check_bind(settings)
    app = server.streamable_http_app(streamable_http_path=MCP_PATH, host=settings.mcp.host)
    if settings.mcp.token is not None:
        app.add_middleware(
            BaseHTTPMiddleware, dispatch=token_gate(settings.mcp.token.get_secret_value())
        )
    # Added last, so it runs first: a foreign page is refused before anything else.
    app.add_middleware(BaseHTTPMiddleware, dispatch=own_origin_only)
    return app
