"""CPU seconds spent by this process and every process it started, read from ``/proc``.

On a 2-core machine a desk is bound by CPU, and its wall time moves with whatever else
the machine does; the CPU each process spent over the run moves much less, so it is what
a change is judged by. Processes are named by what they are in a bench: this process (the
workers), the Temporal dev server, the S3 server, the chart process (a Python child).
"""

from __future__ import annotations

import os
from dataclasses import dataclass
from pathlib import Path

TICKS = os.sysconf("SC_CLK_TCK")
NAMES = {"temporal": "dev server", "weed": "S3", "python": "chart process"}
"""A child's ``comm`` → what it is in a bench (``python`` children draw charts)."""


@dataclass(frozen=True)
class Sample:
    """CPU seconds (user + system) of each process of the tree, by pid, with its name."""

    seconds: dict[int, tuple[str, float]]

    def since(self, before: Sample) -> dict[str, float]:
        """CPU seconds each kind of process spent after ``before``, largest first."""
        spent: dict[str, float] = {}
        for pid, (name, now) in self.seconds.items():
            earlier = before.seconds.get(pid, (name, 0.0))[1]
            spent[name] = spent.get(name, 0.0) + now - earlier
        return dict(sorted(spent.items(), key=lambda item: -item[1]))


def _stat(pid: int) -> tuple[str, int, float] | None:
    """(comm, parent pid, CPU seconds) of ``pid``, or None if it has gone."""
    try:
        text = Path(f"/proc/{pid}/stat").read_text()
    except OSError:
        return None
    # comm is in parentheses and may hold spaces; the fields after it are space-separated.
    comm = text[text.index("(") + 1 : text.rindex(")")]
    fields = text[text.rindex(")") + 2 :].split()
    return comm, int(fields[1]), (int(fields[11]) + int(fields[12])) / TICKS


def sample() -> Sample:
    """This process and its descendants, now."""
    me = os.getpid()
    stats = {int(p.name): _stat(int(p.name)) for p in Path("/proc").iterdir() if p.name.isdigit()}
    parents = {pid: stat[1] for pid, stat in stats.items() if stat is not None}

    def mine(pid: int) -> bool:
        while pid > 1:
            if pid == me:
                return True
            pid = parents.get(pid, 0)
        return False

    seconds: dict[int, tuple[str, float]] = {}
    for pid, stat in stats.items():
        if stat is not None and mine(pid):
            name = "workers" if pid == me else NAMES.get(stat[0], stat[0])
            seconds[pid] = (name, stat[2])
    return Sample(seconds)


def line(spent: dict[str, float], calls: int) -> str:
    """The bench's CPU line: each kind of process, the total, and the total per LLM call."""
    total = sum(spent.values())
    parts = ", ".join(f"{name} {seconds:.1f} s" for name, seconds in spent.items())
    per_call = f"; {1000 * total / calls:.0f} ms per LLM call" if calls else ""
    return f"CPU                 {total:8.1f} s ({parts}){per_call}"
