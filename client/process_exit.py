"""Leaving a door's process (a CLI command, the console, the MCP server) with its real exit status.

A process that used a temporalio client can abort at interpreter exit (SDK
issue sdk-python #300: "PyGILState_Release", exit 134), which would replace the
command's own status. So commands flush and leave through ``os._exit``.
Quantdesk errors are shown as one red line with the fix, never a traceback, and a package of
an extra that is not installed as the extra and the command that installs it.
"""

from __future__ import annotations

import os
import sys
from collections.abc import Callable, Iterator, Mapping
from contextlib import contextmanager
from typing import NoReturn

from rich.console import Console
from rich.markup import escape

from shared.errors import MissingExtra, QuantdeskError
from shared.extras import extra_of, install_command

ERROR_CONSOLE = Console(stderr=True)


def finish(status: int) -> NoReturn:
    """Flush both streams (and the spans still batched, when tracing) and exit with
    ``status``, skipping interpreter teardown."""
    from workers.tracing import flush_traces

    flush_traces()
    sys.stdout.flush()
    sys.stderr.flush()
    os._exit(status)


@contextmanager
def fail_on_quantdesk_errors(
    statuses: Mapping[type[QuantdeskError], int] | None = None,
) -> Iterator[None]:
    """Turn a quantdesk error into a one-line message and exit status 1, or the status
    ``statuses`` gives its kind (the first kind it is one of)."""
    try:
        yield
    except QuantdeskError as error:
        # Escaped: a message may hold brackets (`pip install 'quantdesk[local-llm]'`).
        ERROR_CONSOLE.print(
            f"[bold red]error:[/] {escape(str(error))}", highlight=False, soft_wrap=True
        )
        kinds = (statuses or {}).items()
        finish(next((status for kind, status in kinds if isinstance(error, kind)), 1))


def run_command(command: Callable[[], object], name: str) -> None:
    """Run a door's ``command`` (``name`` is how the user typed it, e.g. `quantdesk mcp`);
    a missing package of an extra is said as the extra and its install command."""
    with fail_on_quantdesk_errors():
        try:
            command()
        except ModuleNotFoundError as error:
            extra = extra_of(error.name)
            if extra is None or error.name is None:
                raise
            module = error.name.partition(".")[0]
            raise MissingExtra(f"`{name}`", module, extra, install_command(extra)) from None
