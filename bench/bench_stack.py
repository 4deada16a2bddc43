"""How light the embedded stack is: `quantdesk up` from nothing and with a data dir already
there, and what each component holds in memory once idle.

    .venv/bin/python bench/bench_stack.py [--rounds 2] [--settle 5] [--desk 100] [--env NAME=VALUE ...]

Each round starts a stack of its own (a temporary data dir on free loopback ports, the
real CLI as a user types it), times `up` until every component is healthy, lets it idle
``--settle`` seconds, reads each component's resident memory from ``/proc`` (the pid `up`
recorded, and that process's children), times a second `up` after `down` (data dir kept),
then stops it. ``--env`` adds settings (e.g. a key that makes a provider's worker serve).
``--desk N`` runs one offline AutoRun of N names in the first round, between the idle read
and `down`, and reads the memory again after it.
"""

from __future__ import annotations

import argparse
import json
import statistics
import subprocess
import sys
import tempfile
import time
from dataclasses import dataclass, field
from datetime import UTC, datetime
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))

from bench.desk_names import desk_names, write_local_data  # noqa: E402
from cli.stack.process_usage import usage_of  # noqa: E402
from tests.cli_process import free_stack_base, quantdesk_argv, stack_env, stack_settings  # noqa: E402

DESK_AS_OF = datetime(2012, 6, 1, tzinfo=UTC)


def _cli(env: dict[str, str], *args: str) -> tuple[float, subprocess.CompletedProcess[str]]:
    started = time.monotonic()
    done = subprocess.run(
        quantdesk_argv(*args), env=env, capture_output=True, text=True, timeout=600, cwd=ROOT
    )
    return time.monotonic() - started, done


def _memory(data_dir: Path) -> dict[str, float]:
    """Resident MB of each component `up` recorded (with its children), as `status` shows."""
    rss: dict[str, float] = {}
    for pid_file in sorted((data_dir / "run").glob("*.pid")):
        usage = usage_of(json.loads(pid_file.read_text())["pid"])
        rss[pid_file.stem] = usage.rss_mb if usage else 0.0
    return rss


@dataclass
class Round:
    """One round's measures."""

    first: float
    again: float
    idle: dict[str, float]
    desk: dict[str, float] = field(default_factory=dict)
    desk_seconds: float = 0.0


def _run_desk(env: dict[str, str], data_dir: Path, names: int) -> float:
    """Seconds one offline AutoRun of ``names`` names takes on the stack (every analyst, no
    Scan, no Reflect), the names past the sim's from local files as ``bench_desk`` writes."""
    symbols = desk_names(names)
    write_local_data(data_dir / "data", symbols, DESK_AS_OF)
    seconds, done = _cli(
        env,
        *("run", "autorun", "--symbols", ",".join(symbols), "--no-scan", "--no-reflect"),
        *("--as-of", DESK_AS_OF.date().isoformat(), "--concurrency", str(min(names, 32))),
        *("--portfolio", "bench", "--out", str(data_dir / "reports")),
    )
    if done.returncode != 0:
        raise SystemExit(f"the desk failed:\n{done.stdout[-3000:]}\n{done.stderr[-3000:]}")
    return seconds


def one_round(settle: float, extra: dict[str, str], desk: int) -> Round:
    """Time `up` from nothing, read the idle memory (and after a desk of ``desk`` names), time
    `up` again after `down`."""
    with tempfile.TemporaryDirectory(prefix="bench-stack-") as folder:
        data_dir = Path(folder) / "data"
        base = free_stack_base(data_dir)
        own, _ = stack_settings(data_dir, base)
        env = stack_env(own, **extra)
        first, up = _cli(env, "up")
        if up.returncode != 0:
            raise SystemExit(f"`up` failed:\n{up.stdout}\n{up.stderr}")
        try:
            time.sleep(settle)
            measured = Round(first, 0.0, _memory(data_dir))
            if desk:
                measured.desk_seconds = _run_desk(env, data_dir, desk)
                measured.desk = _memory(data_dir)
            _cli(env, "down")
            measured.again, up = _cli(env, "up")
            if up.returncode != 0:
                raise SystemExit(f"second `up` failed:\n{up.stdout}\n{up.stderr}")
        finally:
            _cli(env, "down")
        return measured


def _seconds(label: str, values: list[float]) -> None:
    rounds = ", ".join(f"{s:.1f}" for s in values)
    print(f"{label:<21}: {statistics.median(values):6.1f} s  (rounds: {rounds})")


def _memory_table(label: str, memory: dict[str, float]) -> None:
    print(f"{label:<21}: {sum(memory.values()):6.0f} MB in {len(memory)} components")
    for name, mb in sorted(memory.items(), key=lambda item: -item[1]):
        print(f"  {name:<24} {mb:6.0f} MB")


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--rounds", type=int, default=2)
    parser.add_argument("--settle", type=float, default=5.0, help="idle seconds before reading")
    parser.add_argument("--env", action="append", default=[], help="NAME=VALUE for the stack")
    parser.add_argument(
        "--desk", type=int, default=0, help="names of an AutoRun run once, then memory again"
    )
    args = parser.parse_args()
    extra = dict(item.split("=", 1) for item in args.env)
    rounds = [one_round(args.settle, extra, args.desk if i == 0 else 0) for i in range(args.rounds)]
    _seconds("up from nothing", [r.first for r in rounds])
    _seconds("up with its data dir", [r.again for r in rounds])
    _memory_table("idle stack", rounds[-1].idle)
    if args.desk:
        print(f"desk of {args.desk} names  : {rounds[0].desk_seconds:6.1f} s (offline, no latency)")
        _memory_table(f"after {args.desk} names", rounds[0].desk)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
