"""The rule that turns a flow's signal into a position: long, flat or short, one unit.

| signal | flow | position |
|---|---|---|
| ``BUY`` | Pipeline | long |
| ``SELL`` | Pipeline | short (flat when shorting is off) |
| ``HOLD`` | Pipeline | unchanged: the position the previous step left (flat at the start) |
| ``LONG`` | QuantAgent | long |
| ``SHORT`` | QuantAgent | short (flat when shorting is off) |

HOLD keeps what is held because that is what the Pipeline's portfolio manager
means by it ("maintain the position"); reading it as "go flat" would turn every
cautious step into a sale. Sizes are ignored on purpose: the backtest measures
the direction of the calls, at full exposure, so two flows compare like for like.
"""

from __future__ import annotations

from enum import IntEnum

from shared.errors import InvalidInput


class Position(IntEnum):
    """One unit of exposure: what the stock's return is multiplied by."""

    SHORT = -1
    FLAT = 0
    LONG = 1


SIGNAL_TARGETS: dict[str, Position | None] = {
    "BUY": Position.LONG,
    "SELL": Position.SHORT,
    "HOLD": None,
    "LONG": Position.LONG,
    "SHORT": Position.SHORT,
}
"""The position each signal asks for; None keeps the previous one."""


def position_for(signal: str, previous: Position, *, allow_short: bool) -> Position:
    """The position after ``signal``, given the one held before it."""
    try:
        target = SIGNAL_TARGETS[signal.strip().upper()]
    except KeyError:
        raise InvalidInput(
            "signal",
            f"unknown signal {signal!r}",
            fix=f"Use one of: {', '.join(SIGNAL_TARGETS)}.",
        ) from None
    if target is None:
        return previous
    if target is Position.SHORT and not allow_short:
        return Position.FLAT
    return target
