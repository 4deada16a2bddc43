"""The book's limits and how holdings are grouped for them.

Sector caps count GICS sectors as the data layer classifies them (never the
free text of a summary). The T-bill ETF is a cash equivalent: it counts as a
position (and against the per-position cap) but belongs to no sector, so the
cash sweep can never crowd a sector out. An equity no vendor classifies goes
into one ``unclassified`` bucket that the sector cap also limits: when in doubt
the cap binds sooner, not never.
"""

from __future__ import annotations

from pydantic import BaseModel, ConfigDict, Field

from shared.data.contracts import TBILL_ETF, Sector

CASH = "cash"
CASH_EQUIVALENT = "cash equivalent"
UNCLASSIFIED = "unclassified"
CASH_EQUIVALENTS = frozenset({TBILL_ETF})
"""What the cash sweep buys: the sim market and yfinance both price SGOV."""


class Limits(BaseModel):
    """The constraints every plan is sized to (the fork's defaults)."""

    model_config = ConfigDict(frozen=True, extra="forbid")

    max_positions: int = Field(15, ge=1, le=100, description="holdings after the trades")
    max_position_weight: float = Field(0.15, gt=0, le=1, description="of total value, per holding")
    max_sector_weight: float = Field(0.35, gt=0, le=1, description="of total value, per sector")
    min_cash_weight: float = Field(0.05, ge=0, lt=1, description="cash kept after the trades")


def sector_bucket(symbol: str, sector: Sector | None) -> str | None:
    """The group a holding's value counts in for the sector cap; None: no sector (cash-like)."""
    if symbol in CASH_EQUIVALENTS:
        return None
    return sector.value if sector is not None else UNCLASSIFIED
