"""The opt-in reply cache: the same request to the same model is answered from storage.

A backtest re-run, or any run repeated on purpose, then costs nothing and gives
the same answers. The key is the SHA-256 of a canonical JSON of everything the
vendor's answer depends on: provider, the resolved model, the messages (an
image by the SHA-256 of its bytes, not by its object key, which differs per
run), the tools, the response schema (name and JSON schema, so a changed schema
misses), temperature and max tokens, and a repeat's number (``sample``, only when
not 0), so the repeats of an evaluation are asked, not read back. Never a key, a
base URL or anything else from the worker's settings: the key material holds no
secret, and neither does the stored reply (a ``ChatResponse``). A hit returns the stored reply exactly,
its usage and latency included, so a replayed run is identical to the first.

Stored in the object store (``payloads/reply-cache/v1/<2 hex>/<key>.json``),
not SQL: the cache is a key-to-blob map with no query but "get by key", every
LLM worker already reaches S3 (images, kept raw replies), and the same bucket
serves every worker replica on every machine without a shared database. A miss
costs one GET. The offline provider is never cached: it is free and
deterministic, and its answers depend on the request's ``inputs``, which are
not part of the key.
"""

from __future__ import annotations

import hashlib
import json
from collections.abc import Mapping
from typing import Any

from pydantic import ValidationError

from shared.errors import ObjectNotFound
from shared.llm.contracts import ChatMessage, ChatRequest, ChatResponse
from shared.storage.buckets import PAYLOADS_BUCKET
from shared.storage.objects import ObjectRef, ObjectStore

CACHE_PREFIX = "reply-cache/v1"
"""Bump the version when the key material changes: old entries are then never read."""
JSON = "application/json"


def _message(message: ChatMessage, images: Mapping[str, bytes]) -> dict[str, Any]:
    data = message.model_dump(mode="json", exclude={"images"})
    data["images"] = [hashlib.sha256(images[ref.key]).hexdigest() for ref in message.images]
    return data


def key_material(
    request: ChatRequest,
    model: str,
    images: Mapping[str, bytes],
    schema: Mapping[str, Any] | None,
) -> str:
    """The canonical JSON the key is the hash of; ``images`` maps each image's key to its bytes."""
    material = {
        "provider": request.provider,
        "model": model,
        "messages": [_message(message, images) for message in request.messages],
        "tools": [tool.model_dump(mode="json") for tool in request.tools],
        "response_schema": {"name": request.response_schema, "json_schema": schema},
        "temperature": request.temperature,
        "max_tokens": request.max_tokens,
    }
    if request.sample:
        # A repeat asks the same question again on purpose; a first run keeps its old key.
        material["sample"] = request.sample
    return json.dumps(material, sort_keys=True, separators=(",", ":"), ensure_ascii=False)


def cache_key(
    request: ChatRequest,
    model: str,
    images: Mapping[str, bytes],
    schema: Mapping[str, Any] | None,
) -> str:
    """The SHA-256 hex digest of ``key_material``."""
    return hashlib.sha256(key_material(request, model, images, schema).encode()).hexdigest()


class ReplyCache:
    """Replies by key in the object store."""

    def __init__(self, store: ObjectStore, *, bucket: str = PAYLOADS_BUCKET) -> None:
        self.store = store
        self.bucket = bucket

    def ref(self, key: str) -> ObjectRef:
        """Where the reply of ``key`` is stored."""
        return ObjectRef(bucket=self.bucket, key=f"{CACHE_PREFIX}/{key[:2]}/{key}.json")

    def get(self, key: str) -> ChatResponse | None:
        """The stored reply, or None; an unreadable entry counts as a miss (and is rewritten).

        An unreachable store raises (retryable): asking the vendor instead would
        spend what the cache was turned on to save."""
        try:
            data = self.store.get_bytes(self.ref(key))
        except ObjectNotFound:
            return None
        try:
            return ChatResponse.model_validate_json(data)
        except ValidationError:
            return None

    def put(self, key: str, response: ChatResponse) -> ObjectRef:
        """Store ``response`` under ``key``, replacing what was there."""
        ref = self.ref(key).model_copy(update={"content_type": JSON})
        return self.store.put_bytes(ref, response.model_dump_json().encode())
