"""Checking a shortlist against the data: what a schema cannot know.

``ScanSummary`` validates its own shape; whether each ticker is a stock of the
data universe as of the scan, in the sector the summary gives it, whether the
list respects ``max_tickers``, and whether a ``smart_money`` mark stands on a
screen that really flagged the stock, only the data can say. Each problem is a
sentence naming the field, the value and the fix, so one repair turn can correct
them all (the peers passed whatever tickers the model wrote downstream).

A shortlist still wrong after that turn is corrected in code rather than thrown
away with the whole scan (``corrected_shortlist``): what the data can settle is
settled by the data, and every correction is said.
"""

from __future__ import annotations

from collections.abc import Collection, Sequence
from datetime import datetime

from shared.agents.scan.schemas import ScanSummary, StockToInvestigate
from shared.data.contracts import Listing

EQUITY = "equity"
NOTHING_LEFT = (
    "no stock left to investigate: none of the tickers named is a stock of the universe as of "
    "{as_of:%Y-%m-%d}"
)
"""The correction that says the data emptied the shortlist."""


def shortlist_problems(
    summary: ScanSummary,
    universe: Sequence[Listing],
    as_of: datetime,
    *,
    max_tickers: int,
    flagged: Collection[str],
) -> list[str]:
    """Every way ``summary``'s shortlist disagrees with the universe as of ``as_of`` or the
    rules; empty when it is sound."""
    listings = {listing.symbol.upper(): listing for listing in universe}
    stocks = summary.stocks_to_investigate
    problems = []
    if not stocks:
        problems.append(
            "stocks_to_investigate is empty: name at least one stock of the universe "
            "that fits the themes"
        )
    if len(stocks) > max_tickers:
        problems.append(
            f"stocks_to_investigate lists {len(stocks)} stocks but at most {max_tickers} are "
            f"allowed: keep the {max_tickers} strongest"
        )
    for index, stock in enumerate(stocks):
        where = f"stocks_to_investigate[{index}]"
        listing = listings.get(stock.ticker)
        if listing is None:
            problems.append(
                f"{where}.ticker: {stock.ticker} is not in the data universe as of "
                f"{as_of:%Y-%m-%d}: choose among the candidates the scanners reported"
            )
            continue
        if listing.asset_type != EQUITY:
            problems.append(
                f"{where}.ticker: {stock.ticker} is an {listing.asset_type}, not a stock: "
                "shortlist stocks only"
            )
            continue
        if listing.sector is not None and listing.sector is not stock.sector:
            problems.append(
                f"{where}.sector: {stock.ticker} is in {listing.sector.value}, not "
                f"{stock.sector.value}"
            )
        if stock.smart_money and stock.ticker not in flagged:
            shown = ", ".join(sorted(flagged)) or "none"
            problems.append(
                f"{where}.smart_money: no smart-money screen flagged {stock.ticker} (flagged: "
                f"{shown}): set it to false"
            )
    return problems


def corrected_shortlist(
    summary: ScanSummary,
    universe: Sequence[Listing],
    as_of: datetime,
    *,
    max_tickers: int,
    flagged: Collection[str],
) -> tuple[ScanSummary, list[str]]:
    """``summary`` with its shortlist made sound by the data, and a sentence per correction:
    a ticker the universe does not hold as a stock is dropped, a wrong sector takes the
    universe's, an unfounded ``smart_money`` mark is cleared, and the list is cut to
    ``max_tickers`` (the strongest come first, as the prompt asks)."""
    listings = {listing.symbol.upper(): listing for listing in universe}
    kept = []
    corrections = []
    for stock in summary.stocks_to_investigate:
        listing = listings.get(stock.ticker)
        if listing is None or listing.asset_type != EQUITY:
            what = "not in the data universe" if listing is None else f"an {listing.asset_type}"
            corrections.append(f"dropped {stock.ticker}: {what} as of {as_of:%Y-%m-%d}")
            continue
        fixes: dict[str, object] = {}
        if listing.sector is not None and listing.sector is not stock.sector:
            corrections.append(
                f"{stock.ticker}: sector {stock.sector.value} corrected to {listing.sector.value}"
            )
            fixes["sector"] = listing.sector
        if stock.smart_money and stock.ticker not in flagged:
            corrections.append(f"{stock.ticker}: smart_money cleared (no screen flagged it)")
            fixes["smart_money"] = False
        kept.append(StockToInvestigate.model_validate({**stock.model_dump(), **fixes}))
    if len(kept) > max_tickers:
        cut = ", ".join(stock.ticker for stock in kept[max_tickers:])
        corrections.append(f"cut to the first {max_tickers} stocks: dropped {cut}")
        kept = kept[:max_tickers]
    if not kept:
        corrections.append(NOTHING_LEFT.format(as_of=as_of))
    # Validated, not copied: what the workflow decodes must hold the model's rules.
    corrected = ScanSummary.model_validate({**summary.model_dump(), "stocks_to_investigate": kept})
    return corrected, corrections
