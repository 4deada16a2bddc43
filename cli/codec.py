"""`quantdesk codec new-key`: a key line for payload encryption, to set up or rotate keys.

The line goes to stdout alone, so it can be appended to a key file or piped into a
secret store; what to do with it goes to stderr.
"""

from __future__ import annotations

from datetime import UTC, datetime

import typer
from rich.console import Console

from client.process_exit import fail_on_quantdesk_errors, finish
from shared.config import CODEC_KEY_FILE_SETTING, CODEC_KEYS_SETTING
from shared.errors import InvalidInput
from shared.payload_keys import new_key_line

codec_app = typer.Typer(
    help=f"Payload encryption keys ({CODEC_KEYS_SETTING}, {CODEC_KEY_FILE_SETTING}).",
    no_args_is_help=True,
)
guidance = Console(stderr=True)


@codec_app.command("new-key")
def new_key(
    key_id: str | None = typer.Option(
        None, "--id", help="the key's id (letters, digits, '.', '_', '-'); default: today's date"
    ),
) -> None:
    """Print a new key line, ID:BASE64KEY (a random AES-256 key)."""
    with fail_on_quantdesk_errors():
        chosen = key_id or datetime.now(UTC).strftime("%Y-%m-%d")
        try:
            line = new_key_line(chosen)
        except ValueError as problem:
            raise InvalidInput("--id", str(problem)) from None
    print(line, flush=True)
    guidance.print(
        f"Put it first in {CODEC_KEYS_SETTING} (comma-separated) or the file "
        f"{CODEC_KEY_FILE_SETTING} names, on every worker, CLI and console host; keep the "
        "older keys after it until no open run or kept history needs them.",
        highlight=False,
        soft_wrap=True,
    )
    finish(0)
