"""The console's web app: its pages, its static files, its error page and its token gate.

``create_app(settings)`` is what `quantdesk console` serves and what the tests drive.
Every error a page raises ends on the error page with its status: ``DeskError`` and its
kinds as they say, a malformed request 422, the project's own errors by kind (a missing
object 404, a server away 503, bad input 400); anything else is logged and answered 500
without a trace.
"""

from __future__ import annotations

import logging

from fastapi import FastAPI, Request
from fastapi.exceptions import RequestValidationError
from fastapi.responses import HTMLResponse, JSONResponse
from fastapi.staticfiles import StaticFiles
from starlette.exceptions import HTTPException

from client.access import codec_cors, same_origin, token_gate
from client.desk import Desk
from client.errors import DeskError
from console import (
    books_pages,
    objects_pages,
    runs_pages,
    start_pages,
    studies_pages,
    watchlists_pages,
)
from console.codec_endpoint import router as codec_endpoint
from console.web import HERE, page
from shared.config import Settings
from shared.errors import ConfigError, ObjectNotFound, QuantdeskError, StorageUnavailable

log = logging.getLogger("quantdesk.console")

ERROR_STATUS: dict[type[QuantdeskError], int] = {
    ObjectNotFound: 404,
    StorageUnavailable: 503,
    ConfigError: 503,
}
"""The status of a project error by its kind; any other is the request's fault (400)."""


def create_app(settings: Settings) -> FastAPI:
    """The console over the stack ``settings`` point at."""
    app = FastAPI(title="quantdesk console", docs_url=None, redoc_url=None, openapi_url=None)
    app.state.desk = Desk(settings)
    if settings.console.token is not None:
        app.middleware("http")(token_gate(settings.console.token.get_secret_value()))
    app.middleware("http")(same_origin)
    # Added last, so outermost: a browser's preflight carries no token to show the gate.
    app.middleware("http")(codec_cors(settings.web_ui_origins))
    app.mount("/static", StaticFiles(directory=HERE / "static"), name="static")
    for pages in (
        runs_pages,
        books_pages,
        watchlists_pages,
        start_pages,
        studies_pages,
        objects_pages,
    ):
        app.include_router(pages.router)
    app.include_router(codec_endpoint)

    @app.get("/health", include_in_schema=False)
    async def health() -> JSONResponse:
        """Answered as soon as the console serves (`quantdesk up` waits for it)."""
        return JSONResponse({"status": "ok"})

    @app.exception_handler(DeskError)
    async def page_error(request: Request, error: DeskError) -> HTMLResponse:
        return _error_page(request, error.status, error.message)

    @app.exception_handler(RequestValidationError)
    async def malformed(request: Request, error: RequestValidationError) -> HTMLResponse:
        problems = "; ".join(
            f"{'.'.join(str(p) for p in item['loc'][1:]) or 'request'}: {item['msg']}"
            for item in error.errors()
        )
        return _error_page(request, 422, f"malformed request: {problems}")

    @app.exception_handler(HTTPException)
    async def http_error(request: Request, error: HTTPException) -> HTMLResponse:
        return _error_page(request, error.status_code, str(error.detail))

    @app.exception_handler(QuantdeskError)
    async def project_error(request: Request, error: QuantdeskError) -> HTMLResponse:
        return _error_page(request, ERROR_STATUS.get(type(error), 400), str(error))

    @app.exception_handler(Exception)
    async def unexpected(request: Request, error: Exception) -> HTMLResponse:
        log.exception("console error on %s %s", request.method, request.url.path)
        return _error_page(
            request,
            500,
            f"the console failed on this page ({type(error).__name__}); its log says why",
        )

    return app


def _error_page(request: Request, status: int, message: str) -> HTMLResponse:
    return page(request, "error.html", status=status, code=status, message=message)
