"""Temporal's remote codec endpoint, so the Web UI and the `temporal` CLI show readable
inputs and results: large payloads are kept in S3, and all are sealed when encryption is on.

``POST /codec/encode`` and ``POST /codec/decode`` take ``{"payloads": [...]}`` in the
proto3 JSON form of ``temporal.api.common.v1.Payloads`` (``data`` and every metadata
value base64) and answer the same shape, run through the console's own payload codec when it
encrypts (Temporal's Codec Server protocol); a decoded payload stored in S3
(``workers.payload_storage``) is read back first, and a query's answer is given without the
mark that kept it out of S3 (``workers.query_answers.unmarked``). The ``X-Namespace`` header is not needed: one key
ring serves the console's cluster. Who may call is decided before a request gets here:
the console token like every page, and which web pages may (CORS) by
``client.access.codec_cors``.
"""

from __future__ import annotations

from fastapi import APIRouter, Request, Response
from fastapi.responses import JSONResponse
from google.protobuf import json_format
from temporalio.api.common.v1 import Payloads

from client.links import CODEC_PREFIX
from console.web import desk_of
from shared.errors import ConfigError, QuantdeskError
from workers.payload_storage import retrieved
from workers.query_answers import unmarked

router = APIRouter(prefix=CODEC_PREFIX)


@router.post("/encode")
async def encode(request: Request) -> Response:
    """Payloads sealed under the first key (a start or signal typed into the Web UI); as they
    came when the console encrypts none."""
    return await _through_codec(request, decoding=False)


@router.post("/decode")
async def decode(request: Request) -> Response:
    """Stored payloads read back, sealed ones opened; plain ones answered as they came."""
    return await _through_codec(request, decoding=True)


async def _through_codec(request: Request, *, decoding: bool) -> Response:
    desk = desk_of(request)
    try:
        codec = desk.codec
    except ConfigError as error:
        return _problem(503, str(error))
    try:
        given = json_format.Parse(await request.body(), Payloads())
    except (json_format.ParseError, UnicodeDecodeError) as error:
        return _problem(
            400,
            f'the body is not Temporal\'s JSON form of Payloads ({{"payloads": [...]}}): {error}',
        )
    payloads = list(given.payloads)
    try:
        if decoding:
            # Large payloads are stored in S3: the reference is read back first.
            payloads = await retrieved(desk.payload_storage, payloads)
        if codec is not None:
            payloads = await (codec.decode if decoding else codec.encode)(payloads)
        if decoding:
            payloads = [unmarked(payload) for payload in payloads]
    except QuantdeskError as error:
        return _problem(422, str(error))
    return Response(
        json_format.MessageToJson(Payloads(payloads=payloads), indent=None),
        media_type="application/json",
    )


def _problem(status: int, message: str) -> JSONResponse:
    return JSONResponse({"message": message}, status_code=status)
