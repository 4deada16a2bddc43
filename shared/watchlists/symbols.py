"""A list of symbols as a person gives it, checked before anything is written or started.

Symbols are trimmed and upper-cased. An empty list, a symbol named twice and a symbol no
data vendor knows each get their own message, naming the field and every symbol at fault,
so a person fixes a 100-name CSV in one go rather than one error at a time.
"""

from __future__ import annotations

from collections import Counter
from collections.abc import Iterable

from shared.data.analysis_time import latest_time
from shared.data.router import DataRouter
from shared.errors import InvalidInput

SYMBOL_MAX_LENGTH = 32


def symbol_list(raw: Iterable[str], field: str = "symbols") -> list[str]:
    """The symbols trimmed and upper-cased, in the order given; an empty list, a blank or
    overlong symbol, or one given twice is refused naming ``field``."""
    symbols = [symbol.strip().upper() for symbol in raw]
    if not symbols:
        raise InvalidInput(field, "the list is empty", fix="Give at least one symbol.")
    bad = [s for s in symbols if not s or len(s) > SYMBOL_MAX_LENGTH or any(c.isspace() for c in s)]
    if bad:
        raise InvalidInput(
            field,
            f"not symbols: {', '.join(repr(s) for s in bad)}",
            fix=f"Give symbols of 1 to {SYMBOL_MAX_LENGTH} characters without spaces.",
        )
    twice = [symbol for symbol, count in Counter(symbols).items() if count > 1]
    if twice:
        raise InvalidInput(
            field, f"listed more than once: {', '.join(twice)}", fix="Name each symbol once."
        )
    return symbols


def unknown_symbols(router: DataRouter, symbols: Iterable[str]) -> list[str]:
    """The symbols for which no routed vendor (nor the bundled or sim data) has daily bars:
    the same test a Pipeline's first step makes, so a symbol passed here is one it analyses."""
    unknown = []
    for symbol in symbols:
        try:
            latest_time(router, symbol)
        except InvalidInput as error:
            if error.field != "symbol":
                raise
            unknown.append(symbol)
    return unknown


def known_symbols(router: DataRouter, raw: Iterable[str], field: str = "symbols") -> list[str]:
    """``symbol_list(raw)``, every symbol known to the data; the unknown ones are refused,
    each named."""
    symbols = symbol_list(raw, field)
    unknown = unknown_symbols(router, symbols)
    if unknown:
        raise InvalidInput(
            field,
            f"unknown symbol{'s' if len(unknown) > 1 else ''}: {', '.join(unknown)}",
            fix="Use symbols of the bundled data, your local data or the sim universe "
            "(no routed vendor has daily bars for these).",
        )
    return symbols
