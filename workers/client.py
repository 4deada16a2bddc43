"""Connecting to Temporal the one way quantdesk does: configured address, pydantic payloads."""

from __future__ import annotations

from temporalio.client import Client
from temporalio.contrib.pydantic import pydantic_data_converter

from shared.config import ENV_PREFIX, Settings
from shared.errors import ConfigError


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
