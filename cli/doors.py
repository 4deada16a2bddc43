"""`quantdesk console` and `quantdesk mcp`: the CLI hands the process over to another door.

The console and the MCP server are doors of their own (``console``, ``mcp_server``); the CLI
never imports them. Their commands replace this process with ``python -m <door>``, so the
door keeps the process id, the terminal and stdio (an MCP host talks to it over stdin and
stdout) and exits with its own status.
"""

from __future__ import annotations

import os
import sys
from typing import Any, NoReturn

DOOR_MODULES = {"console": "console", "mcp": "mcp_server"}
"""``quantdesk`` command → the door it hands over to (whose ``__main__`` reads the arguments)."""
HANDED_OVER: dict[str, Any] = {
    "context_settings": {"allow_extra_args": True, "ignore_unknown_options": True},
    "add_help_option": False,
}
"""A command whose arguments (``--help`` included) are the door's to read."""


def hand_over(command: str, args: list[str]) -> NoReturn:
    """Replace this process with ``python -m <the command's door> args``."""
    sys.stdout.flush()
    sys.stderr.flush()
    os.execv(sys.executable, [sys.executable, "-m", DOOR_MODULES[command], *args])
