"""The real `quantdesk` CLI as a separate process, as a user runs it from the repository:
for the tests that drive `up`, `status` and `run` end to end, on this host or on another
(``on``: the command that runs a program there, ``tests.hosts.Host.argv``)."""

from __future__ import annotations

import subprocess
import sys
from collections.abc import Mapping, Sequence
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
CLI_TIMEOUT = 360
"""`up` may wait minutes on a loaded machine (health timeouts of 90 s and 120 s, a 30 s
reconnect grace before a stuck worker is restarted)."""


def quantdesk_argv(*args: str, on: Sequence[str] = ()) -> list[str]:
    """The command line of ``quantdesk ARGS`` run by this interpreter, ``on`` another host."""
    return [*on, sys.executable, "-m", "cli.main", *args]


def run_quantdesk(
    env: Mapping[str, str], *args: str, timeout: float = CLI_TIMEOUT, on: Sequence[str] = ()
) -> subprocess.CompletedProcess[str]:
    """``quantdesk ARGS`` run to its end with ``env``, its output captured as text."""
    return subprocess.run(
        quantdesk_argv(*args, on=on),
        cwd=ROOT,
        env=dict(env),
        capture_output=True,
        text=True,
        timeout=timeout,
    )
