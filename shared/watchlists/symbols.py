"""A list of symbols as a person gives it, checked before anything is written or started.

Symbols are trimmed and upper-cased. An empty list and a symbol named twice each get
their own message naming every symbol at fault, so a person fixes a 100-name CSV in one
go rather than one error at a time. (Whether the data know a symbol is
``shared.watchlists.universe``'s question: this module stays free of the data layer, so
workflow inputs can use it.)
"""

from __future__ import annotations

import re
from collections import Counter
from collections.abc import Iterable

from shared.errors import InvalidInput

SYMBOL_MAX_LENGTH = 32
SEPARATORS = re.compile(r"[\s,;]+")
"""Between symbols a person types: spaces, new lines, commas or semicolons."""


def split_symbols(texts: Iterable[str]) -> list[str]:
    """The symbols of typed texts (``"AAPL, MSFT"``, ``"GOOG"``), in order, blanks dropped."""
    return [part for text in texts for part in SEPARATORS.split(text) if part]


def normalized(raw: Iterable[str]) -> list[str]:
    """The symbols trimmed and upper-cased, in the order given."""
    return [symbol.strip().upper() for symbol in raw]


def list_problem(symbols: list[str]) -> tuple[str, str] | None:
    """What is wrong with a normalized list, and its fix; None when nothing is."""
    if not symbols:
        return "the list is empty", "Give at least one symbol."
    bad = [s for s in symbols if not s or len(s) > SYMBOL_MAX_LENGTH or any(c.isspace() for c in s)]
    if bad:
        return (
            f"not symbols: {', '.join(repr(s) for s in bad)}",
            f"Give symbols of 1 to {SYMBOL_MAX_LENGTH} characters without spaces.",
        )
    twice = [symbol for symbol, count in Counter(symbols).items() if count > 1]
    if twice:
        return f"listed more than once: {', '.join(twice)}", "Name each symbol once."
    return None


def symbol_list(raw: Iterable[str], field: str = "symbols") -> list[str]:
    """The symbols normalized; an empty list, a blank or overlong symbol, or one given twice
    is refused naming ``field``."""
    symbols = normalized(raw)
    found = list_problem(symbols)
    if found is not None:
        problem, fix = found
        raise InvalidInput(field, problem, fix=fix)
    return symbols
