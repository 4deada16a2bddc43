"""Whether the S3 server can really store objects: a probe round trip in every bucket.

An S3 endpoint that answers and knows our keys can still refuse writes: a fresh
SeaweedFS answers ``InternalError ... volume 2 not found`` to its first writes
while it grows its volumes, and a bucket can be read-only. So health means a
probe object was put, read back identical and deleted in each bucket. The
supervisor polls this check until it passes, which absorbs the first-volume race
instead of handing it to the first chart a run writes.
"""

from __future__ import annotations

import contextlib
import os
import uuid

from shared.errors import QuantdeskError
from shared.storage.objects import ObjectRef, ObjectStore

PROBE_PREFIX = "quantdesk-health"
PROBE_BYTES = 64


def round_trip_problem(store: ObjectStore, buckets: tuple[str, ...]) -> str | None:
    """Why some bucket cannot round-trip a probe object, or None when every one can.

    Each probe has a key of its own, so a concurrent `status` and `up` never read
    each other's probe; it is deleted even when reading it back failed.
    """
    for bucket in buckets:
        ref = ObjectRef(bucket=bucket, key=f"{PROBE_PREFIX}/{uuid.uuid4().hex}")
        payload = os.urandom(PROBE_BYTES)
        try:
            store.put_bytes(ref, payload)
            try:
                echoed = store.get_bytes(ref)
            except QuantdeskError:
                with contextlib.suppress(QuantdeskError):
                    store.delete(ref)
                raise
            store.delete(ref)
        except QuantdeskError as error:
            return f"bucket {bucket!r} cannot round-trip a probe object: {error}"
        if echoed != payload:
            return f"bucket {bucket!r} returned other bytes than the probe object it stored"
    return None
