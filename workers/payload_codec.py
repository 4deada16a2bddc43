"""Temporal's side of payload encryption: a payload codec over ``shared.payload_keys``.

Each payload is sealed whole (its serialized proto: metadata and data), so not even
its encoding or type shows; the sealed payload carries only ``encoding:
binary/encrypted`` and the key id. Decoding leaves any payload without that encoding
as it is: histories recorded before encryption was on (the golden ones in
``tests/histories``) still replay, and a run that crossed the switch reads both kinds.
"""

from __future__ import annotations

from collections.abc import Sequence

from temporalio.api.common.v1 import Payload
from temporalio.converter import PayloadCodec

from shared.payload_keys import PayloadKeys
from workers.payload_storage import INLINE

ENCODING = "encoding"
ENCRYPTED = b"binary/encrypted"
KEY_ID = "encryption-key-id"


class EncryptingCodec(PayloadCodec):
    """Seals every payload under the ring's first key; opens any under a key of the ring."""

    def __init__(self, keys: PayloadKeys) -> None:
        self.keys = keys

    def __repr__(self) -> str:
        return f"EncryptingCodec({self.keys!r})"

    async def encode(self, payloads: Sequence[Payload]) -> list[Payload]:
        """Each payload sealed whole."""
        return [self.seal(payload) for payload in payloads]

    async def decode(self, payloads: Sequence[Payload]) -> list[Payload]:
        """Each sealed payload opened; plain ones as they are."""
        return [self.open(payload) for payload in payloads]

    def seal(self, payload: Payload) -> Payload:
        """``payload`` encrypted under the sealing key, still marked ``INLINE`` if it was (the
        storage that runs after the codec reads the mark, which tells nothing of the data)."""
        key_id, sealed = self.keys.seal(payload.SerializeToString())
        metadata = {ENCODING: ENCRYPTED, KEY_ID: key_id.encode()}
        if INLINE in payload.metadata:
            metadata[INLINE] = payload.metadata[INLINE]
        return Payload(metadata=metadata, data=sealed)

    def open(self, payload: Payload) -> Payload:
        """The payload ``seal`` gave, or ``payload`` itself when it is not sealed."""
        if payload.metadata.get(ENCODING) != ENCRYPTED:
            return payload
        key_id = payload.metadata.get(KEY_ID, b"").decode(errors="replace")
        return Payload.FromString(self.keys.open(key_id, payload.data))
