"""Connecting to Temporal the one way quantdesk does: configured address, pydantic payloads."""

from __future__ import annotations

import asyncio
from collections.abc import Awaitable, Callable
from datetime import timedelta
from typing import TypeVar

from temporalio.client import Client
from temporalio.runtime import LoggingConfig, Runtime, TelemetryConfig, TelemetryFilter
from temporalio.service import RPCError, RPCStatusCode

from shared.config import ENV_PREFIX, Settings
from shared.errors import ConfigError
from workers.converter import data_converter

T = TypeVar("T")
RECONNECT_FIRST_DELAY = 1.0
RECONNECT_LONGEST_DELAY = 10.0
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


async def connect(settings: Settings) -> Client:
    """A client for the configured cluster, or a ConfigError naming the address setting."""
    try:
        return await Client.connect(
            settings.temporal.address,
            namespace=settings.temporal.namespace,
            data_converter=data_converter(settings),
        )
    except RuntimeError as error:
        raise ConfigError(
            f"{ENV_PREFIX}TEMPORAL__ADDRESS",
            f"cannot reach Temporal at {settings.temporal.address} ({error})",
            fix="Start the embedded stack with `quantdesk up`, or point the setting at your "
            "cluster.",
        ) from None
