"""Payload encryption settings: the keys every client seals what it sends Temporal with,
and when encryption is on."""

from __future__ import annotations

from pathlib import Path

from pydantic import BaseModel, Field, SecretStr, field_validator

from shared.config.variables import ENV_PREFIX
from shared.errors import ConfigError
from shared.payload_keys import PayloadKeys, parse_key_lines

CODEC_KEYS_SETTING = f"{ENV_PREFIX}CODEC__KEYS"
CODEC_KEY_FILE_SETTING = f"{ENV_PREFIX}CODEC__KEY_FILE"
CODEC_ENABLED_SETTING = f"{ENV_PREFIX}CODEC__ENABLED"
CODEC_ORIGINS_SETTING = f"{ENV_PREFIX}CODEC__WEB_UI_ORIGINS"


class CodecSettings(BaseModel):
    """Payload encryption: every client (workers, CLI, console, benches) seals what it sends
    Temporal with AES-256-GCM, so histories hold no plain prompt, report or book figure.

    The keys are ``ID:BASE64KEY`` lines (``quantdesk codec new-key``), from ``keys`` or
    ``key_file``, the same on every host: the first encrypts, every one decrypts."""

    keys: SecretStr | None = Field(
        None, description="key lines, comma-separated: the first encrypts, all decrypt"
    )
    key_file: Path | None = Field(
        None, description="a file of key lines, one per line (a secrets mount); instead of keys"
    )
    enabled: bool | None = Field(
        None,
        description="encrypt payloads; None: on for an external cluster (temporal.embedded "
        "false), off for the embedded one",
    )
    web_ui_origins: list[str] | None = Field(
        None,
        description="origins whose pages may call the console's codec endpoint, comma-"
        "separated; None: the embedded Web UI's (http://127.0.0.1:<ui_port>, localhost too)",
    )

    @field_validator("keys")
    @classmethod
    def _key_lines(cls, value: SecretStr | None) -> SecretStr | None:
        """Malformed key lines fail when settings are read, not at the first payload."""
        if value is None or not value.get_secret_value().strip():
            return None
        parse_key_lines(value.get_secret_value())
        return value

    @field_validator("web_ui_origins", mode="before")
    @classmethod
    def _comma_separated(cls, value: object) -> object:
        if isinstance(value, str):
            return [origin.strip().rstrip("/") for origin in value.split(",") if origin.strip()]
        return value

    def ring(self, *, embedded: bool) -> PayloadKeys | None:
        """The key ring when payloads are encrypted (``enabled``, else on for an external
        cluster), None when not; a ``ConfigError`` naming the setting when it is on without
        usable keys."""
        if not (self.enabled if self.enabled is not None else not embedded):
            return None
        if self.keys is not None and self.key_file is not None:
            raise ConfigError(
                CODEC_KEYS_SETTING,
                f"both {CODEC_KEYS_SETTING} and {CODEC_KEY_FILE_SETTING} are set",
                fix="Keep one of them, so there is no doubt which key encrypts.",
            )
        if self.keys is not None:
            pairs = parse_key_lines(self.keys.get_secret_value())
            return PayloadKeys(pairs, source=CODEC_KEYS_SETTING)
        if self.key_file is not None:
            return PayloadKeys(self._file_lines(self.key_file), source=CODEC_KEY_FILE_SETTING)
        why = (
            f"{CODEC_ENABLED_SETTING} is true"
            if self.enabled
            else f"Temporal is external ({ENV_PREFIX}TEMPORAL__EMBEDDED=false)"
        )
        raise ConfigError(
            CODEC_KEYS_SETTING,
            f"payloads are encrypted because {why}, but no key is set",
            fix=f"Run `quantdesk codec new-key` and put its line in {CODEC_KEYS_SETTING} or in "
            f"the file {CODEC_KEY_FILE_SETTING} names, the same on every host; or set "
            f"{CODEC_ENABLED_SETTING}=false to send payloads in plain text.",
        )

    @staticmethod
    def _file_lines(path: Path) -> list[tuple[str, bytes]]:
        try:
            text = path.read_text()
        except OSError as error:
            raise ConfigError(
                CODEC_KEY_FILE_SETTING,
                f"cannot read the key file {path} ({error.strerror})",
                fix="Point it at a readable file of ID:BASE64KEY lines.",
            ) from None
        try:
            return parse_key_lines(text)
        except ValueError as error:
            raise ConfigError(
                CODEC_KEY_FILE_SETTING,
                f"the key file {path}: {error}",
                fix="Write one ID:BASE64KEY line per key (`quantdesk codec new-key`).",
            ) from None
