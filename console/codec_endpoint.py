"""Temporal's remote codec endpoint, so the Web UI and the `temporal` CLI show readable
inputs and results of runs whose payloads are encrypted.

``POST /codec/encode`` and ``POST /codec/decode`` take ``{"payloads": [...]}`` in the
proto3 JSON form of ``temporal.api.common.v1.Payloads`` (``data`` and every metadata
value base64) and answer the same shape, run through the console's own payload codec
(Temporal's Codec Server protocol); a decoded payload stored in S3 (``workers.payload_storage``)
is read back first. The ``X-Namespace`` header is not needed: one key
ring serves the console's cluster. Who may call is decided before a request gets here:
the console token like every page, and which web pages may (CORS) by
``console.security.codec_cors``.
"""

from __future__ import annotations

from fastapi import APIRouter, Request, Response
from fastapi.responses import JSONResponse
from google.protobuf import json_format
from temporalio.api.common.v1 import Payloads

from cli.stack.console import CODEC_PREFIX
from console.web import desk_of
from shared.config import CODEC_ENABLED_SETTING
from shared.errors import ConfigError, QuantdeskError
from workers.payload_storage import retrieved

router = APIRouter(prefix=CODEC_PREFIX)


@router.post("/encode")
async def encode(request: Request) -> Response:
    """Payloads sealed under the first key (a start or signal typed into the Web UI)."""
    return await _through_codec(request, decoding=False)


@router.post("/decode")
async def decode(request: Request) -> Response:
    """Sealed payloads opened; plain ones answered as they came."""
    return await _through_codec(request, decoding=True)


async def _through_codec(request: Request, *, decoding: bool) -> Response:
    try:
        codec = desk_of(request).codec
    except ConfigError as error:
        return _problem(503, str(error))
    if codec is None:
        return _problem(
            404,
            "this console encrypts no payloads, so it has no codec to serve: set "
            f"{CODEC_ENABLED_SETTING}=true (and the same keys as the workers) to turn it on",
        )
    try:
        given = json_format.Parse(await request.body(), Payloads())
    except (json_format.ParseError, UnicodeDecodeError) as error:
        return _problem(
            400,
            f'the body is not Temporal\'s JSON form of Payloads ({{"payloads": [...]}}): {error}',
        )
    try:
        payloads = list(given.payloads)
        if decoding:
            # Large payloads are stored in S3: the reference is read back first.
            payloads = await retrieved(desk_of(request).payload_storage, payloads)
        done = await (codec.decode if decoding else codec.encode)(payloads)
    except QuantdeskError as error:
        return _problem(422, str(error))
    return Response(
        json_format.MessageToJson(Payloads(payloads=done), indent=None),
        media_type="application/json",
    )


def _problem(status: int, message: str) -> JSONResponse:
    return JSONResponse({"message": message}, status_code=status)
