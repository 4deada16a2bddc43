"""Payload encryption: the codec, its keys and the settings that give them.

The codec is exercised through the data converter every client uses
(``workers.converter.data_converter``), on the pydantic values quantdesk sends.
"""

from __future__ import annotations

import os
import subprocess
import sys
from datetime import UTC, datetime
from decimal import Decimal
from pathlib import Path

import pytest
from pydantic import BaseModel
from temporalio.api.common.v1 import Payload
from temporalio.contrib.pydantic import pydantic_data_converter
from temporalio.converter import DataConverter

from shared.config import Settings, load_settings
from shared.errors import ConfigError, PayloadTampered
from shared.payload_keys import new_key_line, parse_key_lines
from workers.converter import CodecChain, data_converter
from workers.payload_codec import ENCRYPTED, KEY_ID, EncryptingCodec
from workers.payload_storage import INLINE

ROOT = Path(__file__).resolve().parent.parent
OLD = new_key_line("2026-06")
NEW = new_key_line("2026-12")
SECRET_WORDS = "GOOG: the desk buys 120 shares at 171.25"


class Order(BaseModel):
    note: str
    quantity: Decimal
    at: datetime


ORDER = Order(note=SECRET_WORDS, quantity=Decimal("120"), at=datetime(2026, 12, 4, tzinfo=UTC))


def _key_of(line: str) -> str:
    return line.partition(":")[2]


def encrypting(keys: str) -> Settings:
    return load_settings(codec={"keys": keys, "enabled": True})


def converter(keys: str) -> DataConverter:
    return data_converter(encrypting(keys))


def codec_of(keys: str) -> EncryptingCodec:
    """The encrypting codec in the converter's chain (after compression)."""
    chain = converter(keys).payload_codec
    assert isinstance(chain, CodecChain)
    [codec] = [codec for codec in chain.codecs if isinstance(codec, EncryptingCodec)]
    return codec


async def _encoded(keys: str, value: object = ORDER) -> Payload:
    [payload] = await converter(keys).encode([value])
    return payload


async def test_a_value_round_trips_sealed_whole() -> None:
    payload = await _encoded(NEW)

    assert dict(payload.metadata) == {"encoding": ENCRYPTED, KEY_ID: b"2026-12"}
    assert b"GOOG" not in payload.data and b"json/plain" not in payload.data
    assert await converter(NEW).decode([payload], [Order]) == [ORDER]


async def test_a_sealed_query_answer_keeps_its_inline_mark_and_nothing_else_shows() -> None:
    [plain] = pydantic_data_converter.payload_converter.to_payloads([ORDER])
    plain.metadata[INLINE] = b"1"

    [sealed] = await codec_of(NEW).encode([plain])

    assert dict(sealed.metadata) == {"encoding": ENCRYPTED, KEY_ID: b"2026-12", INLINE: b"1"}
    assert b"GOOG" not in sealed.data
    assert await codec_of(NEW).decode([sealed]) == [plain]


async def test_each_payload_gets_a_fresh_nonce() -> None:
    first, second = await converter(NEW).encode([ORDER, ORDER])

    assert first.data[:12] != second.data[:12] and first.data != second.data


async def test_the_first_key_encrypts_and_the_older_ones_still_decrypt() -> None:
    before_rotation = await _encoded(OLD)
    rotated = f"{NEW},{OLD}"

    after_rotation = await _encoded(rotated)

    assert after_rotation.metadata[KEY_ID] == b"2026-12"
    assert await converter(rotated).decode([before_rotation], [Order]) == [ORDER]
    assert await converter(rotated).decode([after_rotation], [Order]) == [ORDER]


async def test_an_unknown_key_id_names_the_id_and_the_setting_never_a_key() -> None:
    sealed = await _encoded(NEW)

    with pytest.raises(ConfigError) as missing:
        await converter(OLD).decode([sealed], [Order])

    assert missing.value.setting == "QUANTDESK_CODEC__KEYS"
    assert "'2026-12'" in str(missing.value) and "2026-06" in str(missing.value)
    assert _key_of(NEW) not in str(missing.value) and _key_of(OLD) not in str(missing.value)


async def test_a_tampered_payload_fails_authentication() -> None:
    sealed = await _encoded(NEW)
    flipped = Payload(
        metadata=sealed.metadata, data=sealed.data[:-1] + bytes([sealed.data[-1] ^ 1])
    )

    with pytest.raises(PayloadTampered) as tampered:
        await converter(NEW).decode([flipped], [Order])

    assert tampered.value.key_id == "2026-12" and _key_of(NEW) not in str(tampered.value)


async def test_a_payload_under_another_key_id_fails_authentication() -> None:
    sealed = await _encoded(NEW)
    relabelled = Payload(metadata={**sealed.metadata, KEY_ID: b"2026-06"}, data=sealed.data)

    with pytest.raises(PayloadTampered):
        await converter(f"{NEW},{OLD}").decode([relabelled], [Order])


async def test_plain_payloads_pass_through_decoding() -> None:
    [plain] = await pydantic_data_converter.encode([ORDER])

    assert await codec_of(NEW).decode([plain]) == [plain]
    assert await converter(NEW).decode([plain], [Order]) == [ORDER]


