"""The book against its broker: where their shares, cash and fills differ.

Computed, never acted on: a difference is shown to a person, who may choose the
broker's numbers (``BrokerBook.adopt_broker``). Differences are the broker's figure
less the book's, so a positive share count is shares the broker has and the book lacks.
"""

from __future__ import annotations

from collections.abc import Collection, Mapping
from decimal import Decimal

from pydantic import BaseModel, ConfigDict, Field

from shared.portfolio.models import Money, money


class Drift(BaseModel):
    """How far the book is from the broker; ``clean`` when nowhere."""

    model_config = ConfigDict(frozen=True, extra="forbid")

    shares: dict[str, int] = Field(
        description="per symbol that differs: the broker's shares less the book's"
    )
    cash: Money = Field(description="the broker's cash less the book's")
    unbooked_fills: list[str] = Field(description="fill ids the broker has and the book lacks")
    unknown_fills: list[str] = Field(description="fill ids the book has and the broker lacks")

    @property
    def clean(self) -> bool:
        """The book and the broker agree on every share, every cent and every fill."""
        return not (self.shares or self.cash or self.unbooked_fills or self.unknown_fills)


def drift(
    book_positions: Mapping[str, int],
    book_cash: Decimal,
    broker_positions: Mapping[str, int],
    broker_cash: Decimal,
    book_fill_ids: Collection[str],
    broker_fill_ids: Collection[str],
) -> Drift:
    """Compare the book's shares per symbol, cash and booked fill ids with the broker's.

    Pass the fills of one window on both sides (``BrokerBook.fill_ids(since=...)`` and the
    broker's fills since then), or fills outside it show as differences."""
    symbols = set(book_positions) | set(broker_positions)
    shares = {
        symbol: broker_positions.get(symbol, 0) - book_positions.get(symbol, 0)
        for symbol in sorted(symbols)
    }
    return Drift(
        shares={symbol: delta for symbol, delta in shares.items() if delta},
        cash=money(broker_cash - book_cash),
        unbooked_fills=sorted(set(broker_fill_ids) - set(book_fill_ids)),
        unknown_fills=sorted(set(book_fill_ids) - set(broker_fill_ids)),
    )
