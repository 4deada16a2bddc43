"""Evaluations and backtests: their tables side by side, each linking to its run page (where
the plot and the full Markdown table are)."""

from __future__ import annotations

from fastapi import APIRouter, Request
from fastapi.responses import HTMLResponse

from client.studies import studies
from console.web import desk_of, page

router = APIRouter()


@router.get("/studies", response_class=HTMLResponse)
async def studies_page(request: Request) -> HTMLResponse:
    """Every recent evaluation and backtest."""
    desk = desk_of(request)
    return page(
        request,
        "studies.html",
        evaluations=await studies(desk, "Evaluate"),
        backtests=await studies(desk, "Backtest"),
    )
