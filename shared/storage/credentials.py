"""Credentials for the embedded S3 server, generated once and kept private.

`quantdesk up` creates them on first start and every later process (workers,
CLI, tests) reads the same file, so the server and its clients always agree.
"""

from __future__ import annotations

import json
import os
import secrets
from pathlib import Path

CREDENTIALS_FILE = "s3-credentials.json"


def credentials_path(data_dir: Path) -> Path:
    """Where the generated credentials live."""
    return data_dir / CREDENTIALS_FILE


def read_generated_credentials(data_dir: Path) -> tuple[str, str] | None:
    """The stored (access key, secret key), or None before the first `up`."""
    path = credentials_path(data_dir)
    if not path.exists():
        return None
    data = json.loads(path.read_text())
    return data["access_key"], data["secret_key"]


def ensure_generated_credentials(data_dir: Path) -> tuple[str, str]:
    """Read the stored credentials, or create them with mode 0600 if there are none."""
    existing = read_generated_credentials(data_dir)
    if existing is not None:
        return existing
    data_dir.mkdir(parents=True, exist_ok=True)
    pair = ("qd" + secrets.token_hex(8), secrets.token_urlsafe(30))
    path = credentials_path(data_dir)
    # Create with 0600 from the first byte, so the secret is never world-readable.
    fd = os.open(path, os.O_WRONLY | os.O_CREAT | os.O_EXCL, 0o600)
    with os.fdopen(fd, "w") as handle:
        json.dump({"access_key": pair[0], "secret_key": pair[1]}, handle)
    return pair
