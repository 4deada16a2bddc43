"""What a process of the stack holds and how long it has run, read from ``/proc``.

`quantdesk status` shows both per component, and ``bench/bench_stack.py`` sums them: a
laptop's owner wants to know what the desk costs at rest. A component's memory counts its
descendants too (the chart process a worker spawns, the volume server SeaweedFS runs),
each at its resident size as ``ps`` shows it (shared pages counted in each). Where there
is no ``/proc`` (macOS) nothing is known, and the table says so with a dash.
"""

from __future__ import annotations

import os
from pathlib import Path

from pydantic import BaseModel

PROC = Path("/proc")


class ProcessUsage(BaseModel):
    """One process tree's resident memory and its root's age."""

    rss_mb: float
    up_seconds: float


def _descendants(pid: int) -> list[int]:
    """``pid`` and every process below it."""
    found = [pid]
    for task in (PROC / str(pid) / "task").glob("*"):
        try:
            children = (task / "children").read_text().split()
        except OSError:
            continue
        for child in children:
            found += _descendants(int(child))
    return found


def _rss_kb(pid: int) -> int:
    try:
        status = (PROC / str(pid) / "status").read_text()
    except OSError:
        return 0
    for line in status.splitlines():
        if line.startswith("VmRSS:"):
            return int(line.split()[1])
    return 0


def _age_seconds(pid: int) -> float | None:
    """Seconds since ``pid`` started: its start (in clock ticks after boot) against the uptime."""
    try:
        stat = (PROC / str(pid) / "stat").read_text()
        uptime = float((PROC / "uptime").read_text().split()[0])
    except OSError:
        return None
    # The command name (field 2) may hold spaces; the fields after its ')' are plain.
    fields = stat.rsplit(")", 1)[1].split()
    started_ticks = int(fields[19])  # field 22 of proc(5), counted from field 3
    return max(0.0, uptime - started_ticks / os.sysconf("SC_CLK_TCK"))


def usage_of(pid: int) -> ProcessUsage | None:
    """Memory of ``pid``'s tree and its age; None where ``/proc`` cannot tell (gone, macOS)."""
    age = _age_seconds(pid) if PROC.is_dir() else None
    if age is None:
        return None
    total_kb = sum(_rss_kb(one) for one in _descendants(pid))
    return ProcessUsage(rss_mb=total_kb / 1024, up_seconds=age)


def shown_duration(seconds: float) -> str:
    """``42 s``, ``3 min 5 s``, ``2 h 10 min``, ``3 d 4 h``: as long as a person needs."""
    whole = int(seconds)
    if whole < 60:
        return f"{seconds:.0f} s"
    minutes, secs = divmod(whole, 60)
    if minutes < 60:
        return f"{minutes} min {secs} s"
    hours, minutes = divmod(minutes, 60)
    if hours < 24:
        return f"{hours} h {minutes} min"
    days, hours = divmod(hours, 24)
    return f"{days} d {hours} h"
