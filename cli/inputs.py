"""What every `quantdesk` command that starts a run builds the same way: its workflow id,
its as-of time, its LLM choice, and the check of its input before anything starts."""

from __future__ import annotations

from typing import Annotated, Any

import typer

from shared.config import Settings

ProviderOption = Annotated[
    str | None, typer.Option(help="LLM provider (default: settings, offline)")
]
"""The ``--provider`` option of every command that starts a run."""
BudgetOption = Annotated[
    float | None,
    typer.Option(
        "--budget", help="spending limit in USD of this run and the runs it starts (waits there)"
    ),
]
BudgetTokensOption = Annotated[
    int | None, typer.Option(help="token limit of this run and the runs it starts")
]
EstimateOption = Annotated[
    bool,
    typer.Option(
        "--estimate",
        help="print the expected calls, tokens and cost (from past runs like it) and start nothing",
    ),
]
LanguageOption = Annotated[
    str | None, typer.Option(help="language of the prose, e.g. German (default: settings)")
]


def print_estimate(settings: Settings, flow: str, payload: dict[str, Any]) -> None:
    """``--estimate``: what a run of ``flow`` with ``payload`` should cost, printed."""
    import asyncio

    from rich.console import Console

    from cli.estimate import estimate, estimate_table
    from workers.client import connect

    async def read() -> Any:
        return estimate_table(await estimate(await connect(settings), settings, flow, payload))

    Console().print(asyncio.run(read()))
