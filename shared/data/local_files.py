"""Reading the user's data files for ``LocalVendor``: a parser per file format, each
failing on the first bad record with the file, the line (or entry) and the field, and a
cache that parses a file again only when it changes. The layout is documented in
``shared/data/local.py``."""

from __future__ import annotations

import csv
import json
import threading
from collections import OrderedDict
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path
from typing import Any, TypeVar

from pydantic import BaseModel, ValidationError

from shared.data.bundled import native_timeframe
from shared.data.contracts import MacroPoint, Statement
from shared.errors import InvalidInput, NotConfigured
from shared.market.sources import CsvSource
from shared.validation_errors import problem

T = TypeVar("T")
M = TypeVar("M", bound=BaseModel)


class SeriesInfo(BaseModel):
    """The optional ``macro/<SERIES>.json`` sidecar."""

    name: str
    unit: str


@dataclass(frozen=True)
class MacroFile:
    """A parsed macro series file: its sidecar, if any, and every row (all versions)."""

    info: SeriesInfo | None
    points: list[MacroPoint]


def _invalid(path: Path, where: str, error: ValidationError) -> InvalidInput:
    """The first problem of a record, naming the file, the line or entry, and the field."""
    first = error.errors()[0]
    field = ".".join(str(part) for part in first["loc"])
    subject = f"field `{field}`" if field else "the record"
    return InvalidInput(
        str(path),
        f"{where}, {subject}: {problem(first)}",
        fix="Correct or remove it; the layout is documented in shared/data/local.py.",
    )


def _validate(model: type[M], raw: Any, path: Path, where: str) -> M:
    try:
        if isinstance(raw, str):
            return model.model_validate_json(raw)
        return model.model_validate(raw)
    except ValidationError as error:
        raise _invalid(path, where, error) from None


def jsonl_parser(model: type[M]) -> Callable[[Path], list[M]]:
    """A parser of a file of one ``model`` per line."""

    def parse(path: Path) -> list[M]:
        with path.open(encoding="utf-8") as lines:
            return [
                _validate(model, line, path, f"line {number}")
                for number, line in enumerate(lines, start=1)
                if line.strip()
            ]

    return parse


def csv_parser(model: type[M]) -> Callable[[Path], list[M]]:
    """A parser of a CSV file of ``model`` rows; empty cells take the field's default."""

    def parse(path: Path) -> list[M]:
        with path.open(encoding="utf-8", newline="") as lines:
            reader = csv.DictReader(lines)
            return [
                _validate(model, _cells(row), path, f"line {reader.line_num}") for row in reader
            ]

    return parse


def _cells(row: dict[str | None, Any]) -> dict[str, str]:
    """A CSV row without its empty cells, names and values stripped, names lower-case."""
    return {
        name.strip().lower(): value.strip()
        for name, value in row.items()
        if isinstance(name, str) and isinstance(value, str) and value.strip()
    }


def statements_parser(symbol: str) -> Callable[[Path], list[Statement]]:
    """A parser of ``statements/<SYMBOL>.json``: a list of statements of that symbol."""

    def parse(path: Path) -> list[Statement]:
        try:
            entries = json.loads(path.read_text(encoding="utf-8"))
        except json.JSONDecodeError as error:
            raise InvalidInput(
                str(path), f"line {error.lineno}: not valid JSON ({error.msg})"
            ) from None
        if not isinstance(entries, list):
            raise InvalidInput(str(path), "is not a JSON list", fix="Write [ {statement}, ... ].")
        statements = [
            _validate(Statement, entry, path, f"entry {number}")
            for number, entry in enumerate(entries, start=1)
        ]
        for number, statement in enumerate(statements, start=1):
            if statement.symbol.upper() != symbol:
                raise InvalidInput(
                    str(path),
                    f"entry {number}, field `symbol`: {statement.symbol!r} in the file of {symbol}",
                    fix="Move the statement to its own symbol's file.",
                )
        return statements

    return parse


def bar_parser(symbol: str) -> Callable[[Path], CsvSource]:
    """A parser of ``ohlcv/<SYMBOL>.*``, loaded now so a bad file is an error, not "no data"."""

    def parse(path: Path) -> CsvSource:
        source = CsvSource({symbol: path})
        native_timeframe(source, symbol)
        return source

    return parse


def read_macro_file(path: Path) -> MacroFile:
    """A parser of ``macro/<SERIES>.csv`` and its optional ``.json`` sidecar."""
    sidecar = path.with_suffix(".json")
    info = (
        _validate(SeriesInfo, sidecar.read_text(encoding="utf-8"), sidecar, "the file")
        if sidecar.is_file()
        else None
    )
    return MacroFile(info, csv_parser(MacroPoint)(path))


MAX_PARSED_FILES = 64
"""Parsed files kept, the most recently read: a desk of hundreds of local names would
otherwise hold every name's bars as objects for the worker's life (2,500 bars a name took
about 5 MB), and its memory would grow with the watchlist."""


class ParsedFiles:
    """Parsed files by path, parsed again when a file's modification time or size changes;
    the ``MAX_PARSED_FILES`` read last are kept."""

    def __init__(self, keep: int = MAX_PARSED_FILES) -> None:
        self._entries: OrderedDict[Path, tuple[tuple[int, int], object]] = OrderedDict()
        self._keep = keep
        self._lock = threading.Lock()  # tool activities read from several threads

    def load(self, path: Path, parse: Callable[[Path], T], missing: str) -> T:
        try:
            status = path.stat()
        except FileNotFoundError:
            raise NotConfigured(missing) from None
        version = (status.st_mtime_ns, status.st_size)
        with self._lock:
            cached = self._entries.get(path)
            if cached is not None and cached[0] == version:
                self._entries.move_to_end(path)
                return cached[1]  # type: ignore[return-value]  # one parser per path
        value = parse(path)
        with self._lock:
            self._entries[path] = (version, value)
            self._entries.move_to_end(path)
            while len(self._entries) > self._keep:
                self._entries.popitem(last=False)
        return value
