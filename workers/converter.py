"""The one data converter every quantdesk client uses: pydantic payloads, large ones
compressed and, when still large, kept in S3, encrypted when on.

Workers, the CLI, the console and the benches all connect through
``workers.client.connect``, which takes its converter from here, so no process can
write a payload the others cannot read.
"""

from __future__ import annotations

import dataclasses
from collections.abc import Sequence
from typing import ClassVar

from temporalio.api.common.v1 import Payload
from temporalio.contrib.pydantic import PydanticPayloadConverter, pydantic_data_converter
from temporalio.converter import DataConverter, PayloadCodec

from shared.config import Settings
from workers.payload_codec import EncryptingCodec
from workers.payload_compression import CompressingCodec
from workers.payload_storage import payload_storage


class SharedPydanticPayloadConverter(PydanticPayloadConverter):
    """``PydanticPayloadConverter``, built once per process: every instantiation returns it.

    With external storage on, the SDK binds each command's store context with
    ``dataclasses.replace`` on the data converter, and each copy builds a new payload
    converter in ``__post_init__``: tens of thousands in a 100-name desk, 1.8 s of the
    workers' 33 s of CPU (py-spy). The converter keeps no state of a run (only its
    type-adapter cache, which every copy may as well share), so one instance serves all."""

    _shared: ClassVar[SharedPydanticPayloadConverter | None] = None

    def __new__(cls) -> SharedPydanticPayloadConverter:
        if cls._shared is None:
            shared = super().__new__(cls)
            PydanticPayloadConverter.__init__(shared)
            cls._shared = shared
        return cls._shared

    def __init__(self) -> None:
        """Nothing: the one instance was built in ``__new__``."""


class CodecChain(PayloadCodec):
    """Codecs applied in order on the way out (compress, then seal: sealed bytes do not
    compress) and in reverse on the way in."""

    def __init__(self, codecs: Sequence[PayloadCodec]) -> None:
        self.codecs = tuple(codecs)

    def __repr__(self) -> str:
        return f"CodecChain({', '.join(map(repr, self.codecs))})"

    async def encode(self, payloads: Sequence[Payload]) -> list[Payload]:
        """``payloads`` through each codec's ``encode``, first to last."""
        encoded = list(payloads)
        for codec in self.codecs:
            encoded = await codec.encode(encoded)
        return encoded

    async def decode(self, payloads: Sequence[Payload]) -> list[Payload]:
        """``payloads`` through each codec's ``decode``, last to first."""
        decoded = list(payloads)
        for codec in reversed(self.codecs):
            decoded = await codec.decode(decoded)
        return decoded


def payload_codecs(settings: Settings) -> CodecChain | None:
    """Compression (``payload_compression``) then encryption (when ``settings`` encrypt
    payloads), or None when neither is on; a ``ConfigError`` when encryption is on without
    keys."""
    keys = settings.payload_keys()
    codecs: list[PayloadCodec] = []
    if settings.payload_compression:
        codecs.append(CompressingCodec(min_bytes=settings.inline_max_bytes))
    if keys is not None:
        codecs.append(EncryptingCodec(keys))
    return CodecChain(codecs) if codecs else None


def data_converter(settings: Settings) -> DataConverter:
    """``pydantic_data_converter`` (dates, ``Decimal``, models) with ``payload_codecs``,
    whose payloads of ``inline_max_bytes`` or more, as encoded, travel as claims on S3
    objects (``workers.payload_storage``)."""
    return dataclasses.replace(
        pydantic_data_converter,
        payload_converter_class=SharedPydanticPayloadConverter,
        payload_codec=payload_codecs(settings),
        external_storage=payload_storage(settings),
    )
