"""The console's codec endpoint over HTTP (the real app through its ASGI transport): the
protocol's JSON shape, the console token, CORS for the Web UI; and `up` pointing the
embedded Web UI at it."""

from __future__ import annotations

import base64
import json
import os
from collections.abc import AsyncIterator
from pathlib import Path
from typing import Any

import httpx
import pytest_asyncio
from google.protobuf import json_format

from cli.stack.components import TemporalProbe, plan
from console.app import create_app
from shared.config import Settings, load_settings
from shared.payload_keys import new_key_line
from workers.converter import data_converter
from workers.payload_compression import COMPRESSED
from workers.payload_storage import reference_in

KEYS = new_key_line("2026-12")
TOKEN = "t0ken-for-the-codec"
WEB_UI = "http://127.0.0.1:8233"
PLAIN = {"encoding": b"json/plain"}
VALUE = b'{"symbol": "GOOG", "note": "buy 120"}'


def b64(raw: bytes) -> str:
    return base64.b64encode(raw).decode()


def wire(metadata: dict[str, bytes], data: bytes) -> dict[str, Any]:
    """One payload in the protocol's JSON form: data and metadata values base64."""
    return {"metadata": {k: b64(v) for k, v in metadata.items()}, "data": b64(data)}


def unwire(payload: dict[str, Any]) -> tuple[dict[str, bytes], bytes]:
    metadata = {k: base64.b64decode(v) for k, v in payload.get("metadata", {}).items()}
    return metadata, base64.b64decode(payload.get("data", ""))


def console_settings(tmp_path: Path, **overrides: Any) -> Settings:
    codec = overrides.pop("codec", {"keys": KEYS, "enabled": True})
    return load_settings(data_dir=tmp_path, codec=codec, **overrides)


@pytest_asyncio.fixture(loop_scope="session")
async def http(tmp_path: Path) -> AsyncIterator[httpx.AsyncClient]:
    """The console with a token and a codec, on its default Web UI origins."""
    app = create_app(console_settings(tmp_path, console={"token": TOKEN}))
    transport = httpx.ASGITransport(app=app)
    async with httpx.AsyncClient(transport=transport, base_url="http://127.0.0.1:8400") as client:
        yield client


BEARER = {"Authorization": f"Bearer {TOKEN}"}


async def test_encode_then_decode_gives_the_payloads_back(http: httpx.AsyncClient) -> None:
    body = {"payloads": [wire(PLAIN, VALUE), wire(PLAIN, b"{}")]}

    encoded = await http.post("/codec/encode", json=body, headers=BEARER)
    decoded = await http.post("/codec/decode", json=encoded.json(), headers=BEARER)

    assert encoded.status_code == 200 and encoded.headers["content-type"] == "application/json"
    sealed = [unwire(p) for p in encoded.json()["payloads"]]
    assert [m["encoding"] for m, _ in sealed] == [b"binary/encrypted"] * 2
    assert all(m["encryption-key-id"] == b"2026-12" and b"GOOG" not in d for m, d in sealed)
    assert decoded.status_code == 200
    assert [unwire(p) for p in decoded.json()["payloads"]] == [(PLAIN, VALUE), (PLAIN, b"{}")]


async def test_plain_payloads_come_back_from_decode_as_they_went(http: httpx.AsyncClient) -> None:
    body = {"payloads": [wire(PLAIN, VALUE)]}

    decoded = await http.post("/codec/decode", json=body, headers=BEARER)

    assert [unwire(p) for p in decoded.json()["payloads"]] == [(PLAIN, VALUE)]


async def test_the_endpoint_asks_for_the_console_token(http: httpx.AsyncClient) -> None:
    body = {"payloads": [wire(PLAIN, VALUE)]}

    without = await http.post("/codec/decode", json=body)
    wrong = await http.post("/codec/decode", json=body, headers={"Authorization": "Bearer no"})
    with_token = await http.post("/codec/decode", json=body, headers=BEARER)

    assert without.status_code == wrong.status_code == 401
    assert with_token.status_code == 200


async def test_the_web_uis_preflight_is_answered_without_a_token(http: httpx.AsyncClient) -> None:
    preflight = await http.options(
        "/codec/decode",
        headers={
            "Origin": WEB_UI,
            "Access-Control-Request-Method": "POST",
            "Access-Control-Request-Headers": "content-type,x-namespace,authorization",
        },
    )

    assert preflight.status_code == 204
    assert preflight.headers["access-control-allow-origin"] == WEB_UI
    assert preflight.headers["access-control-allow-credentials"] == "true"
    assert "POST" in preflight.headers["access-control-allow-methods"]
    allowed = {h.strip() for h in preflight.headers["access-control-allow-headers"].split(",")}
    assert {"content-type", "authorization", "x-namespace"} <= allowed


