"""Charts drawn in the chart process: the same bytes as drawn here, errors whole, a killed
process replaced."""

from __future__ import annotations

import os
import signal
import subprocess
import sys
from pathlib import Path

import pytest

from cli.stack.servers import wait_until
from shared.charts import offload
from shared.charts.render import render_pattern_chart, render_trend_chart
from shared.errors import ChartProcessLost, InvalidInput
from shared.market.bars import Bar
from shared.market.sources import BundledSource

ROOT = Path(__file__).resolve().parent.parent


def _bars() -> list[Bar]:
    return BundledSource().read("GOOG", "1d", lookback=60)


def test_a_chart_drawn_there_is_the_chart_drawn_here() -> None:
    bars = _bars()
    here = render_trend_chart(bars, symbol="GOOG", timeframe="1d")
    there = offload.drawn(render_trend_chart, bars, symbol="GOOG", timeframe="1d")
    assert there == here


def test_an_error_raised_there_arrives_with_its_field_and_fix() -> None:
    with pytest.raises(InvalidInput) as raised:
        offload.drawn(render_pattern_chart, _bars()[:5], symbol="GOOG", timeframe="1d")
    assert raised.value.field == "bars"
    assert "invalid input `bars`" in str(raised.value)


def _die() -> bytes:
    """Kill the chart process from inside, as the OOM killer would."""
    os.kill(os.getpid(), signal.SIGKILL)
    return b""


def test_a_killed_chart_process_fails_its_chart_as_retryable_and_is_replaced() -> None:
    with pytest.raises(ChartProcessLost) as lost:
        offload.drawn(_die)
    assert lost.value.retryable
    png = offload.drawn(render_pattern_chart, _bars(), symbol="GOOG", timeframe="1d")
    assert png.startswith(b"\x89PNG")


def test_the_chart_process_leaves_with_the_process_that_started_it(tmp_path: Path) -> None:
    """A worker that leaves through ``os._exit`` (as every quantdesk process does) leaves no
    chart process behind."""
    script = (
        "import os, sys\n"
        "from shared.charts import offload\n"
        "from tests.test_chart_offload import _pid\n"
        "print(offload.drawn(_pid), flush=True)\n"
        "os._exit(0)\n"
    )
    done = subprocess.run(
        [sys.executable, "-c", script], cwd=ROOT, capture_output=True, text=True, timeout=60
    )
    assert done.returncode == 0, done.stderr
    child = int(done.stdout.strip())
    assert wait_until(lambda: not Path(f"/proc/{child}").exists(), timeout=10)


def _pid() -> int:
    return os.getpid()
