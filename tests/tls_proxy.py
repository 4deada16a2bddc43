"""Debian's nginx as a TLS-terminating proxy in front of the test servers.

``grpc_tls_proxy`` puts a Temporal frontend behind TLS in one of three ways a real
cluster is secured (``ProxyMode``): TLS only, mTLS (a client certificate signed by the
test CA is required), or an API key (``Authorization: Bearer <key>``, as Temporal Cloud
asks; anything else is answered with gRPC UNAUTHENTICATED). ``https_proxy`` puts an HTTP
server (the test S3) behind TLS. Both yield the ``host:port`` to dial. Certificates
come from ``tests.certificates.make_tls_files``.

nginx runs unprivileged-friendly: its own prefix, pid, logs and temp folders under the
given folder, ``daemon off``, as our child process, stopped when the block ends. Tests
are skipped (with the reason) only where nginx is not installed. By default each listens
on a free loopback port; ``Listen`` places one on another host of a multi-host test.

``mtls_refusing_server`` is the other way servers refuse a client certificate: OpenSSL's
test server aborting the handshake, as Temporal's own frontend does.
"""

from __future__ import annotations

import shutil
import socket
import subprocess
import time
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from dataclasses import dataclass
from enum import StrEnum
from pathlib import Path

import pytest

from tests.certificates import TlsFiles
from tests.servers import free_port_base, stop

START_TIMEOUT = 10.0
UNAUTHENTICATED = 16
"""gRPC's status code for a call without valid credentials."""
WRONG_KEY_MESSAGE = "missing or invalid API key"
"""What the API-key proxy answers a call without the right key (gRPC ``grpc-message``),
followed by the Authorization header it got: a careless server echoing the key, which the
client must not repeat."""
# Workers long-poll for about a minute and payloads reach megabytes: the proxy must
# neither time them out nor cap them.
_LONG_CALLS = """
        client_max_body_size 0;
        keepalive_timeout 600s;
        keepalive_requests 1000000;
"""


UPSTREAM = "upstream"
"""The name of the proxied server's upstream block in nginx.conf."""


class ProxyMode(StrEnum):
    """How the gRPC proxy checks its clients."""

    TLS = "tls"
    MTLS = "mtls"
    API_KEY = "api-key"


def nginx_binary() -> str:
    """nginx's path (Debian puts it in /usr/sbin, often not on a user's PATH); skips the
    test where it is not installed."""
    found = shutil.which("nginx") or shutil.which("nginx", path="/usr/sbin:/usr/local/sbin")
    if found is None:
        pytest.skip("nginx is not installed (Debian: apt-get install nginx; CI's .ci/run does)")
    return found


def _grpc_location(mode: ProxyMode, api_key: str | None) -> str:
    """The location block forwarding calls to the upstream, behind the key check in
    API-key mode. A refused call gets a trailers-only gRPC answer (HTTP 200, the status in
    the headers), as a gRPC server would send it."""
    check = ""
    if mode is ProxyMode.API_KEY:
        if not api_key:
            raise ValueError("the API-key proxy needs the key it accepts")
        check = f"""
            if ($http_authorization != "Bearer {api_key}") {{
                add_header grpc-status {UNAUTHENTICATED};
                add_header grpc-message "{WRONG_KEY_MESSAGE} (got: $http_authorization)";
                return 200;
            }}"""
    return f"""
        location / {{
            default_type application/grpc;{check}
            grpc_read_timeout 600s;
            grpc_send_timeout 600s;
            grpc_pass grpc://{UPSTREAM};
        }}"""


def _client_check(files: TlsFiles, mode: ProxyMode) -> str:
    if mode is not ProxyMode.MTLS:
        return ""
    return f"""
        ssl_verify_client on;
        ssl_client_certificate {files.ca};"""


def _config(
    folder: Path, listen: str, files: TlsFiles, upstream: str, server_body: str, *, http2: bool
) -> str:
    """A whole nginx.conf whose every path is under ``folder``: one TLS server in front of
    ``upstream``, whose connections are kept open between calls as a production proxy keeps
    them (without ``keepalive`` nginx dials the upstream anew for every call)."""
    temp = {kind: folder / kind for kind in ("client_body", "proxy", "fastcgi", "uwsgi", "scgi")}
    for path in temp.values():
        path.mkdir(parents=True, exist_ok=True)
    temp_paths = "\n".join(f"    {kind}_temp_path {path};" for kind, path in temp.items())
    return f"""daemon off;
worker_processes 1;
pid {folder / "nginx.pid"};
error_log {folder / "error.log"} info;
events {{ worker_connections 512; }}
http {{
    access_log {folder / "access.log"};
{temp_paths}
    upstream {UPSTREAM} {{
        server {upstream};
        keepalive 64;
    }}
    server {{
        listen {listen} ssl{" http2" if http2 else ""};
        ssl_certificate {files.server.cert};
        ssl_certificate_key {files.server.key};{server_body}
    }}
}}
"""


