"""Geometric detectors for the 16 classical chart patterns QuantAgent's vision agent looks for.

QuantAgent shows its pattern agent a candlestick chart of the last bars and asks which of
sixteen textbook patterns it sees. Without a vision model these detectors are that agent's
eyes: each measures one window with the swing points, trendlines, curve fits and gaps a
chartist would draw, and says in one sentence of numbers why it saw its pattern, so the
offline engine reasons from facts rather than from a picture.

Every threshold is relative: to the average true range (ATR), to the pattern's own height
or to the mean price, so the same numbers serve a 20- or a 100-bar window and a $5 or a
$5000 asset. Confidence is the product of soft scores in [0, 1], one per
textbook criterion, so a shape must meet all of them to score high, and one that fails a
criterion outright is not reported at all.

One module per pattern family (``channels``, ``swings``, ``curves``, ``bases``,
``flags``, ``islands``) over the shared ``geometry``; ``detect`` validates a window
and runs them all.
"""

from shared.ta.patterns.detect import MIN_BARS, detect_patterns
from shared.ta.patterns.model import Bias, PatternMatch, PatternName

__all__ = ["MIN_BARS", "Bias", "PatternMatch", "PatternName", "detect_patterns"]
