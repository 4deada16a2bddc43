"""The console as a process: `quantdesk console` handing over to ``python -m console`` and
refusing to listen beyond loopback without a token, and the console as one of `up`'s
components (its launch, its ports, its health)."""

from __future__ import annotations

import asyncio
import os
import subprocess
import sys
from pathlib import Path

import pytest

from cli.stack.components import TemporalProbe, plan
from cli.stack.console import CONSOLE, console_server
from client.access import check_bind
from shared.config import load_settings
from shared.errors import ConfigError

pytestmark = pytest.mark.asyncio(loop_scope="session")
ROOT = Path(__file__).resolve().parent.parent


async def test_quantdesk_console_refuses_to_listen_beyond_loopback_without_a_token(
    tmp_path: Path,
) -> None:
    run = await asyncio.to_thread(
        subprocess.run,
        [sys.executable, "-m", "cli.main", "console"],
        cwd=ROOT,
        env={
            **os.environ,
            "QUANTDESK_DATA_DIR": str(tmp_path),
            "QUANTDESK_CONSOLE__HOST": "0.0.0.0",
        },
        capture_output=True,
        text=True,
        timeout=120,
    )
    assert run.returncode == 1
    assert "QUANTDESK_CONSOLE__TOKEN" in run.stderr and "0.0.0.0" in run.stderr


async def test_up_runs_the_console_as_a_component(tmp_path: Path) -> None:
    settings = load_settings(data_dir=tmp_path, console={"port": 18400})
    with TemporalProbe(settings) as probe:
        [console] = [c for c in plan(settings, [], probe) if c.name == CONSOLE]
    assert console.address == "127.0.0.1:18400"
    assert console.launch is not None
    launch = console.launch()
    assert launch.argv[-1] == "console"
    assert launch.env["QUANTDESK_CONSOLE__PORT"] == "18400"
    assert [claim.setting for claim in launch.ports] == [
        "QUANTDESK_CONSOLE__PORT",
        "QUANTDESK_METRICS__UP_PORTS_FROM",  # its /metrics, the first of `up`'s metrics ports
    ]
    assert launch.env["QUANTDESK_METRICS__PORT"] == "9470"
    assert console.metrics == "127.0.0.1:9470"
    assert console.check(None) == "http://127.0.0.1:18400/health does not answer"
    with pytest.raises(ConfigError):
        console_server(load_settings(data_dir=tmp_path, console={"host": "0.0.0.0"}))


async def test_a_console_beyond_loopback_needs_a_token() -> None:
    with pytest.raises(ConfigError) as refused:
        check_bind(load_settings(console={"host": "0.0.0.0"}))
    assert "the console would listen on 0.0.0.0" in refused.value.message
    assert "QUANTDESK_CONSOLE__TOKEN" in str(refused.value)
    check_bind(load_settings(console={"host": "0.0.0.0", "token": "t0ken"}))
