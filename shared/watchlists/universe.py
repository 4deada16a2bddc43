"""Whether the data know a symbol: the test a Pipeline's first step makes (daily bars in a
routed vendor, or in the bundled or sim data), made for a whole list before a watchlist is
written or an AutoRun starts, so each unknown symbol is named at once."""

from __future__ import annotations

from collections.abc import Iterable
from datetime import datetime

from shared.data.analysis_time import latest_time
from shared.data.router import DataRouter
from shared.errors import InvalidInput
from shared.watchlists.symbols import symbol_list


def unknown_symbols(
    router: DataRouter, symbols: Iterable[str], not_after: datetime | None = None
) -> list[str]:
    """The symbols for which no data the Pipeline reads have daily bars, neither by
    ``not_after`` (a name delisted since) nor by now (a name listed since: its Pipeline then
    says it has no bars by its time)."""
    return [
        symbol
        for symbol in symbols
        if not _has_bars(router, symbol, not_after)
        and (not_after is None or not _has_bars(router, symbol, None))
    ]


def _has_bars(router: DataRouter, symbol: str, not_after: datetime | None) -> bool:
    try:
        latest_time(router, symbol, not_after)
    except InvalidInput as error:
        if error.field != "symbol":
            raise
        return False
    return True


def known_symbols(
    router: DataRouter,
    raw: Iterable[str],
    field: str = "symbols",
    not_after: datetime | None = None,
) -> list[str]:
    """``symbol_list(raw)``, every symbol known to the data (by ``not_after``, default now);
    the unknown ones are refused, each named."""
    symbols = symbol_list(raw, field)
    unknown = unknown_symbols(router, symbols, not_after)
    if unknown:
        raise InvalidInput(
            field,
            f"unknown symbol{'s' if len(unknown) > 1 else ''}: {', '.join(unknown)}",
            fix="Use symbols of the bundled data, your local data or the sim universe "
            "(no routed vendor has daily bars for these).",
        )
    return symbols
