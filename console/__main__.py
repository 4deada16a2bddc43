"""`python -m console` (what `quantdesk console` and `quantdesk up` run): the console in the
foreground until SIGTERM or Ctrl-C, with the settings of the environment."""

from __future__ import annotations

import typer

from client.process_exit import finish, run_command

app = typer.Typer(add_completion=False, pretty_exceptions_enable=False)


@app.command()
def console() -> None:
    """Serve the web console on QUANTDESK_CONSOLE__HOST:QUANTDESK_CONSOLE__PORT (default
    127.0.0.1:8400); beyond loopback only with QUANTDESK_CONSOLE__TOKEN set."""
    from console.server import serve
    from shared.config import load_settings

    serve(load_settings(), say=lambda line: print(line, flush=True))
    finish(0)


def main() -> None:
    """The command, its errors said in one line."""
    run_command(lambda: app(prog_name="quantdesk console"), "quantdesk console")


if __name__ == "__main__":
    main()
