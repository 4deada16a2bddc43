"""Symbols from a CSV file: a column ``symbol`` (any case; other columns ignored), or,
without that header, one symbol per line (the first cell of each line)."""

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
    rows = [row for row in csv.reader(text.splitlines()) if any(cell.strip() for cell in row)]
    if not rows:
        raise InvalidInput("csv", f"{path} holds no symbols", fix="Put one symbol per line.")
    header = [cell.strip().lower() for cell in rows[0]]
    if SYMBOL_COLUMN in header:
        column = header.index(SYMBOL_COLUMN)
        return [row[column] for row in rows[1:] if len(row) > column and row[column].strip()]
    return [row[0] for row in rows if row[0].strip()]
