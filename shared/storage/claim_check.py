"""The claim check: values too large for Temporal's history travel as references to S3.

An activity that produces a large text (a tool's answer) stores it here and returns a
``Claim``; the activity that needs it (``chat``) redeems the claim. Temporal payloads over
the threshold travel the same way (``workers.payload_storage``): the SDK stores them
when it writes a history event and reads them back before the workflow or activity runs. Every value written
into a history stays there for the run's retention, once per request that carries it, so
a tool answer read by three later chat rounds would otherwise be written three times.
Values up to ``inline_max`` bytes stay inline: a claim costs an S3 round trip, and below
a kilobyte it saves less than it costs.

Keys are content-addressed (``payloads/claims/v1/<2 hex>/<digest>``): a retried or
replayed activity writes the same key, and the same answer stored twice is one object.
When Temporal payloads are encrypted (``codec``), stored values are sealed with the same
key ring and addressed by an HMAC under that key instead of a plain SHA-256, so the
bucket leaks neither the text nor a hash that would confirm a guess of it. A redeemed
value is checked against its digest: a swapped or damaged object fails, never reaches
a model.
"""

from __future__ import annotations

import hashlib

from pydantic import BaseModel, Field

from shared.config import CODEC_ENABLED_SETTING, CODEC_KEYS_SETTING, Settings
from shared.errors import ClaimMismatch, ConfigError
from shared.payload_keys import PayloadKeys
from shared.storage.buckets import PAYLOADS_BUCKET
from shared.storage.objects import ObjectRef, ObjectStore

CLAIMS_PREFIX = "claims/v1"
"""Bump the version when the addressing or the sealing changes."""


class Claim(BaseModel):
    """A stored value: where it is and how to check it, in about a hundred bytes."""

    digest: str = Field(
        description="hex SHA-256 of the value, or its HMAC-SHA256 under ``key_id`` when sealed"
    )
    size: int = Field(ge=0, description="bytes of the value (UTF-8)")
    key_id: str | None = Field(None, description="the payload key that sealed it; None: plain")

    @property
    def ref(self) -> ObjectRef:
        """The object holding the value."""
        return ObjectRef(
            bucket=PAYLOADS_BUCKET, key=f"{CLAIMS_PREFIX}/{self.digest[:2]}/{self.digest}"
        )


class ClaimCheck:
    """Stores values over ``inline_max`` bytes and redeems their claims."""

    def __init__(self, store: ObjectStore, *, inline_max: int, keys: PayloadKeys | None) -> None:
        self.store = store
        self.inline_max = inline_max
        self.keys = keys

    @classmethod
    def from_settings(cls, settings: Settings, store: ObjectStore) -> ClaimCheck:
        """A claim check with the settings' threshold, sealing when payloads are encrypted."""
        return cls(store, inline_max=settings.inline_max_bytes, keys=settings.payload_keys())

    def claim(self, text: str) -> Claim | None:
        """Store ``text`` and return its claim; None when it is small enough to stay inline."""
        data = text.encode()
        if len(data) <= self.inline_max:
            return None
        return self.put(data)

    def put(self, data: bytes) -> Claim:
        """Store ``data`` under its content address (overwriting the same value is harmless)."""
        if self.keys is None:
            claim = Claim(digest=hashlib.sha256(data).hexdigest(), size=len(data))
            blob = data
        else:
            key_id, blob = self.keys.seal(data)
            claim = Claim(digest=self.keys.digest(data, key_id), size=len(data), key_id=key_id)
        self.store.put_bytes(claim.ref, blob)
        return claim

    def redeem(self, claim: Claim) -> str:
        """The stored text (see ``fetch``)."""
        return self.fetch(claim).decode()

    def fetch(self, claim: Claim) -> bytes:
        """The stored value. An unreachable store raises ``StorageUnavailable`` (retryable); a
        missing object ``ObjectNotFound``; a value that does not match its claim
        ``ClaimMismatch``; a sealed one this worker cannot open a ``ConfigError`` naming the
        setting (or ``PayloadTampered``)."""
        blob = self.store.get_bytes(claim.ref)
        if claim.key_id is None:
            data, digest = blob, hashlib.sha256(blob).hexdigest()
        else:
            keys = self._ring(claim.key_id)
            data = keys.open(claim.key_id, blob)
            digest = keys.digest(data, claim.key_id)
        if digest != claim.digest:
            raise ClaimMismatch(f"s3://{claim.ref.bucket}/{claim.ref.key}")
        return data

    def _ring(self, key_id: str) -> PayloadKeys:
        """The ring that opens a value sealed under ``key_id``."""
        if self.keys is None:
            raise ConfigError(
                CODEC_KEYS_SETTING,
                f"a stored payload is sealed with key id {key_id!r}, but this worker does not "
                "encrypt payloads",
                fix=f"Give this worker the same codec settings as the others ({CODEC_KEYS_SETTING}"
                f" with {key_id!r}, {CODEC_ENABLED_SETTING}=true) and restart it.",
            )
        return self.keys