def test_the_codec_and_its_keys_show_ids_only() -> None:
    shown = f"{codec_of(NEW)!r} {encrypting(NEW)!r} {encrypting(NEW).codec}"

    assert "2026-12" in shown and _key_of(NEW) not in shown


# --- settings -------------------------------------------------------------------------------


def test_encryption_is_on_for_an_external_cluster_and_off_for_the_embedded_one() -> None:
    assert load_settings(codec={"keys": NEW}).payload_keys() is None
    embedded = data_converter(load_settings()).payload_codec
    assert isinstance(embedded, CodecChain)
    assert not any(isinstance(codec, EncryptingCodec) for codec in embedded.codecs)
    external = load_settings(temporal={"embedded": False}, codec={"keys": NEW})
    assert external.payload_keys() is not None
    refused = load_settings(temporal={"embedded": False}, codec={"keys": NEW, "enabled": False})
    assert refused.payload_keys() is None


@pytest.mark.parametrize(
    "overrides",
    [{"temporal": {"embedded": False}}, {"codec": {"enabled": True}}],
    ids=["external cluster", "enabled"],
)
def test_encryption_on_without_keys_names_both_settings_and_the_fix(
    overrides: dict[str, object],
) -> None:
    with pytest.raises(ConfigError) as missing:
        load_settings(**overrides).payload_keys()

    assert missing.value.setting == "QUANTDESK_CODEC__KEYS"
    assert "QUANTDESK_CODEC__KEY_FILE" in str(missing.value)
    assert "quantdesk codec new-key" in (missing.value.fix or "")


@pytest.mark.parametrize(
    ("keys", "problem"),
    [
        ("2026-12:not*base64", "key 1 (id '2026-12') is not valid base64"),
        (f"{NEW},2026-01:c2hvcnQ=", "key 2 (id '2026-01') is 5 bytes; AES-256 needs 32"),
        (_key_of(NEW), "key 1 is not ID:BASE64KEY"),
        (f"{NEW},{NEW}", "the id is given twice"),
    ],
    ids=["bad base64", "short key", "no id", "twice"],
)
def test_malformed_keys_name_the_variable_never_the_key(keys: str, problem: str) -> None:
    with pytest.raises(ConfigError) as refused:
        load_settings(codec={"keys": keys})

    assert "QUANTDESK_CODEC__KEYS" in str(refused.value) and problem in str(refused.value)
    assert _key_of(NEW) not in str(refused.value) and "c2hvcnQ=" not in str(refused.value)


def test_keys_come_from_a_key_file_one_per_line(tmp_path: Path) -> None:
    key_file = tmp_path / "payload-keys"
    key_file.write_text(f"# rotated 2026-12-04\n{NEW}\n{OLD}\n")

    keys = load_settings(codec={"key_file": key_file, "enabled": True}).payload_keys()

    assert keys is not None and keys.ids == ("2026-12", "2026-06")
    assert keys.source == "QUANTDESK_CODEC__KEY_FILE"


def test_a_bad_key_file_names_its_variable_never_the_key(tmp_path: Path) -> None:
    missing = load_settings(codec={"key_file": tmp_path / "absent", "enabled": True})
    short = tmp_path / "short"
    short.write_text(f"{NEW}\n2026-01:c2hvcnQ=\n")

    with pytest.raises(ConfigError) as unreadable:
        missing.payload_keys()
    with pytest.raises(ConfigError) as malformed:
        load_settings(codec={"key_file": short, "enabled": True}).payload_keys()

    assert unreadable.value.setting == malformed.value.setting == "QUANTDESK_CODEC__KEY_FILE"
    assert "absent" in str(unreadable.value)
    assert "key 2 (id '2026-01') is 5 bytes" in str(malformed.value)
    assert "c2hvcnQ=" not in str(malformed.value)


def test_keys_and_a_key_file_together_are_refused(tmp_path: Path) -> None:
    (tmp_path / "keys").write_text(OLD)
    both = load_settings(codec={"keys": NEW, "key_file": tmp_path / "keys", "enabled": True})

    with pytest.raises(ConfigError, match="QUANTDESK_CODEC__KEY_FILE are set"):
        both.payload_keys()


def test_the_codec_endpoint_is_open_to_the_embedded_web_ui_unless_told_otherwise() -> None:
    assert load_settings(temporal={"ui_port": 8299}).web_ui_origins == [
        "http://127.0.0.1:8299",
        "http://localhost:8299",
    ]
    told = load_settings(codec={"web_ui_origins": "https://ui.example:8080/, http://b:1"})
    assert told.web_ui_origins == ["https://ui.example:8080", "http://b:1"]


def test_quantdesk_codec_new_key_prints_a_line_the_settings_accept() -> None:
    run = subprocess.run(
        [sys.executable, "-m", "cli.main", "codec", "new-key", "--id", "2027-01"],
        cwd=ROOT,
        env={**os.environ, "QUANTDESK_DATA_DIR": "/nonexistent"},
        capture_output=True,
        text=True,
        timeout=120,
    )

    assert run.returncode == 0, run.stderr
    line = run.stdout.strip()
    [(key_id, key)] = parse_key_lines(line)
    assert key_id == "2027-01" and len(key) == 32
    assert "QUANTDESK_CODEC__KEYS" in run.stderr and line not in run.stderr
    assert encrypting(line).payload_keys() is not None
