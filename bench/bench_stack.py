"""How light the embedded stack is: `quantdesk up` from nothing and with a data dir already
there, and what each component holds in memory once idle.

    .venv/bin/python bench/bench_stack.py [--rounds 2] [--settle 5] [--env NAME=VALUE ...]

Each round starts a stack of its own (a temporary data dir on free loopback ports, the
real CLI as a user types it), times `up` until every component is healthy, lets it idle
``--settle`` seconds, reads each component's resident memory from ``/proc`` (the pid `up`
recorded, and that process's children), times a second `up` after `down` (data dir kept),
then stops it. ``--env`` adds settings (e.g. a key that makes a provider's worker serve).
"""

from __future__ import annotations

import argparse
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))

from tests.cli_process import quantdesk_argv, stack_env, stack_ports, stack_settings  # noqa: E402
from tests.servers import free_port_base  # noqa: E402

PAGE_KB = 4


def _cli(env: dict[str, str], *args: str) -> tuple[float, subprocess.CompletedProcess[str]]:
    started = time.monotonic()
    done = subprocess.run(
        quantdesk_argv(*args), env=env, capture_output=True, text=True, timeout=600, cwd=ROOT
    )
    return time.monotonic() - started, done


def _children(pid: int) -> list[int]:
    found = [pid]
    for task in Path(f"/proc/{pid}/task").glob("*"):
        children = (task / "children").read_text().split() if (task / "children").exists() else []
        for child in children:
            found += _children(int(child))
    return found


def _rss_mb(pid: int) -> float:
    """Resident memory of ``pid`` and its descendants, in MB (VmRSS, shared pages counted
    in each: what `ps` shows)."""
    total_kb = 0
    for one in _children(pid):
        try:
            status = Path(f"/proc/{one}/status").read_text()
        except OSError:
            continue
        for line in status.splitlines():
            if line.startswith("VmRSS:"):
                total_kb += int(line.split()[1])
    return total_kb / 1024


def _memory(data_dir: Path) -> dict[str, float]:
    import json

    rss: dict[str, float] = {}
    for pid_file in sorted((data_dir / "run").glob("*.pid")):
        pid = json.loads(pid_file.read_text())["pid"]
        rss[pid_file.stem] = _rss_mb(pid)
    return rss


def one_round(settle: float, extra: dict[str, str]) -> tuple[float, float, dict[str, float]]:
    """(first `up` seconds, second `up` seconds, idle MB by component)."""
    with tempfile.TemporaryDirectory(prefix="bench-stack-") as folder:
        data_dir = Path(folder) / "data"
        base = free_port_base(lambda base: stack_ports(data_dir, base), high=29000)
        own, _ = stack_settings(data_dir, base)
        env = stack_env(own, **extra)
        first, up = _cli(env, "up")
        if up.returncode != 0:
            raise SystemExit(f"`up` failed:\n{up.stdout}\n{up.stderr}")
        try:
            time.sleep(settle)
            memory = _memory(data_dir)
            _cli(env, "down")
            again, up = _cli(env, "up")
            if up.returncode != 0:
                raise SystemExit(f"second `up` failed:\n{up.stdout}\n{up.stderr}")
        finally:
            _cli(env, "down")
        return first, again, memory


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--rounds", type=int, default=2)
    parser.add_argument("--settle", type=float, default=5.0, help="idle seconds before reading")
    parser.add_argument("--env", action="append", default=[], help="NAME=VALUE for the stack")
    args = parser.parse_args()
    extra = dict(item.split("=", 1) for item in args.env)
    firsts, agains, memories = [], [], []
    for _ in range(args.rounds):
        first, again, memory = one_round(args.settle, extra)
        firsts.append(first)
        agains.append(again)
        memories.append(memory)
    print(
        f"up from nothing      : {statistics.median(firsts):6.1f} s  (rounds: "
        + ", ".join(f"{s:.1f}" for s in firsts)
        + ")"
    )
    print(
        f"up with its data dir : {statistics.median(agains):6.1f} s  (rounds: "
        + ", ".join(f"{s:.1f}" for s in agains)
        + ")"
    )
    last = memories[-1]
    print(f"idle stack           : {sum(last.values()):6.0f} MB in {len(last)} components")
    for name, mb in sorted(last.items(), key=lambda item: -item[1]):
        print(f"  {name:<24} {mb:6.0f} MB")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
