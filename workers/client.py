"""Connecting to Temporal the one way quantdesk does: configured address, TLS and API key,
pydantic payloads."""

from __future__ import annotations

import asyncio
from collections.abc import Awaitable, Callable
from datetime import timedelta
from pathlib import Path
from typing import TypeVar

from temporalio.api.workflowservice.v1 import DescribeNamespaceRequest
from temporalio.client import Client
from temporalio.runtime import LoggingConfig, Runtime, TelemetryConfig, TelemetryFilter
from temporalio.service import RPCError, RPCStatusCode, TLSConfig

from shared.config import Settings, TemporalSettings
from shared.errors import ConfigError
from workers.connection_failures import explain, variable
from workers.converter import data_converter
from workers.tracing import tracing_interceptors

T = TypeVar("T")
RECONNECT_FIRST_DELAY = 1.0
RECONNECT_LONGEST_DELAY = 10.0
NAMESPACE_CHECK_TIMEOUT = timedelta(seconds=10)
SERVER_AWAY: frozenset[RPCStatusCode] = frozenset(
    {
        RPCStatusCode.UNAVAILABLE,
        RPCStatusCode.DEADLINE_EXCEEDED,
        RPCStatusCode.CANCELLED,
        RPCStatusCode.UNKNOWN,
        RPCStatusCode.INTERNAL,
        RPCStatusCode.RESOURCE_EXHAUSTED,
        RPCStatusCode.ABORTED,
    }
)
"""What a client hears from a server that is down, restarting or busy: worth asking again."""


class ServerLost(TimeoutError):
    """The Temporal server stayed unreachable for longer than the caller would wait."""


async def across_outages(
    call: Callable[[], Awaitable[T]],
    *,
    patience: timedelta,
    on_lost: Callable[[RPCError], None] | None = None,
) -> T:
    """``call()``, asked again with back-off while the server is away, for up to ``patience``
    after it first was; then ``ServerLost``. Any other error is raised at once.

    The client itself gives up on an unreachable server after about ten seconds, but
    runs are durable: once the server is back (``quantdesk up``) they go on where they
    were, so a caller that follows them only has to keep asking."""
    delay = RECONNECT_FIRST_DELAY
    lost_since: float | None = None
    loop = asyncio.get_running_loop()
    while True:
        try:
            return await call()
        except RPCError as error:
            if error.status not in SERVER_AWAY:
                raise
            now = loop.time()
            if lost_since is None:
                lost_since = now
                if on_lost is not None:
                    on_lost(error)
            elif now - lost_since > patience.total_seconds():
                raise ServerLost(
                    f"the Temporal server stayed unreachable for {patience}: {error.message}"
                ) from error
        await asyncio.sleep(delay)
        delay = min(delay * 2, RECONNECT_LONGEST_DELAY)


def quiet_client_logs() -> None:
    """Keep the SDK core's own warnings (each retried call while a server restarts) off a
    terminal: a command says what it means once, in words (``cli.follow``). Errors still
    show. Call before the first client is made; workers keep the default (their logs)."""
    quiet = TelemetryFilter(core_level="ERROR", other_level="ERROR")
    Runtime.set_default(
        Runtime(telemetry=TelemetryConfig(logging=LoggingConfig(filter=quiet))),
        error_if_already_set=False,
    )


def tls_config(temporal: TemporalSettings) -> TLSConfig | bool:
    """The client's TLS: off, or on with the configured CA, client certificate and server
    name (each unset: the system's CAs, no client certificate, the address's host)."""
    if not temporal.tls:
        return False
    return TLSConfig(
        server_root_ca_cert=_read(temporal.ca_file, "ca_file"),
        client_cert=_read(temporal.cert_file, "cert_file"),
        client_private_key=_read(temporal.key_file, "key_file"),
        domain=temporal.server_name,
    )


def _read(path: Path | None, field: str) -> bytes | None:
    """A PEM file's bytes; settings checked it at load, so this fails only if it went since."""
    if path is None:
        return None
    try:
        return path.read_bytes()
    except OSError as error:
        raise ConfigError(
            variable(field),
            f"cannot read {path} ({error.strerror})",
            fix=f"Set {variable(field)} to a readable PEM file.",
        ) from None


async def connect(settings: Settings, runtime: Runtime | None = None) -> Client:
    """A client for the configured cluster, or a ConfigError naming its cause and the
    setting to change (``workers.connection_failures``). ``runtime``: one exporting
    metrics (``workers.metrics_exporter``); None, the process's default. With
    ``QUANTDESK_OTEL__ENDPOINT`` set, the client and its workers trace (``workers.tracing``).

    Connecting makes one call of its own (system info), which an API key must pass;
    describing the namespace then makes a wrong namespace, or a key without access to
    it, fail here rather than at a run's first call."""
    temporal = settings.temporal
    try:
        client = await Client.connect(
            temporal.address,
            namespace=temporal.namespace,
            data_converter=data_converter(settings),
            tls=tls_config(temporal),
            api_key=temporal.api_key.get_secret_value() if temporal.api_key else None,
            runtime=runtime,
            interceptors=tracing_interceptors(settings.otel),
        )
        await client.workflow_service.describe_namespace(
            DescribeNamespaceRequest(namespace=temporal.namespace), timeout=NAMESPACE_CHECK_TIMEOUT
        )
    except (RuntimeError, RPCError) as error:
        raise explain(error, temporal) from None
    return client
