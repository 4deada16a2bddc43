"""The keys that encrypt Temporal payloads: parsing key lines, sealing and opening bytes.

A key line is ``ID:BASE64KEY`` (a 256-bit AES key); a ring is several, comma- or
newline-separated, the first of which encrypts while every one decrypts, so a new
key is put first and old ones stay until no run or kept history needs them. Each
message is sealed with AES-256-GCM under a fresh 96-bit nonce, the key id bound in as
associated data: a payload whose id was swapped fails authentication like one whose
bytes were. Temporal's side (``workers.payload_codec``) lives with the workers; this
module holds no Temporal so the settings can check key lines when they are read.

Nothing here puts a key in a message, a repr or an error: only ids and positions.
"""

from __future__ import annotations

import base64
import binascii
import hashlib
import hmac
import os
import re
from collections.abc import Iterable

from cryptography.exceptions import InvalidTag
from cryptography.hazmat.primitives.ciphers.aead import AESGCM

from shared.errors import ConfigError, PayloadTampered

KEY_BYTES = 32
NONCE_BYTES = 12
KEY_ID_PATTERN = re.compile(r"[A-Za-z0-9._-]{1,64}")
"""What a key id may be: it travels in every payload's metadata and names the key in errors."""


def parse_key_lines(text: str) -> list[tuple[str, bytes]]:
    """``(id, key)`` pairs of ``text`` in order: ``ID:BASE64KEY`` entries separated by commas
    or newlines; blank entries and ``#`` comment lines are skipped.

    Raises ``ValueError`` naming the entry's position and id, never its key."""
    entries = [entry.strip() for entry in re.split(r"[,\n]", text)]
    entries = [entry for entry in entries if entry and not entry.startswith("#")]
    if not entries:
        raise ValueError("no key line: write ID:BASE64KEY (`quantdesk codec new-key` prints one)")
    pairs: list[tuple[str, bytes]] = []
    for position, entry in enumerate(entries, start=1):
        key_id, colon, encoded = entry.partition(":")
        key_id = key_id.strip()
        if not colon or not KEY_ID_PATTERN.fullmatch(key_id):
            raise ValueError(
                f"key {position} is not ID:BASE64KEY with an id of letters, digits, '.', '_' or '-'"
            )
        where = f"key {position} (id {key_id!r})"
        try:
            key = base64.b64decode(encoded.strip(), validate=True)
        except binascii.Error:
            raise ValueError(f"{where} is not valid base64") from None
        if len(key) != KEY_BYTES:
            raise ValueError(f"{where} is {len(key)} bytes; AES-256 needs {KEY_BYTES}")
        if key_id in (known for known, _ in pairs):
            raise ValueError(f"{where}: the id is given twice")
        pairs.append((key_id, key))
    return pairs


def new_key_line(key_id: str) -> str:
    """A fresh random key as a key line, ``ID:BASE64KEY``."""
    if not KEY_ID_PATTERN.fullmatch(key_id):
        raise ValueError(f"key id {key_id!r}: use 1-64 letters, digits, '.', '_' or '-'")
    return f"{key_id}:{base64.b64encode(AESGCM.generate_key(bit_length=256)).decode()}"


class PayloadKeys:
    """A key ring: the first key seals, every key opens; ``source`` names the setting the
    keys came from, which an error about a missing key tells the reader to add it to."""

    def __init__(self, pairs: Iterable[tuple[str, bytes]], *, source: str) -> None:
        self._keys = dict(pairs)
        self._ciphers = {key_id: AESGCM(key) for key_id, key in self._keys.items()}
        if not self._ciphers:
            raise ValueError("a key ring needs at least one key")
        self.source = source
        self.sealing_id = next(iter(self._ciphers))

    @property
    def ids(self) -> tuple[str, ...]:
        """The key ids, the sealing one first."""
        return tuple(self._ciphers)

    def __repr__(self) -> str:
        return f"PayloadKeys(ids={list(self.ids)!r}, source={self.source!r})"

    def seal(self, plaintext: bytes) -> tuple[str, bytes]:
        """``(key id, nonce + ciphertext and tag)`` of ``plaintext`` under the sealing key."""
        nonce = os.urandom(NONCE_BYTES)
        sealed = self._ciphers[self.sealing_id].encrypt(nonce, plaintext, self.sealing_id.encode())
        return self.sealing_id, nonce + sealed

    def digest(self, data: bytes, key_id: str | None = None) -> str:
        """HMAC-SHA256 of ``data`` under ``key_id`` (default: the sealing key), in hex: a
        content address that, unlike a plain hash, lets no one without the key confirm a
        guess of what was sealed."""
        key_id = key_id or self.sealing_id
        key = self._keys.get(key_id)
        if key is None:
            raise self._unknown(key_id)
        return hmac.new(key, data, hashlib.sha256).hexdigest()

    def _unknown(self, key_id: str) -> ConfigError:
        """The error for a payload under a key this ring lacks: which setting to add it to."""
        return ConfigError(
            self.source,
            f"a payload is encrypted with key id {key_id!r}, which is not among this "
            f"process's keys ({', '.join(self.ids)})",
            fix=f"Add the key line of {key_id!r} to {self.source} on every host (after the "
            "key that encrypts), and restart its workers and console.",
        )

    def open(self, key_id: str, sealed: bytes) -> bytes:
        """The plaintext ``seal`` gave ``sealed`` under ``key_id``; a ``ConfigError`` naming the
        id and ``source`` when this ring lacks it, ``PayloadTampered`` when it does not
        authenticate."""
        cipher = self._ciphers.get(key_id)
        if cipher is None:
            raise self._unknown(key_id)
        try:
            return cipher.decrypt(sealed[:NONCE_BYTES], sealed[NONCE_BYTES:], key_id.encode())
        except InvalidTag:
            raise PayloadTampered(key_id) from None
