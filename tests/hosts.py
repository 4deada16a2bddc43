"""Hosts on one machine: network namespaces joined by a bridge, for the multi-host tests.

Each host has its own network stack (its own loopback, its own address on the
bridge), its own host name (a UTS namespace per process, set as the process
starts) and the machine's file system. A server bound to a host's address is
reachable from the other hosts and from the test process (the bridge's address is
in the root namespace); one bound to a host's loopback is not. Making namespaces
needs root and iproute2 (``ip``); ``namespace_problem`` says why they cannot be
made, for a skip with the reason.
"""

from __future__ import annotations

import os
import random
import shutil
import signal
import subprocess
from collections.abc import Iterator, Sequence
from contextlib import ExitStack, contextmanager, suppress
from dataclasses import dataclass

SUBNET_PREFIX = "10.231"
"""The /16 the bridges are cut from: one /24 per set of hosts, picked at random so that
concurrent test sessions on one machine never share one."""
SET_UP_TIMEOUT = 10.0


@dataclass(frozen=True)
class Host:
    """One host: its name, network namespace and address on the bridge."""

    name: str
    netns: str
    address: str

    def argv(self, command: Sequence[str]) -> list[str]:
        """``command`` run on this host: in its namespace, under its host name.

        ``ip netns exec``, ``unshare`` and ``sh -c exec`` each replace themselves, so the
        process started is ``command``'s own pid (a signal to it reaches the command)."""
        named = 'hostname "$0" && exec "$@"'
        inside = ["ip", "netns", "exec", self.netns, "unshare", "--uts"]
        return [*inside, "sh", "-c", named, self.name, *command]


def namespace_problem() -> str | None:
    """Why this process cannot make network namespaces, or None when it can."""
    if os.geteuid() != 0:
        return "network namespaces need root"
    for tool in ("ip", "unshare"):
        if shutil.which(tool) is None:
            return f"`{tool}` is not installed (Debian: iproute2, util-linux)"
    return None


def _ip(*args: str) -> None:
    subprocess.run(["ip", *args], check=True, capture_output=True, timeout=SET_UP_TIMEOUT)


def _free_subnet() -> int:
    """A third octet whose bridge does not exist yet (a concurrent session owns the others)."""
    taken = subprocess.run(
        ["ip", "-o", "link", "show"], check=True, capture_output=True, text=True
    ).stdout
    free = [n for n in range(1, 255) if f"qdbr{n}:" not in taken]
    if not free:
        raise RuntimeError("every qdbr bridge name is taken: stale test networks? `ip link`")
    return random.choice(free)


def _kill_everything_in(netns: str) -> None:
    """SIGKILL every process left in ``netns``: a host that goes away takes its processes."""
    listed = subprocess.run(["ip", "netns", "pids", netns], capture_output=True, text=True)
    for pid in listed.stdout.split():
        with suppress(ProcessLookupError):
            os.kill(int(pid), signal.SIGKILL)


@contextmanager
def network(*names: str) -> Iterator[dict[str, Host]]:
    """Hosts ``names`` on a new bridge, by name; all torn down (processes too) at the end."""
    subnet = _free_subnet()
    bridge = f"qdbr{subnet}"
    with ExitStack() as teardown:
        _ip("link", "add", bridge, "type", "bridge")
        teardown.callback(_ip, "link", "del", bridge)
        _ip("addr", "add", f"{SUBNET_PREFIX}.{subnet}.1/24", "dev", bridge)
        _ip("link", "set", bridge, "up")
        hosts: dict[str, Host] = {}
        for index, name in enumerate(names, start=2):
            host = Host(name, f"qd{subnet}-{name}", f"{SUBNET_PREFIX}.{subnet}.{index}")
            outer = f"qd{subnet}v{index}"
            _ip("netns", "add", host.netns)
            teardown.callback(_ip, "netns", "del", host.netns)
            teardown.callback(_kill_everything_in, host.netns)
            _ip("link", "add", outer, "type", "veth", "peer", "name", "eth0", "netns", host.netns)
            _ip("link", "set", outer, "master", bridge, "up")
            _ip("-n", host.netns, "addr", "add", f"{host.address}/24", "dev", "eth0")
            _ip("-n", host.netns, "link", "set", "eth0", "up")
            _ip("-n", host.netns, "link", "set", "lo", "up")
            hosts[name] = host
        yield hosts
