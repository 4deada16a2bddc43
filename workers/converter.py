"""The one data converter every quantdesk client uses: pydantic payloads, large ones kept in
S3, encrypted when on.

Workers, the CLI, the console and the benches all connect through
``workers.client.connect``, which takes its converter from here, so no process can
write a payload the others cannot read.
"""

from __future__ import annotations

import dataclasses

from temporalio.contrib.pydantic import pydantic_data_converter
from temporalio.converter import DataConverter

from shared.config import Settings
from workers.payload_codec import EncryptingCodec
from workers.payload_storage import payload_storage


def data_converter(settings: Settings) -> DataConverter:
    """``pydantic_data_converter`` (dates, ``Decimal``, models) whose payloads of
    ``inline_max_bytes`` or more travel as claims on S3 objects (``workers.payload_storage``),
    with the payload codec when ``settings`` encrypt payloads; a ``ConfigError`` when
    encryption is on without keys."""
    keys = settings.payload_keys()
    return dataclasses.replace(
        pydantic_data_converter,
        payload_codec=EncryptingCodec(keys) if keys is not None else None,
        external_storage=payload_storage(settings),
    )
