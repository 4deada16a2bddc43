"""Connecting to Temporal the one way quantdesk does: configured address, pydantic payloads."""

from __future__ import annotations

from temporalio.client import Client
from temporalio.contrib.pydantic import pydantic_data_converter
from temporalio.runtime import LoggingConfig, Runtime, TelemetryConfig, TelemetryFilter

from shared.config import ENV_PREFIX, Settings
from shared.errors import ConfigError


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
            data_converter=pydantic_data_converter,
        )
    except RuntimeError as error:
        raise ConfigError(
            f"{ENV_PREFIX}TEMPORAL__ADDRESS",
            f"cannot reach Temporal at {settings.temporal.address} ({error})",
            fix="Start the embedded stack with `quantdesk up`, or point the setting at your "
            "cluster.",
        ) from None


async def register_search_attributes(client: Client) -> None:
    """Register quantdesk's search attributes on the client's namespace (idempotent).

    ``quantdesk up`` and docker-compose register them at server start; this is for
    other servers (the test servers, a cluster of your own)."""
    from temporalio.api.enums.v1 import IndexedValueType
    from temporalio.api.operatorservice.v1 import AddSearchAttributesRequest

    from shared.search_attributes import SEARCH_ATTRIBUTES

    kinds = {
        "Keyword": IndexedValueType.INDEXED_VALUE_TYPE_KEYWORD,
        "Datetime": IndexedValueType.INDEXED_VALUE_TYPE_DATETIME,
    }
    await client.operator_service.add_search_attributes(
        AddSearchAttributesRequest(
            namespace=client.namespace,
            search_attributes={name: kinds[kind] for name, kind in SEARCH_ATTRIBUTES.items()},
        )
    )
