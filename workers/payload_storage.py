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
stores the same key, and a value read back is checked against its digest. When payloads are
encrypted, the SDK runs the codec first, so what is stored is already sealed. A store that
is down fails the step that needs it retryably (an activity attempt, a workflow task): the
run waits, it does not fail, and the objects are there when S3 comes back.
"""

from __future__ import annotations

import asyncio
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


class ClaimCheckDriver(StorageDriver):
    """Stores each payload (its serialized proto) as a claim; retrieves and checks it."""

    def __init__(self, settings: Settings) -> None:
        self.settings = settings

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
        """One object per payload, written side by side."""
        claims = await asyncio.gather(
            *(asyncio.to_thread(self.claims.put, p.SerializeToString()) for p in payloads)
        )
        return [
            StorageDriverClaim(claim_data={"digest": c.digest, "size": str(c.size)}) for c in claims
        ]

    async def retrieve(
        self, context: StorageDriverRetrieveContext, claims: Sequence[StorageDriverClaim]
    ) -> list[Payload]:
        """Each stored payload, checked against its digest."""
        blobs = await asyncio.gather(
            *(asyncio.to_thread(self.claims.fetch, _claim_of(c)) for c in claims)
        )
        return [Payload.FromString(blob) for blob in blobs]


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
