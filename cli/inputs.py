"""What every `quantdesk` command that starts a run builds the same way: its workflow id,
its as-of time, its LLM choice, and the check of its input before anything starts."""

from __future__ import annotations

import uuid
from datetime import UTC, datetime
from typing import Annotated, Any

import typer
from pydantic import BaseModel, ValidationError

from shared.config import Settings
from shared.validation_errors import invalid_input

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


def run_terms(budget: float | None, tokens: int | None, language: str | None) -> dict[str, Any]:
    """The input fields every flow shares (``workflows.run_terms``), those given."""
    given = {"budget_usd": budget, "budget_tokens": tokens, "language": language}
    return {name: value for name, value in given.items() if value is not None}


def new_workflow_id(*parts: str) -> str:
    """``<parts>-<UTC stamp>-<6 hex>``: readable in the Web UI's list, unique per start."""
    stamp = datetime.now(UTC).strftime("%Y%m%dT%H%M%S")
    return "-".join([*parts, stamp, uuid.uuid4().hex[:6]])


def utc_iso(moment: datetime) -> str:
    """An option's time as ISO 8601; a time given without a zone is taken as UTC."""
    return (moment if moment.tzinfo else moment.replace(tzinfo=UTC)).isoformat()


def llm_choice(settings: Settings, provider: str | None, **models: str | None) -> dict[str, Any]:
    """The ``llm`` input: the provider (default: the settings') and the models given."""
    return {"provider": provider or settings.default_provider, **models}


def check_input(
    model: type[BaseModel], payload: dict[str, Any], *, as_of: datetime | None = None
) -> None:
    """Validate ``payload`` as the workflow will, so a bad option fails at once, without a
    server, naming the field and the value given (``timeframe '7x' is not one of ...``).
    An ``as_of`` given is set first (UTC ISO); none leaves the workflow's default."""
    if as_of is not None:
        payload["as_of"] = utc_iso(as_of)
    try:
        model.model_validate(payload)
    except ValidationError as error:
        raise invalid_input(error) from None


def print_estimate(settings: Settings, flow: str, payload: dict[str, Any]) -> None:
    """``--estimate``: what a run of ``flow`` with ``payload`` should cost, printed."""
    import asyncio

    from rich.console import Console

    from cli.estimate import estimate, estimate_table
    from workers.client import connect

    async def read() -> Any:
        return estimate_table(await estimate(await connect(settings), settings, flow, payload))

    Console().print(asyncio.run(read()))
