"""Temporal's side of the claim check: payloads over the threshold live in S3, not in histories.

A chat request carries its prompt, its agent's inputs and every tool answer so far; a
Pipeline wrote about 160 KB of such payloads into its own history. Through the SDK's
external storage, every payload of ``inline_max_bytes`` or more (activity inputs and
results, child inputs and results, a run's own input and result) is stored as one object
in the payloads bucket when its event is written, and the event keeps a reference of about
a hundred bytes; the worker (or client) reads it back before the workflow, the activity or
the caller sees it. Nothing in a workflow changes, so no command does: old histories replay
as they were recorded, and a history with references replays wherever S3 is reachable.

Objects are content-addressed (``shared.storage.claim_check``): a retried task or a replay
stores the same key, and a value read back is checked against its digest. So a process keeps
the claims it stored or read lately (``RecentClaims``) and answers a read of one from memory:
with the workflows and the activities in one worker process, a chat's request is stored by
the workflow and read by the activity a few milliseconds later, and its reply the other way
round; each read saved is an S3 round trip off the run's critical path. When payloads are
encrypted, the SDK runs the codec first, so what is stored is already sealed. A store that
is down fails the step that needs it retryably (an activity attempt, a workflow task): the
run waits, it does not fail, and the objects are there when S3 comes back.
"""

from __future__ import annotations

import asyncio
import threading
from collections import OrderedDict
from collections.abc import Sequence
from functools import cached_property

from temporalio.api.common.v1 import Payload
from temporalio.api.sdk.v1.external_storage_pb2 import ExternalStorageReference
from temporalio.converter import (
    ExternalStorage,
    JSONProtoPayloadConverter,
    StorageDriver,
    StorageDriverClaim,
    StorageDriverRetrieveContext,
    StorageDriverSelectContext,
    StorageDriverStoreContext,
)

from shared.config import Settings
from shared.storage.claim_check import Claim, ClaimCheck
from shared.storage.objects import ObjectStore

DRIVER_NAME = "quantdesk-claims"
"""Recorded in every reference: a reader retrieves with the driver of this name."""

INLINE = "quantdesk-inline"
"""Payload metadata: this payload never enters a history (a query's answer,
``workers.query_answers``), so it is never stored, whatever its size."""


RECENT_CLAIMS_BYTES = 32 * 1024 * 1024
"""How much of what it stored or read a driver keeps: thousands of chat requests and replies,
so a read a few seconds after the write is answered from memory, at a bounded cost."""


class RecentClaims:
    """Serialized payloads by digest, the least recently used dropped past ``max_bytes``.

    Only what this process wrote to S3 or read back checked is kept, so a value found here is
    the stored object itself."""

    def __init__(self, max_bytes: int = RECENT_CLAIMS_BYTES) -> None:
        self.max_bytes = max_bytes
        self._blobs: OrderedDict[str, bytes] = OrderedDict()
        self._bytes = 0
        self._lock = threading.Lock()

    def get(self, digest: str) -> bytes | None:
        """The payload stored under ``digest``, if it is still kept."""
        with self._lock:
            blob = self._blobs.get(digest)
            if blob is not None:
                self._blobs.move_to_end(digest)
            return blob

    def keep(self, digest: str, blob: bytes) -> None:
        """Keep ``blob`` (stored under ``digest``); one larger than the bound is not kept."""
        if len(blob) > self.max_bytes:
            return
        with self._lock:
            old = self._blobs.pop(digest, None)
            self._bytes += len(blob) - (len(old) if old is not None else 0)
            self._blobs[digest] = blob
            while self._bytes > self.max_bytes:
                _, dropped = self._blobs.popitem(last=False)
                self._bytes -= len(dropped)


