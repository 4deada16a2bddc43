"""`quantdesk prompt show AGENT [--symbol S --as-of T]`: the exact prompt a run would send.

No model is called and nothing is started: the agent's inputs are rehearsed
offline (``shared.agents.pipeline.rehearsal``) from the data this machine's
settings route to (bundled, local or sim), read strictly as of T. What upstream
agents would have answered comes from their offline rules, and the header says so.
Change a prompt in the agent's spec (``shared/agents/pipeline/<agent>.py``) or its
kind's builder (``shared/agents/pipeline/prompts.py``) and run this to see it.
"""

from __future__ import annotations

from datetime import UTC, datetime

import typer

from cli.exit import fail_on_quantdesk_errors, finish
from shared.config import load_settings

prompt_app = typer.Typer(help="See the prompts agents are sent.", no_args_is_help=True)


@prompt_app.command("show")
def show(
    agent: str = typer.Argument(..., help="an agent's name, e.g. bull_researcher"),
    symbol: str = typer.Option("GOOG", help="the ticker a run would analyse"),
    as_of: datetime | None = typer.Option(None, help="analysis time, UTC (default: latest bar)"),
) -> None:
    """Print AGENT's system and user messages, as a run of SYMBOL as of AS_OF sends them."""
    with fail_on_quantdesk_errors():
        from shared.agents.pipeline.rehearsal import rehearse, render_rehearsed
        from shared.data.analysis_time import analysis_time
        from shared.data.factory import build_router
        from shared.tools.registry import ToolServices

        router = build_router(load_settings())
        ticker = symbol.strip().upper()
        # Typer gives a naive time; the run reads it as UTC.
        given = as_of.replace(tzinfo=as_of.tzinfo or UTC) if as_of else None
        when = analysis_time(router, ticker, given).as_of
        print(render_rehearsed(rehearse(agent, ticker, when, ToolServices(router=router))), end="")
    finish(0)
