"""Reading a chart's PNG as pixels, for the chart tests: decoded, and matched by colour."""

from __future__ import annotations

import io

import numpy as np
from PIL import Image


def decoded(png: bytes) -> np.ndarray:
    """The image as a height × width × RGB array of ints."""
    return np.asarray(Image.open(io.BytesIO(png)).convert("RGB"), dtype=int)


def matches(pixels: np.ndarray, colour: str, tolerance: int) -> np.ndarray:
    """Where ``pixels`` (any shape ending in RGB) are within ``tolerance`` of ``#rrggbb``."""
    rgb = np.array([int(colour[i : i + 2], 16) for i in (1, 3, 5)])
    return np.abs(pixels - rgb).max(axis=-1) <= tolerance


def count_colour(pixels: np.ndarray, colour: str, tolerance: int = 10) -> int:
    """How many pixels are within ``tolerance`` of ``colour``."""
    return int(matches(pixels, colour, tolerance).sum())
