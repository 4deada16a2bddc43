"""Payload compression: what would go to S3 is compressed first and, when that is enough,
travels inline; everything smaller stays as it was.

Exercised through the data converter every client uses (``workers.converter``), with
settings whose S3 cannot be reached: a payload that stays inline never needs it, so a
test that passes here proves no round trip was made. A Pipeline's history with
compressed payloads is checked in ``tests/test_claim_check.py``.
"""

from __future__ import annotations

import dataclasses
import json
import os

import pytest
from pydantic import BaseModel
from temporalio.api.common.v1 import Payload
from temporalio.contrib.pydantic import pydantic_data_converter

import workers.payload_compression as compression
from shared.config import Settings, load_settings
from shared.payload_keys import new_key_line
from workers.converter import CodecChain, data_converter
from workers.payload_codec import ENCRYPTED, EncryptingCodec
from workers.payload_compression import COMPRESSED, CompressingCodec
from workers.payload_storage import INLINE, ClaimCheckDriver, reference_in, retrieved

UNREACHABLE_S3 = {"endpoint": "127.0.0.1:9", "access_key": "k", "secret_key": "s"}
"""Nothing listens on the discard port: storing a payload there fails at once."""


class Report(BaseModel):
    """A chat reply's shape: prose, repetitive the way an analyst's report is."""

    agent: str
    text: str


REPORT = Report(
    agent="market_analyst",
    text=" ".join(
        f"Day {day}: close {100 + day % 7}.25, RSI {40 + day % 20}, MACD above its signal."
        for day in range(60)
    ),
)
SMALL = Report(agent="trader", text="Hold GOOG: no edge either way.")


def _settings(**overrides: object) -> Settings:
    return load_settings(s3=UNREACHABLE_S3, **overrides)


async def _encoded(value: object, settings: Settings) -> Payload:
    [payload] = await data_converter(settings).encode([value])
    return payload


async def test_a_large_compressible_value_travels_inline_compressed() -> None:
    settings = _settings()
    plain_size = pydantic_data_converter.payload_converter.to_payloads([REPORT])[0].ByteSize()

    payload = await _encoded(REPORT, settings)

    assert plain_size > settings.inline_max_bytes  # without compression it would be stored
    assert dict(payload.metadata) == {"encoding": COMPRESSED}
    assert payload.ByteSize() < settings.inline_max_bytes
    assert b"market_analyst" not in payload.data
    assert await data_converter(settings).decode([payload], [Report]) == [REPORT]


async def test_a_value_under_the_threshold_stays_plain_and_readable() -> None:
    payload = await _encoded(SMALL, _settings())

    assert payload.metadata["encoding"] == b"json/plain"
    assert json.loads(payload.data)["text"] == SMALL.text


async def test_a_payload_that_does_not_shrink_is_left_as_it_was() -> None:
    noise = Payload(metadata={"encoding": b"binary/plain"}, data=os.urandom(8192))

    [encoded] = await CompressingCodec(min_bytes=1024).encode([noise])

    assert encoded == noise


async def test_a_query_answer_is_never_compressed() -> None:
    [answer] = pydantic_data_converter.payload_converter.to_payloads([REPORT])
    answer.metadata[INLINE] = b"1"

    [encoded] = await CompressingCodec(min_bytes=1024).encode([answer])

    assert encoded == answer


async def test_still_too_large_once_compressed_it_is_stored_compressed(
    s3_settings: Settings,
) -> None:
    noise = Report(agent="x", text=os.urandom(6000).hex())  # halves at best
    converter = data_converter(s3_settings)

    [payload] = await converter.encode([noise])

    stored = await _stored(s3_settings, payload)
    assert stored.metadata["encoding"] == COMPRESSED
    assert stored.ByteSize() < len(noise.text)
    assert await converter.decode([payload], [Report]) == [noise]


async def test_with_compression_off_a_large_value_is_stored_as_it_was(
    s3_settings: Settings,
) -> None:
    settings = s3_settings.model_copy(update={"payload_compression": False})
    converter = data_converter(settings)
    assert converter.payload_codec is None

    [payload] = await converter.encode([REPORT])

    stored = await _stored(settings, payload)
    assert stored.metadata["encoding"] == b"json/plain"
    assert await converter.decode([payload], [Report]) == [REPORT]


async def _stored(settings: Settings, payload: Payload) -> Payload:
    """The payload ``payload`` is a reference to, read from S3; fails if it is none."""
    assert reference_in(payload) is not None, f"not stored: {payload.metadata}"
    [stored] = await retrieved(ClaimCheckDriver(settings), [payload])
    return stored


async def test_compressed_then_sealed_and_back() -> None:
    settings = _settings(codec={"keys": new_key_line("2026-12"), "enabled": True})
    chain = data_converter(settings).payload_codec
    assert isinstance(chain, CodecChain)
    assert [type(codec) for codec in chain.codecs] == [CompressingCodec, EncryptingCodec]

    payload = await _encoded(REPORT, settings)

    assert payload.metadata["encoding"] == ENCRYPTED and b"market_analyst" not in payload.data
    assert payload.ByteSize() < settings.inline_max_bytes  # sealed after compressing
    assert await data_converter(settings).decode([payload], [Report]) == [REPORT]


async def test_payloads_written_before_compression_still_decode() -> None:
    [plain] = pydantic_data_converter.payload_converter.to_payloads([REPORT])

    assert await data_converter(_settings()).decode([plain], [Report]) == [REPORT]


async def test_a_payload_that_would_expand_past_the_cap_is_refused(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    [compressed] = await CompressingCodec(min_bytes=0).encode(
        pydantic_data_converter.payload_converter.to_payloads([REPORT])
    )
    monkeypatch.setattr(compression, "MAX_EXPANDED_BYTES", 1000)

    with pytest.raises(ValueError, match="expands past 1000 bytes"):
        await CompressingCodec(min_bytes=0).decode([compressed])


class _Quote(BaseModel):
    symbol: str
    price: float


def test_every_copy_the_sdk_makes_of_the_converter_shares_one_pydantic_converter() -> None:
    # The SDK copies the data converter for each command's payloads (dataclasses.replace);
    # each copy must not build its own payload converter, and all must still round-trip.
    converter = data_converter(load_settings())
    copies = [dataclasses.replace(converter) for _ in range(3)]

    inner = {id(copy.payload_converter._inner_payload_converter) for copy in copies}  # type: ignore[attr-defined]
    assert len(inner) == 1
    payloads = copies[0].payload_converter.to_payloads([_Quote(symbol="GOOG", price=580.5)])
    assert copies[2].payload_converter.from_payloads(payloads, [_Quote]) == [
        _Quote(symbol="GOOG", price=580.5)
    ]
