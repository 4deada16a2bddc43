"""Reading a PNG's size from its header: checking a chart needs no image library."""

from __future__ import annotations

import struct

from shared.errors import InvalidInput

_PNG_SIGNATURE = b"\x89PNG\r\n\x1a\n"


def png_dimensions(png: bytes) -> tuple[int, int]:
    """``(width, height)`` in pixels, read from the PNG header without decoding the image."""
    if png[:8] != _PNG_SIGNATURE or png[12:16] != b"IHDR":
        raise InvalidInput("png", "not a PNG image")
    width, height = struct.unpack(">II", png[16:24])
    return width, height
