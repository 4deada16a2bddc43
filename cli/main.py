"""The ``quantdesk`` command: the user's door to the stack, the workers and the flows."""

from __future__ import annotations

import asyncio
import sys

import typer

from cli.backtest import register as register_backtest
from cli.broker import broker_app
from cli.budget import budget_app
from cli.codec import codec_app
from cli.data import data_app
from cli.doors import HANDED_OVER, hand_over
from cli.evaluate import eval_app
from cli.model import model_app
from cli.notify import notify_app
from cli.portfolio import portfolio_app
from cli.portfolio import register as register_approval
from cli.prompt import prompt_app
from cli.report import register as register_report_command
from cli.run import run_app
from cli.runs import register as register_run_commands
from cli.schedule import schedule_app
from cli.stack.commands import parse_roles
from cli.stack.commands import register as register_stack_commands
from cli.storage import storage_app
from cli.watchlist import watchlist_app
from client.process_exit import fail_on_quantdesk_errors, finish, run_command
from shared.config import load_settings
from workers.roles import ROLE_NAMES

app = typer.Typer(
    help="Multi-agent LLM trading analysis as durable Temporal workflows.",
    no_args_is_help=True,
    pretty_exceptions_enable=False,
)


@app.callback()
def _terminal(ctx: typer.Context) -> None:
    """Every command but ``worker`` talks to a person: no SDK retry chatter on its screen."""
    if ctx.invoked_subcommand != "worker":
        from workers.client import quiet_client_logs

        quiet_client_logs()


register_stack_commands(app)
register_run_commands(app)
register_report_command(app)
register_backtest(app)
register_approval(app)
app.add_typer(run_app, name="run")
app.add_typer(schedule_app, name="schedule")
app.add_typer(eval_app, name="eval")
app.add_typer(portfolio_app, name="portfolio")
app.add_typer(watchlist_app, name="watchlist")
app.add_typer(storage_app, name="storage")
app.add_typer(broker_app, name="broker")
app.add_typer(model_app, name="model")
app.add_typer(prompt_app, name="prompt")
app.add_typer(codec_app, name="codec")
app.add_typer(data_app, name="data")
app.add_typer(notify_app, name="notify")
app.add_typer(budget_app, name="budget")


@app.command()
def worker(
    role: str = typer.Option(
        ..., help=f"one of: {', '.join(ROLE_NAMES)}; several, comma-separated, in one process"
    ),
) -> None:
    """Run one worker process of ROLE until SIGTERM (start more to scale a provider); with
    QUANTDESK_METRICS__PORT set, its Prometheus metrics are served there."""
    from workers.client import connect
    from workers.main import plans_for, run_worker
    from workers.metrics_exporter import metrics_runtime

    with fail_on_quantdesk_errors():
        roles = parse_roles(role, option="--role")
        settings = load_settings()
        plans = plans_for(roles, settings)
        runtime = metrics_runtime(settings.metrics)

        async def main() -> None:
            client = await connect(settings, runtime)
            await run_worker(client, plans, settings)

        asyncio.run(main())
    finish(0)


@app.command("local-llm")
def local_llm() -> None:
    """Serve the GGUF model of QUANTDESK_LOCAL_LLM__MODEL on loopback until SIGTERM (`up` runs it)."""
    from cli.stack.local_llm import serve

    with fail_on_quantdesk_errors():
        serve(load_settings(), say=lambda line: print(line, flush=True))
    finish(0)


@app.command("console", **HANDED_OVER)
def console(ctx: typer.Context) -> None:
    """Serve the web console (QUANTDESK_CONSOLE__PORT, default 8400) until SIGTERM (`up` runs it)."""
    hand_over("console", ctx.args)


@app.command("mcp", **HANDED_OVER)
def mcp(ctx: typer.Context) -> None:
    """Serve the desk's runs, reports, books and approvals to an MCP host: over stdio, or
    streamable HTTP with --http [--port N] (`quantdesk mcp --help` for the options)."""
    hand_over("mcp", ctx.args)


def invoked_command(argv: list[str]) -> str:
    """``quantdesk`` and the subcommand words of ``argv`` (up to the first option)."""
    words = []
    for word in argv[1:]:
        if word.startswith("-"):
            break
        words.append(word)
    return " ".join(["quantdesk", *words[:2]])


def main() -> None:
    """The `quantdesk` command: ``app``, where a package of an extra that is not installed is
    said as the extra and the command that installs it, never as a traceback."""
    run_command(app, invoked_command(sys.argv))


if __name__ == "__main__":
    main()
