"""An authorising gRPC proxy in front of a Temporal server: Debian's nginx, refusing some calls.

A cluster quantdesk did not start may not let it do everything: an authorizer answers
PERMISSION_DENIED to a call the client's role does not allow, and Temporal Cloud offers no
operator service at all (UNIMPLEMENTED). nginx answers the refused methods with that gRPC
status itself and passes every other call to the server, so a test meets those answers as
a real client would, from a real server behind a real proxy.
"""

from __future__ import annotations

import shutil
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path

import pytest
from temporalio.service import RPCStatusCode

from cli.stack.servers import ServerLaunch, wait_until
from shared.ports import LOOPBACK, port_is_free
from tests.servers import free_port_base, running

OPERATOR_SERVICE = "/temporal.api.operatorservice.v1.OperatorService/"
ADD_SEARCH_ATTRIBUTES = f"{OPERATOR_SERVICE}AddSearchAttributes"
GATE_START_TIMEOUT = 10.0


def _refusal(path: str, status: RPCStatusCode) -> str:
    """An nginx location answering every call under ``path`` with ``status`` (trailers-only)."""
    return f"""
    location ^~ {path} {{
      default_type application/grpc;
      add_header grpc-status {status.value} always;
      add_header grpc-message "refused by the test gateway: {status.name}" always;
      return 200;
    }}"""


@contextmanager
def grpc_gate(upstream: str, refused: dict[str, RPCStatusCode], folder: Path) -> Iterator[str]:
    """nginx on a free loopback port, passing gRPC to ``upstream`` except the methods (or
    services, by path prefix) of ``refused``; yields its address. Skipped without nginx."""
    nginx = shutil.which("nginx") or shutil.which("nginx", path="/usr/sbin")
    if nginx is None:
        pytest.skip("nginx not installed (.ci/run installs Debian's)")
    folder.mkdir(parents=True, exist_ok=True)
    port = free_port_base(lambda base: [base])
    locations = "".join(_refusal(path, status) for path, status in refused.items())
    (folder / "nginx.conf").write_text(
        f"""daemon off;
master_process off;
pid {folder / "nginx.pid"};
error_log {folder / "error.log"} warn;
events {{ worker_connections 64; }}
http {{
  access_log off;
  client_body_temp_path {folder / "body"};
  server {{
    listen {LOOPBACK}:{port} http2;{locations}
    location / {{ grpc_pass grpc://{upstream}; }}
  }}
}}
"""
    )
    argv = [nginx, "-e", str(folder / "error.log"), "-p", str(folder), "-c", "nginx.conf"]
    with running(ServerLaunch("nginx", argv, []), folder / "nginx.log") as process:
        listening = wait_until(
            lambda: process.poll() is not None or not port_is_free(port),
            timeout=GATE_START_TIMEOUT,
        )
        if not listening or process.poll() is not None:
            raise RuntimeError(f"nginx did not start: {(folder / 'error.log').read_text()}")
        yield f"{LOOPBACK}:{port}"
