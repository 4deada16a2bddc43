"""Payload compression: a payload too large to travel inline is compressed first, and
travels inline when that brings it under the threshold.

The claim check (``workers.payload_storage``) keeps a history small by storing each
payload of ``inline_max_bytes`` or more in S3. Every stored payload costs two S3 round
trips on a run's critical path (the writer stores it, the reader fetches it), and a
Pipeline's ten sequential LLM steps each pass two such payloads (the request and the
reply): 0.2-0.3 s of a 4.6 s Pipeline here (``bench/bench_pipeline.py``). Chat requests
and replies are JSON prose that zlib shrinks three to four times, so most of them fit
under the threshold once compressed, and the history grows by no more than the threshold
allows.

Only what would otherwise be stored is compressed: a payload under the threshold stays as
it was, readable in the Web UI and ``temporal workflow show`` without the codec endpoint;
a compressed one is as unreadable there as a reference was, and the endpoint opens both.
The SDK runs the codec before the storage, so the storage sees the compressed size.
Decoding leaves any payload without this encoding as it is: histories recorded before
compression (the golden ones in ``tests/histories``) replay unchanged. A worker of an
older quantdesk cannot read a compressed payload: ``payload_compression=false`` keeps a
desk writing plain payloads until every worker and client has been upgraded.
"""

from __future__ import annotations

import zlib
from collections.abc import Sequence

from temporalio.api.common.v1 import Payload
from temporalio.converter import PayloadCodec

from workers.payload_codec import ENCODING
from workers.payload_storage import INLINE

COMPRESSED = b"binary/zlib"
MAX_EXPANDED_BYTES = 256 * 1024 * 1024
"""Refuse to expand a compressed payload past this: no payload quantdesk writes comes
near it, and a damaged or forged one must not exhaust a worker's memory."""


class CompressingCodec(PayloadCodec):
    """Compresses each payload of ``min_bytes`` or more (its serialized proto, whole) when
    that makes it smaller; expands any compressed payload."""

    def __init__(self, min_bytes: int) -> None:
        self.min_bytes = min_bytes

    def __repr__(self) -> str:
        return f"CompressingCodec(min_bytes={self.min_bytes})"

    async def encode(self, payloads: Sequence[Payload]) -> list[Payload]:
        """Each payload compressed when it is large enough and compression pays."""
        return [self.compress(payload) for payload in payloads]

    async def decode(self, payloads: Sequence[Payload]) -> list[Payload]:
        """Each compressed payload expanded; others as they are."""
        return [self.expand(payload) for payload in payloads]

    def compress(self, payload: Payload) -> Payload:
        """``payload`` compressed whole, or itself: when it is under ``min_bytes``, when it
        never enters a history (``INLINE``: a query's answer), or when it does not shrink."""
        if INLINE in payload.metadata or payload.ByteSize() < self.min_bytes:
            return payload
        whole = payload.SerializeToString()
        packed = zlib.compress(whole)
        if len(packed) >= len(whole):
            return payload
        return Payload(metadata={ENCODING: COMPRESSED}, data=packed)

    def expand(self, payload: Payload) -> Payload:
        """The payload ``compress`` gave, or ``payload`` itself when it is not compressed.
        A ``ValueError`` when it would expand past ``MAX_EXPANDED_BYTES``."""
        if payload.metadata.get(ENCODING) != COMPRESSED:
            return payload
        expander = zlib.decompressobj()
        whole = expander.decompress(payload.data, MAX_EXPANDED_BYTES)
        if expander.unconsumed_tail:
            raise ValueError(
                f"a compressed payload expands past {MAX_EXPANDED_BYTES} bytes; quantdesk "
                "writes none that large, so it is damaged or was not written by quantdesk"
            )
        return Payload.FromString(whole)
