"""What a worker calls itself in Temporal: ``<pid>@<host> <role>``.

Temporal lists each poller of a task queue with this identity, which is all an
operator (and ``quantdesk status``) learns about who serves a queue. The SDK's own
default is ``<pid>@<hostname>``; ours keeps that form, so a pid still finds its
process, and takes the host from the settings (``QUANTDESK_HOST_NAME``), because
hosts that share a hostname (containers, network namespaces share the UTS name)
must still be told apart, then names the role.
"""

from __future__ import annotations

import os
import re

# "<pid>@<host>", after whatever prefix another tool may give it; the host is one word
# (the settings check it).
_PID_AT_HOST = re.compile(r"(?<!\d)(?P<pid>\d+)@(?P<host>\S+)")


def worker_identity(host: str, role: str, pid: int | None = None) -> str:
    """The identity of a worker of ``role`` on ``host`` (this process unless ``pid``)."""
    return f"{os.getpid() if pid is None else pid}@{host} {role}"


def host_of(identity: str) -> str | None:
    """The host an identity names, or None for one of another form."""
    found = _PID_AT_HOST.search(identity)
    return found["host"] if found else None


def is_process(identity: str, pid: int, host: str) -> bool:
    """Whether ``identity`` is process ``pid`` on ``host``: a pid alone could be another
    host's process."""
    found = _PID_AT_HOST.search(identity)
    return found is not None and int(found["pid"]) == pid and found["host"] == host