class ClaimCheckDriver(StorageDriver):
    """Stores each payload (its serialized proto) as a claim; retrieves and checks it, or
    answers from what it stored or read lately."""

    def __init__(self, settings: Settings) -> None:
        self.settings = settings
        self.recent = RecentClaims()

    def name(self) -> str:
        """The name recorded in references (``DRIVER_NAME``)."""
        return DRIVER_NAME

    @cached_property
    def claims(self) -> ClaimCheck:
        """The claim check, connected on first use: a process that never meets a large
        payload never reaches S3. Unsealed: the codec, when on, has sealed the payload."""
        store = ObjectStore.from_settings(self.settings)
        return ClaimCheck(store, inline_max=self.settings.inline_max_bytes, keys=None)

    async def store(
        self, context: StorageDriverStoreContext, payloads: Sequence[Payload]
    ) -> list[StorageDriverClaim]:
        """One object per payload, written side by side, and kept."""
        blobs = [p.SerializeToString() for p in payloads]
        claims = await asyncio.gather(*(asyncio.to_thread(self.claims.put, b) for b in blobs))
        for claim, blob in zip(claims, blobs, strict=True):
            self.recent.keep(claim.digest, blob)
        return [
            StorageDriverClaim(claim_data={"digest": c.digest, "size": str(c.size)}) for c in claims
        ]

    async def retrieve(
        self, context: StorageDriverRetrieveContext, claims: Sequence[StorageDriverClaim]
    ) -> list[Payload]:
        """Each stored payload: kept, or read from S3 side by side, checked against its
        digest, and kept."""
        wanted = [_claim_of(c) for c in claims]
        found: dict[str, bytes] = {}
        missing: dict[str, Claim] = {}
        for claim in wanted:
            kept = self.recent.get(claim.digest)
            if kept is None:
                missing[claim.digest] = claim
            else:
                found[claim.digest] = kept
        read = await asyncio.gather(
            *(asyncio.to_thread(self.claims.fetch, c) for c in missing.values())
        )
        for claim, blob in zip(missing.values(), read, strict=True):
            self.recent.keep(claim.digest, blob)
            found[claim.digest] = blob
        return [Payload.FromString(found[claim.digest]) for claim in wanted]


def _claim_of(stored: StorageDriverClaim) -> Claim:
    data = stored.claim_data
    return Claim(digest=data["digest"], size=int(data["size"]))


def payload_storage(settings: Settings) -> ExternalStorage:
    """External storage for every payload of ``settings.inline_max_bytes`` or more, except
    those marked ``INLINE``."""
    driver = ClaimCheckDriver(settings)

    def stored_by(context: StorageDriverSelectContext, payload: Payload) -> StorageDriver | None:
        return None if INLINE in payload.metadata else driver

    return ExternalStorage(
        drivers=[driver],
        driver_selector=stored_by,
        payload_size_threshold=settings.inline_max_bytes,
    )


def reference_in(payload: Payload) -> StorageDriverClaim | None:
    """The claim ``payload`` stands for, when it is one of this driver's references."""
    is_reference = (
        payload.metadata.get("encoding") == b"json/protobuf"
        and payload.metadata.get("messageType")
        == ExternalStorageReference.DESCRIPTOR.full_name.encode()
    )
    if not is_reference:
        return None
    reference = JSONProtoPayloadConverter().from_payload(payload, ExternalStorageReference)
    if reference.driver_name != DRIVER_NAME:
        return None
    return StorageDriverClaim(claim_data=dict(reference.claim_data))


async def retrieved(driver: ClaimCheckDriver, payloads: Sequence[Payload]) -> list[Payload]:
    """``payloads`` with each reference replaced by the payload it stands for (what a reader
    outside a worker, the codec endpoint, does before the codec)."""
    found = [(i, claim) for i, p in enumerate(payloads) if (claim := reference_in(p)) is not None]
    if not found:
        return list(payloads)
    stored = await driver.retrieve(StorageDriverRetrieveContext(), [claim for _, claim in found])
    result = list(payloads)
    for (index, _), payload in zip(found, stored, strict=True):
        result[index] = payload
    return result
