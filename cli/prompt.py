"""`quantdesk prompt show AGENT [flags]`: the exact prompt a run would send.

No model is called and nothing is started: the agent's inputs are rehearsed
offline (``client.prompt_preview``) from the data its flow's run reads, strictly as
of T. What upstream agents would have answered comes from their offline rules, and
the header says so. Change a prompt in the agent's spec (``shared/agents/...``) or
its kind's builder and run this to see it.
"""

from __future__ import annotations

from datetime import UTC, datetime
from enum import StrEnum

import typer

from client.process_exit import fail_on_quantdesk_errors, finish
from shared.config import load_settings
from shared.market.bars import Timeframe
from shared.memory import MemoryRole


class ChartForm(StrEnum):
    """How a QuantAgent chart agent is shown its chart (``ChartInput``)."""

    IMAGE = "image"
    TEXT = "text"


prompt_app = typer.Typer(help="See the prompts agents are sent.", no_args_is_help=True)


@prompt_app.command("show")
def show(
    agent: str = typer.Argument(..., help="an agent's name, e.g. bull_researcher"),
    symbol: str | None = typer.Option(
        None, help="Pipeline, QuantAgent: the ticker a run would analyse (default GOOG)"
    ),
    as_of: datetime | None = typer.Option(None, help="analysis time, UTC (default: latest bar)"),
    timeframe: Timeframe | None = typer.Option(None, help="QuantAgent: bar length (default 1d)"),
    book: str | None = typer.Option(
        None, help="Portfolio: a book in the project's database, read-only (default: a fresh one)"
    ),
    role: MemoryRole | None = typer.Option(
        None, help="reflector: the role whose decision is graded (default portfolio_manager)"
    ),
    chart_input: ChartForm | None = typer.Option(
        None,
        help="pattern/trend agent: image (default, a vision model) or text (a model without)",
    ),
) -> None:
    """Print AGENT's system and user messages, as its flow's run as of AS_OF sends them."""
    with fail_on_quantdesk_errors():
        from client.prompt_preview import PromptRequest, preview
        from shared.agents.rehearsed import render_rehearsed
        from shared.data.factory import build_router
        from shared.tools.registry import ToolServices

        request = PromptRequest(
            agent=agent,
            # Typer gives a naive time; the run reads it as UTC.
            as_of=as_of.replace(tzinfo=as_of.tzinfo or UTC) if as_of else None,
            symbol=symbol,
            timeframe=timeframe,
            chart_input=chart_input.value if chart_input else None,
            role=role,
            book=book,
        )
        settings = load_settings()
        services = ToolServices(router=build_router(settings))
        print(render_rehearsed(preview(request, settings, services)), end="")
    finish(0)
