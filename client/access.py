"""Who may use the HTTP doors (the console, the MCP server over HTTP): anyone on this machine, or,
bound beyond loopback, token holders.

On loopback (the default) the console is as open as the Temporal Web UI next to it.
Bound to any other address it refuses to start without ``QUANTDESK_CONSOLE__TOKEN``,
and then asks every request for it: an ``Authorization: Bearer`` header, the cookie a
first visit with ``?token=...`` sets, or that query parameter itself. Either way a POST
(approve, reject, resume, start) is taken only from the console's own pages; the one
exception is the codec endpoint (``/codec/``), which the Web UI's pages call from the
browser: pages of the origins ``QUANTDESK_CODEC__WEB_UI_ORIGINS`` names, and no others.
"""

from __future__ import annotations

import hmac
import ipaddress
from collections.abc import Awaitable, Callable, Collection
from urllib.parse import urlsplit

from fastapi import Request, Response
from fastapi.responses import RedirectResponse

from client.links import CODEC_PREFIX
from shared.config import CODEC_ORIGINS_SETTING, ENV_PREFIX, Settings
from shared.errors import ConfigError

TOKEN_SETTING = f"{ENV_PREFIX}CONSOLE__TOKEN"
COOKIE = "quantdesk_console_token"
OPEN_PATHS = frozenset({"/health"})
"""Answered without a token: `quantdesk up` checks the console's health."""
CODEC_ALLOWED_HEADERS = "content-type, authorization, x-namespace"
"""What the Web UI and the `temporal` CLI send the codec endpoint (x-namespace names the
namespace; authorization carries a token when they are told one)."""
PREFLIGHT_SECONDS = 600


def is_loopback(host: str) -> bool:
    """Whether ``host`` is reachable from this machine only."""
    if host == "localhost":
        return True
    try:
        return ipaddress.ip_address(host).is_loopback
    except ValueError:
        return False


def refuse_open_bind(door: str, host: str, token: object, host_setting: str, how: str) -> None:
    """Refuse to serve ``door`` beyond loopback without a token (``token`` None), naming the
    token's setting (beside ``host_setting``: ``..._HOST`` → ``..._TOKEN``) and ``how``
    clients then present the token."""
    token_setting = host_setting.removesuffix("HOST") + "TOKEN"
    if not is_loopback(host) and token is None:
        raise ConfigError(
            token_setting,
            f"the {door} would listen on {host}, beyond this machine, without a token",
            fix=f"Set {token_setting} to a long random string ({how}), or bind {host_setting} "
            "to 127.0.0.1.",
        )


def check_bind(settings: Settings) -> None:
    """Refuse to serve the console beyond loopback without a token."""
    console = settings.console
    how = f"people then open http://HOST:{console.port}/?token=..."
    refuse_open_bind("console", console.host, console.token, f"{ENV_PREFIX}CONSOLE__HOST", how)


Handler = Callable[[Request], Awaitable[Response]]
SAFE_METHODS = frozenset({"GET", "HEAD", "OPTIONS"})


def _is_codec(request: Request) -> bool:
    return request.url.path.startswith(f"{CODEC_PREFIX}/")


def is_foreign(request: Request) -> bool:
    """Whether a browser sent ``request`` from a page of another site than the one it is
    addressed to (its ``Origin`` is not its ``Host``); "null" (a sandboxed or file page) is
    foreign too. Requests without an ``Origin`` are not a browser page's."""
    origin = request.headers.get("origin")
    return origin is not None and urlsplit(origin).netloc != request.headers.get("host")


async def same_origin(request: Request, call_next: Handler) -> Response:
    """Refuse a POST sent by a page of another site (a form on any web page can post to
    127.0.0.1): browsers name the page's origin, which must be the console's own. The codec
    endpoint is for other sites' pages: ``codec_cors`` has let through only the allowed ones."""
    origin = request.headers.get("origin")
    if request.method not in SAFE_METHODS and is_foreign(request) and not _is_codec(request):
        return Response(
            f"refused: a page of {origin} may not act on this console",
            status_code=403,
            media_type="text/plain",
        )
    return await call_next(request)


def token_gate(token: str) -> Callable[[Request, Handler], Awaitable[Response]]:
    """Middleware that lets through requests carrying ``token`` (and ``OPEN_PATHS``)."""

    def carries(given: str | None) -> bool:
        return given is not None and hmac.compare_digest(given.encode(), token.encode())

    async def gate(request: Request, call_next: Handler) -> Response:
        if request.url.path in OPEN_PATHS:
            return await call_next(request)
        bearer = request.headers.get("authorization", "").removeprefix("Bearer ").strip()
        if carries(bearer or None) or carries(request.cookies.get(COOKIE)):
            return await call_next(request)
        if carries(request.query_params.get("token")):
            # Once in the address bar, then a cookie: links inside the console stay clean.
            url = request.url.remove_query_params("token")
            answer = RedirectResponse(url.path + (f"?{url.query}" if url.query else ""), 303)
            answer.set_cookie(COOKIE, token, httponly=True, samesite="strict")
            return answer
        return Response(
            f"This console asks for a token: open it with ?token=... ({TOKEN_SETTING}).",
            status_code=401,
            media_type="text/plain",
        )

    return gate


def codec_cors(origins: Collection[str]) -> Callable[[Request, Handler], Awaitable[Response]]:
    """Middleware letting pages of ``origins`` (the Web UI) call the codec endpoint from a
    browser, cookies included; pages of any other origin are refused there.

    A browser asks first with a preflight (OPTIONS) that carries no token, so this runs
    outside the token gate and answers preflights itself; the real request then passes the
    gate like any other. Requests without an ``Origin`` (the `temporal` CLI) are not
    a browser's and pass untouched."""
    allowed = frozenset(origins)

    async def cors(request: Request, call_next: Handler) -> Response:
        origin = request.headers.get("origin")
        if origin is None or not _is_codec(request):
            return await call_next(request)
        if origin not in allowed:
            return Response(
                f"refused: a page of {origin} may not use the codec endpoint (allowed: "
                f"{', '.join(sorted(allowed)) or 'none'}; {CODEC_ORIGINS_SETTING})",
                status_code=403,
                media_type="text/plain",
            )
        if request.method == "OPTIONS" and "access-control-request-method" in request.headers:
            answer = Response(status_code=204)
            answer.headers["Access-Control-Allow-Methods"] = "POST, OPTIONS"
            answer.headers["Access-Control-Allow-Headers"] = CODEC_ALLOWED_HEADERS
            answer.headers["Access-Control-Max-Age"] = str(PREFLIGHT_SECONDS)
        else:
            answer = await call_next(request)
        answer.headers["Access-Control-Allow-Origin"] = origin
        answer.headers["Access-Control-Allow-Credentials"] = "true"
        answer.headers["Vary"] = "Origin"
        return answer

    return cors
