"""What every page shares: the templates with their filters, the desk, the page answer."""

from __future__ import annotations

from decimal import Decimal
from pathlib import Path
from typing import Any

from fastapi import Request
from fastapi.responses import HTMLResponse
from fastapi.templating import Jinja2Templates
from markdown_it import MarkdownIt

from client.desk import Desk

HERE = Path(__file__).parent
templates = Jinja2Templates(directory=HERE / "templates")
# Agents write Markdown; raw HTML in it is shown as text, never run.
_markdown = MarkdownIt("commonmark", {"html": False}).enable("table")


def _money(value: Any) -> str:
    try:
        return f"{Decimal(str(value)):,.2f}"
    except ArithmeticError:
        return str(value)


def _pct(value: Any, places: int = 1) -> str:
    return "" if value is None else f"{float(value):.{places}%}"


def _duration(seconds: float | None) -> str:
    if seconds is None:
        return "?"
    minutes, rest = divmod(int(seconds), 60)
    return f"{minutes}m{rest:02d}s" if minutes else f"{seconds:.1f}s"


templates.env.filters.update(
    markdown=lambda text: _markdown.render(str(text or "")),
    money=_money,
    pct=_pct,
    duration=_duration,
)


def desk_of(request: Request) -> Desk:
    """The app's desk (``console.app.create_app`` puts it there)."""
    desk: Desk = request.app.state.desk
    return desk


def page(request: Request, name: str, status: int = 200, **context: Any) -> HTMLResponse:
    """``templates/<name>`` rendered with ``context``."""
    return templates.TemplateResponse(request, name, context, status_code=status)