@dataclass(frozen=True)
class Listen:
    """Where a server listens and how it is launched. By default: a free loopback port, in
    this process's network namespace. On another host of a multi-host test: its address, a
    port, and the command that runs a program there (``("ip", "netns", "exec", "a")``)."""

    host: str = "127.0.0.1"
    port: int | None = None
    launcher: tuple[str, ...] = ()

    def address(self) -> str:
        """``host:port``, choosing a free loopback port when none was given."""
        return f"{self.host}:{self.port or free_port_base(lambda base: [base])}"


@contextmanager
def _serving(
    listen: Listen, folder: Path, argv_for: Callable[[str], list[str]], log: Path
) -> Iterator[str]:
    """Run ``argv_for(address)`` until the block ends; yields the address once it accepts
    connections, or raises with the end of ``log`` if it never does."""
    folder.mkdir(parents=True, exist_ok=True)
    address = listen.address()
    with (folder / "launch.out").open("ab") as out:
        process = subprocess.Popen(
            [*listen.launcher, *argv_for(address)],
            stdin=subprocess.DEVNULL,
            stdout=out,
            stderr=subprocess.STDOUT,
        )
    try:
        host, _, port = address.rpartition(":")
        deadline = time.monotonic() + START_TIMEOUT
        while not _accepts(host, int(port)):
            if process.poll() is not None or time.monotonic() > deadline:
                raise RuntimeError(f"not listening on {address} (log {log}): {_tail(log)}")
            time.sleep(0.05)
        yield address
    finally:
        stop(process)


def _accepts(host: str, port: int) -> bool:
    try:
        with socket.create_connection((host, port), timeout=0.5):
            return True
    except OSError:
        return False


def _tail(log: Path) -> str:
    return log.read_text()[-2000:] if log.exists() else "(no log)"


@contextmanager
def _nginx(
    folder: Path, listen: Listen, files: TlsFiles, upstream: str, body: str, *, http2: bool
) -> Iterator[str]:
    """nginx serving TLS with ``files.server`` and the server block ``body``, in front of
    ``upstream``."""
    binary = nginx_binary()
    log = folder / "error.log"

    def argv_for(address: str) -> list[str]:
        conf = folder / "nginx.conf"
        conf.write_text(_config(folder, address, files, upstream, body, http2=http2))
        return [binary, "-p", str(folder), "-c", str(conf), "-e", str(log)]

    with _serving(listen, folder, argv_for, log) as address:
        yield address


@contextmanager
def grpc_tls_proxy(
    folder: Path,
    files: TlsFiles,
    upstream: str,
    *,
    mode: ProxyMode = ProxyMode.TLS,
    api_key: str | None = None,
    listen: Listen = Listen(),
) -> Iterator[str]:
    """A TLS gRPC endpoint in front of the plain Temporal frontend at ``upstream``,
    checking clients as ``mode`` says; yields its ``host:port``.

    Its certificate is ``files.server`` (valid for 127.0.0.1, ``SERVER_DNS_NAME`` and the
    IPs ``make_tls_files`` was given)."""
    body = _client_check(files, mode) + _LONG_CALLS + _grpc_location(mode, api_key)
    with _nginx(folder, listen, files, upstream, body, http2=True) as address:
        yield address


@contextmanager
def https_proxy(
    folder: Path, files: TlsFiles, upstream: str, *, listen: Listen = Listen()
) -> Iterator[str]:
    """An HTTPS endpoint in front of the plain HTTP server at ``upstream`` (the test S3);
    yields its ``host:port``. Request bodies stream through unbuffered, with the client's
    Host header kept so S3 signatures still match."""
    body = (
        _LONG_CALLS
        + f"""
        location / {{
            proxy_pass http://{UPSTREAM};
            proxy_http_version 1.1;
            proxy_set_header Connection "";
            proxy_set_header Host $http_host;
            proxy_request_buffering off;
            proxy_buffering off;
        }}"""
    )
    with _nginx(folder, listen, files, upstream, body, http2=False) as address:
        yield address


@contextmanager
def mtls_refusing_server(
    folder: Path, files: TlsFiles, *, listen: Listen = Listen()
) -> Iterator[str]:
    """OpenSSL's test server requiring a client certificate signed by ``files.ca`` the way
    Temporal's own frontend does under mTLS: a missing or untrusted certificate aborts the
    handshake with a TLS alert (nginx instead answers HTTP 400). It serves no gRPC: it is
    for the refusal only. Yields its ``host:port``; skips where openssl is not installed."""
    openssl = shutil.which("openssl")
    if openssl is None:
        pytest.skip("openssl is not installed (Debian: apt-get install openssl)")
    log = folder / "launch.out"

    def argv_for(address: str) -> list[str]:
        argv = [openssl, "s_server", "-accept", address, "-quiet", "-alpn", "h2"]
        argv += ["-cert", str(files.server.cert), "-key", str(files.server.key)]
        return [*argv, "-CAfile", str(files.ca), "-Verify", "1", "-verify_return_error"]

    with _serving(listen, folder, argv_for, log) as address:
        yield address
