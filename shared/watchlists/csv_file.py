"""Symbols from a CSV file: a column ``symbol`` (any case; other columns ignored), or,
without that header, one symbol per line (the first cell of each line). The same rules for
a file the CLI reads (``--csv FILE``) and one uploaded on the console's Watchlists page."""

from __future__ import annotations

import csv
from pathlib import Path

from shared.errors import InvalidInput

SYMBOL_COLUMN = "symbol"


def read_symbols(path: Path) -> list[str]:
    """The file's symbols in file order, blank lines skipped (checking is the caller's)."""
    try:
        text = path.read_text(encoding="utf-8-sig")
    except OSError as error:
        raise InvalidInput(
            "csv", f"cannot read {path} ({error.strerror})", fix="Give a readable CSV file."
        ) from None
    return csv_symbols(text, str(path))


def uploaded_symbols(data: bytes, source: str) -> list[str]:
    """The symbols of an uploaded CSV file's bytes (UTF-8, a byte-order mark allowed)."""
    try:
        text = data.decode("utf-8-sig")
    except UnicodeDecodeError:
        raise InvalidInput(
            "csv", f"{source} is not UTF-8 text", fix="Save the file as a UTF-8 CSV."
        ) from None
    return csv_symbols(text, source)


def csv_symbols(text: str, source: str) -> list[str]:
    """The symbols of CSV ``text`` (named ``source`` in errors), in order, blank lines skipped."""
    rows = [row for row in csv.reader(text.splitlines()) if any(cell.strip() for cell in row)]
    if not rows:
        raise InvalidInput("csv", f"{source} holds no symbols", fix="Put one symbol per line.")
    header = [cell.strip().lower() for cell in rows[0]]
    if SYMBOL_COLUMN in header:
        column = header.index(SYMBOL_COLUMN)
        return [row[column] for row in rows[1:] if len(row) > column and row[column].strip()]
    return [row[0] for row in rows if row[0].strip()]
