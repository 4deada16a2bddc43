"""Keeping tool answers small: an oversized answer is stored whole and the model gets a preview.

A tool message goes into every later turn of the conversation and through
Temporal's history, so it must stay small. When an answer exceeds
``MAX_CONTENT_CHARS`` the full JSON is stored in the payloads bucket under a key
derived from the call itself (a retried activity overwrites its own object), and
the model reads a preview: every list cut to its first and last items with a
marker saying how many were left out, long texts cut, and the stored key.
"""

from __future__ import annotations

import hashlib
import json
from typing import Any

from shared.storage.buckets import PAYLOADS_BUCKET
from shared.storage.objects import ObjectRef

MAX_CONTENT_CHARS = 8_000
"""The most characters of a tool answer the model reads."""

DEFAULT_KEY_PREFIX = "tool-results"
"""Where full answers go when the workflow chose no ``result_key_prefix``."""

# (items kept per list, characters kept per string), tried until the preview fits.
_PREVIEW_STEPS = ((20, 400), (10, 200), (6, 120), (2, 80), (1, 40))


def result_ref(name: str, arguments: dict[str, Any], prefix: str | None) -> ObjectRef:
    """The key of a call's full answer: the same call (as_of included) gives the same key."""
    call = json.dumps({"name": name, "arguments": arguments}, sort_keys=True, default=str)
    digest = hashlib.sha256(call.encode()).hexdigest()[:32]
    folder = (prefix or DEFAULT_KEY_PREFIX).strip("/")
    return ObjectRef(
        bucket=PAYLOADS_BUCKET,
        key=f"{folder}/{name}/{digest}.json",
        content_type="application/json",
    )


def preview(content: str, ref: ObjectRef | None) -> str:
    """What the model reads instead of ``content``: a shortened copy and where the whole is."""
    where = f"s3://{ref.bucket}/{ref.key}" if ref else None
    stored = f"the full result is stored at {where}" if where else "the full result was not stored"
    note = (
        f"the result has {len(content)} characters, over the {MAX_CONTENT_CHARS} limit: lists "
        f"show their first and last items and long texts are cut; {stored}. Ask for less "
        "(a shorter window, a lower limit) to see everything."
    )
    try:
        value: Any = json.loads(content)
    except ValueError:
        value = content
    for items, chars in _PREVIEW_STEPS:
        answer = _envelope(note, where, _shortened(value, items, chars))
        if len(answer) <= MAX_CONTENT_CHARS:
            return answer
    return _envelope(note, where, content[: MAX_CONTENT_CHARS // 2])


def _envelope(note: str, where: str | None, shown: object) -> str:
    return json.dumps({"truncated": True, "note": note, "full_result": where, "preview": shown})


def _shortened(value: Any, items: int, chars: int) -> Any:
    """``value`` with lists cut to ``items`` (head and tail) and strings to ``chars``."""
    if isinstance(value, dict):
        return {key: _shortened(item, items, chars) for key, item in value.items()}
    if isinstance(value, list):
        if len(value) <= items:
            return [_shortened(item, items, chars) for item in value]
        head, tail = items - items // 2, items // 2
        marker = f"... {len(value) - items} of {len(value)} items left out ..."
        kept = [*value[:head], marker, *value[len(value) - tail :]]
        return [_shortened(item, items, chars) for item in kept]
    if isinstance(value, str) and len(value) > chars:
        return value[:chars] + "..."
    return value