async def test_the_web_uis_request_is_answered_with_cors_headers(http: httpx.AsyncClient) -> None:
    body = {"payloads": [wire(PLAIN, VALUE)]}
    headers = {**BEARER, "Origin": WEB_UI, "X-Namespace": "default"}

    answer = await http.post("/codec/decode", json=body, headers=headers)
    refused = await http.post("/codec/decode", json=body, headers={"Origin": WEB_UI})

    assert answer.status_code == 200
    assert answer.headers["access-control-allow-origin"] == WEB_UI
    assert answer.headers["access-control-allow-credentials"] == "true"
    # The Web UI sees why it was refused, not an opaque CORS failure.
    assert refused.status_code == 401 and refused.headers["access-control-allow-origin"] == WEB_UI


async def test_pages_of_other_origins_are_refused(http: httpx.AsyncClient) -> None:
    evil = {"Origin": "http://evil.example", "Access-Control-Request-Method": "POST"}
    body = {"payloads": [wire(PLAIN, VALUE)]}

    preflight = await http.options("/codec/decode", headers=evil)
    posted = await http.post("/codec/decode", json=body, headers={**BEARER, **evil})

    assert preflight.status_code == posted.status_code == 403
    assert "access-control-allow-origin" not in preflight.headers
    assert "QUANTDESK_CODEC__WEB_UI_ORIGINS" in posted.text


async def test_a_malformed_body_is_a_400_saying_what_is_expected(http: httpx.AsyncClient) -> None:
    answer = await http.post("/codec/decode", content=b"[1, 2]", headers=BEARER)

    assert answer.status_code == 400 and '{"payloads": [...]}' in answer.json()["message"]


async def test_a_payload_under_an_unknown_key_names_the_key_id(tmp_path: Path) -> None:
    other = new_key_line("2027-01")
    sealing = create_app(console_settings(tmp_path, codec={"keys": other, "enabled": True}))
    reading = create_app(console_settings(tmp_path))
    body = {"payloads": [wire(PLAIN, VALUE)]}

    async with httpx.AsyncClient(
        transport=httpx.ASGITransport(app=sealing), base_url="http://c"
    ) as a:
        sealed = (await a.post("/codec/encode", json=body)).json()
    async with httpx.AsyncClient(
        transport=httpx.ASGITransport(app=reading), base_url="http://c"
    ) as b:
        answer = await b.post("/codec/decode", json=sealed)

    assert answer.status_code == 422
    message = answer.json()["message"]
    assert "'2027-01'" in message and "QUANTDESK_CODEC__KEYS" in message
    assert other.partition(":")[2] not in message and KEYS.partition(":")[2] not in message


async def test_a_console_with_encryption_on_but_no_keys_says_so(tmp_path: Path) -> None:
    app = create_app(console_settings(tmp_path, codec={"enabled": True}))
    body = {"payloads": [wire(PLAIN, VALUE)]}

    async with httpx.AsyncClient(transport=httpx.ASGITransport(app=app), base_url="http://c") as c:
        answer = await c.post("/codec/decode", json=body)

    assert answer.status_code == 503 and "quantdesk codec new-key" in answer.json()["message"]


async def test_a_plain_console_reads_a_stored_payload_back(
    tmp_path: Path, s3_settings: Settings
) -> None:
    access, secret = s3_settings.s3_credentials()
    s3 = {**s3_settings.s3.model_dump(), "access_key": access, "secret_key": secret}
    settings = console_settings(tmp_path, codec={}, s3=s3)
    prompt = os.urandom(4000).hex()  # too large for the history even compressed
    repetitive = "a long prompt " * 200  # compressed, it travels inline
    stored, compressed = await data_converter(settings).encode(
        [{"prompt": prompt}, {"prompt": repetitive}]
    )
    app = create_app(settings)

    async with httpx.AsyncClient(transport=httpx.ASGITransport(app=app), base_url="http://c") as c:
        answer = await c.post(
            "/codec/decode",
            json={"payloads": [json_format.MessageToDict(p) for p in (stored, compressed)]},
        )
        plain = await c.post("/codec/decode", json={"payloads": [wire(PLAIN, VALUE)]})

    assert reference_in(stored) is not None and prompt.encode() not in stored.data
    assert compressed.metadata["encoding"] == COMPRESSED
    decoded = [unwire(p) for p in answer.json()["payloads"]]
    assert [metadata["encoding"] for metadata, _ in decoded] == [b"json/plain"] * 2
    assert [json.loads(data) for _, data in decoded] == [{"prompt": prompt}, {"prompt": repetitive}]
    assert [unwire(p) for p in plain.json()["payloads"]] == [(PLAIN, VALUE)]


def test_up_points_the_embedded_web_ui_at_the_consoles_codec(tmp_path: Path) -> None:
    def dev_server_argv(settings: Settings) -> list[str]:
        with TemporalProbe(settings) as probe:
            [temporal] = [c for c in plan(settings, [], probe) if c.name == "temporal"]
        assert temporal.launch is not None
        return temporal.launch().argv

    # Encrypted or not: large payloads are kept in S3, which the Web UI reads through it.
    for codec in ({"keys": KEYS, "enabled": True}, {}):
        argv = dev_server_argv(console_settings(tmp_path, codec=codec, console={"port": 18401}))

        flag = argv.index("--ui-codec-endpoint")
        assert argv[flag + 1] == "http://127.0.0.1:18401/codec"
