"""More names than the simulated market has: local data files that copy its companies.

The sim universe is fixed (80 companies, the sector ETFs, SGOV and the indices, 95 symbols);
a desk of 500 names needs more. Each extra name (``WAAA``, ``WAAB``...) is one of the sim's
companies under another symbol, its prices scaled a little so no two series are equal:
its daily bars and its statements are written where the local vendor reads them
(``shared/data/local.py``: ``ohlcv/<SYMBOL>.csv``, ``statements/<SYMBOL>.json``,
``universe.csv``), which the default routes ask before the sim. News, posts and insider
trades the sim keeps for its own symbols only: the extra names' analysts find none.
"""

from __future__ import annotations

import csv
import json
import string
from datetime import UTC, datetime
from itertools import product
from pathlib import Path

from shared.data.contracts import StatementKind
from shared.data.sim import SimVendor
from shared.data.sim.universe import COMPANIES, SYMBOLS
from shared.data.sim.world import DEFAULT_END
from shared.market.bars import Timeframe

BARS = 10_000
"""Daily bars per extra name, at most: the sim's whole history, up to its last day (a symbol is
known by its latest bar, which must not be stale when the sim's data end)."""
SIM_END = datetime.combine(DEFAULT_END, datetime.max.time(), tzinfo=UTC)
STATEMENTS = 8
"""Quarters of each statement kind per extra name."""


def desk_names(count: int) -> list[str]:
    """``count`` names: the sim's symbols first, then extra ones (``WAAA``...) in order."""
    extra = (
        "W" + "".join(letters)
        for letters in product(string.ascii_uppercase, repeat=3)
        if "W" + "".join(letters) not in SYMBOLS
    )
    names = list(SYMBOLS[:count])
    while len(names) < count:
        names.append(next(extra))
    return names


def write_local_data(root: Path, names: list[str], as_of: datetime, bars: int = BARS) -> int:
    """The files of every name of ``names`` that the sim does not know, under ``root`` (the
    local vendor's folder), with statements reported by ``as_of`` and the last ``bars`` daily
    bars (fewer serve a test that only needs the names known); how many names."""
    extra = [name for name in names if name not in SYMBOLS]
    if not extra:
        return 0
    sim = SimVendor()
    (root / "ohlcv").mkdir(parents=True, exist_ok=True)
    (root / "statements").mkdir(parents=True, exist_ok=True)
    rows = []
    for index, name in enumerate(extra):
        company = COMPANIES[index % len(COMPANIES)]
        scale = 1 + 0.01 * (1 + index // len(COMPANIES))
        daily = sim.ohlcv(company.symbol, Timeframe.D1, SIM_END, bars)
        with (root / "ohlcv" / f"{name}.csv").open("w", newline="") as file:
            writer = csv.writer(file)
            writer.writerow(["Date", "Open", "High", "Low", "Close", "Volume"])
            for bar in daily:
                prices = (bar.open, bar.high, bar.low, bar.close)
                writer.writerow([bar.time.isoformat(), *(p * scale for p in prices), bar.volume])
        statements = [
            {**s.model_dump(mode="json"), "symbol": name}
            for kind in StatementKind
            for s in sim.statements(company.symbol, kind, as_of, STATEMENTS)
        ]
        (root / "statements" / f"{name}.json").write_text(json.dumps(statements))
        rows.append([name, f"{company.name} {name}", company.sector.value, company.industry])
    with (root / "universe.csv").open("w", newline="") as file:
        writer = csv.writer(file)
        writer.writerow(["symbol", "name", "sector", "industry"])
        writer.writerows(rows)
    return len(extra)
