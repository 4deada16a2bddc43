"""The user's own data files as a vendor: every kind, from one directory, as of any time.

Layout of the data directory (``LocalVendor(root)``; the factory uses
``<QUANTDESK_DATA_DIR>/data``, i.e. ``.quantdesk/data``). Every file is optional:
the vendor serves exactly the kinds whose files exist, so the router skips it
for the others.

==========================  =============================================================
``ohlcv/<SYMBOL>.csv``      bars, one file per symbol (also ``.csv.gz``, ``.parquet``);
                            any layout ``shared.market.files`` reads (Date/time column,
                            open/high/low/close, optional volume, any case)
``news.jsonl``              one JSON ``NewsItem`` per line: ``id``, ``published_at``,
                            ``title``, ``summary``, ``source``, ``url``?, ``symbols`` [],
                            ``topics`` [], ``sentiment``? (-1..1)
``social.jsonl``            one ``SocialPost`` per line: ``id``, ``posted_at``, ``author``,
                            ``text``, ``symbol``, ``likes``?, ``sentiment``?
``insider.jsonl``           one ``InsiderTransaction`` per line: ``symbol``, ``insider``,
                            ``role``, ``side`` (buy/sell), ``shares``, ``price``,
                            ``traded_on``, ``filed_at``
``statements/<SYMBOL>.json``  a JSON list of ``Statement``: ``symbol``, ``kind``
                            (income/balance/cash_flow), ``fiscal_period`` (2023Q4),
                            ``period_end``, ``reported_at``, ``currency``?, ``items`` {}
``macro/<SERIES>.csv``      columns ``observed`` (date), ``released_at``, ``value``
``macro/<SERIES>.json``     optional sidecar ``{"name": ..., "unit": ...}``
``universe.csv``            columns ``symbol``, ``name``, ``sector`` (a GICS sector name),
                            ``industry``, ``asset_type`` (equity/etf/index; default equity)
==========================  =============================================================

Times in JSON and CSV are ISO 8601 with an offset or ``Z``; a naive time is
rejected rather than guessed. File names match symbols and series regardless of
case. A line (or statement entry) that does not fit its record fails the read
with ``InvalidInput`` naming the file, the line and the field; blank lines are
skipped. A missing file is ``NotConfigured``, nothing in the window ``NoData``.

Point in time: news is visible from ``published_at``, posts from ``posted_at``,
insider trades from ``filed_at``, statements from ``reported_at`` and macro
values from ``released_at``; bars up to ``as_of`` (and stale bars, ending long
before ``as_of``, are ``NoData``). A restated statement is a second entry with
the same ``kind`` and ``fiscal_period`` and a later ``reported_at``; a revised
macro value a second row with the same ``observed`` and a later ``released_at``:
each read sees the latest version released by ``as_of``. Lists of dated records
come newest first; bars and macro points oldest first.

Computed kinds:

- ``fundamentals``: from the statements reported by ``as_of`` and the last close
  of ``ohlcv/<SYMBOL>`` at ``as_of``. TTM figures sum the ``revenue`` and
  ``net_income`` items of the latest four quarterly income statements (None with
  fewer, or when they span more than a year); the newest balance sheet gives
  ``shares_outstanding`` (needed for market cap and EPS), ``total_equity`` and
  ``total_debt``. Ratios are None when an input is missing or the denominator is
  not positive (no negative P/E). Name and sector come from ``universe.csv``.
- ``sectors``: the SPDR sector ETFs (XLK, XLF...) with a file in ``ohlcv/``;
  ``indices``: ``^GSPC``, ``^DJI``, ``^IXIC``, ``^VIX``, ``^RUT`` and the
  universe's ``index`` rows with a file in ``ohlcv/``. Returns from daily closes,
  as fractions; ``*_pct`` fields in percent.
- ``movers`` and ``industry`` need ``universe.csv`` and ``ohlcv/``: movers rank the
  universe's equities on the latest session any of them traded by ``as_of``;
  industry lists a sector's equities by market cap (from statements, when there).

Files load on first use and stay parsed until their modification time or size
changes, so editing a file takes effect on the next read.
"""

from __future__ import annotations

from collections.abc import Callable, Iterable
from datetime import datetime, timedelta
from pathlib import Path
from typing import Protocol, TypeVar

from shared.data.bundled import check_as_of, native_timeframe, read_bars
from shared.data.contracts import (
    INDEX_SYMBOLS,
    SECTOR_ETFS,
    DataKind,
    DataVendor,
    Fundamentals,
    IndexLevel,
    IndustryCompany,
    InsiderTransaction,
    Listing,
    MacroSeries,
    MarketMovers,
    NewsItem,
    NewsQuery,
    NewsSearch,
    Sector,
    SectorPerformance,
    SocialPost,
    Statement,
    StatementKind,
)
from shared.data.figures import (
    RELATIVE_VOLUME_DAYS,
    compute_fundamentals,
    index_levels,
    market_movers,
    return_over,
    sector_performance,
)
from shared.data.local_files import (
    ParsedFiles,
    bar_parser,
    csv_parser,
    jsonl_parser,
    read_macro_file,
    statements_parser,
)
from shared.errors import InvalidInput, NoData, NotConfigured
from shared.market.bars import Bar, Timeframe
from shared.market.files import CSV_SUFFIXES, PARQUET_SUFFIXES
from shared.market.series import check_lookback
from shared.market.sources import CsvSource


class _AboutSymbol(Protocol):
    """A record about one symbol (posts, insider trades)."""

    @property
    def symbol(self) -> str: ...


T = TypeVar("T")
S = TypeVar("S", bound=_AboutSymbol)

OHLCV_DIR = "ohlcv"
STATEMENTS_DIR = "statements"
MACRO_DIR = "macro"
NEWS_FILE = "news.jsonl"
SOCIAL_FILE = "social.jsonl"
INSIDER_FILE = "insider.jsonl"
UNIVERSE_FILE = "universe.csv"

REQUIRED: dict[DataKind, tuple[str, ...]] = {
    DataKind.OHLCV: (OHLCV_DIR,),
    DataKind.NEWS: (NEWS_FILE,),
    DataKind.SOCIAL: (SOCIAL_FILE,),
    DataKind.INSIDER: (INSIDER_FILE,),
    DataKind.STATEMENTS: (STATEMENTS_DIR,),
    DataKind.FUNDAMENTALS: (STATEMENTS_DIR,),
    DataKind.MACRO: (MACRO_DIR,),
    DataKind.UNIVERSE: (UNIVERSE_FILE,),
    DataKind.SECTORS: (OHLCV_DIR,),
    DataKind.INDICES: (OHLCV_DIR,),
    DataKind.MOVERS: (OHLCV_DIR, UNIVERSE_FILE),
    DataKind.INDUSTRY: (OHLCV_DIR, UNIVERSE_FILE),
}
"""The files or directories under the root each kind is computed from."""

_BAR_SUFFIXES = CSV_SUFFIXES + PARQUET_SUFFIXES


def visible(
    records: Iterable[T],
    stamp: Callable[[T], datetime],
    as_of: datetime,
    what: str,
    window: timedelta | None = None,
) -> list[T]:
    """The records stamped in ``(as_of - window, as_of]``, oldest first: every kind's as-of rule.

    ``NoData`` naming ``what`` and the window when there are none: an answer, not a failure.
    """
    end = check_as_of(as_of)
    if window is not None and window <= timedelta(0):
        raise InvalidInput("window", f"{window} is not a positive duration", fix="Use e.g. 7 days.")
    start = None if window is None else end - window
    found = sorted(
        (r for r in records if stamp(r) <= end and (start is None or stamp(r) > start)), key=stamp
    )
    if not found:
        span = f"by {end.isoformat()}" if start is None else f"from {start} to {end}"
        raise NoData(f"local has no {what} {span}")
    return found


def latest_versions(records: list[T], key: Callable[[T], object]) -> list[T]:
    """Of records sorted oldest first, the newest version per ``key`` (restatements, revisions)."""
    return list({key(record): record for record in records}.values())


def _newest(records: list[T], limit: int | None = None) -> list[T]:
    return records[::-1][:limit]


def _of_symbol(records: list[S], symbol: str) -> list[S]:
    return [record for record in records if record.symbol.upper() == symbol.upper()]


class LocalVendor(DataVendor, NewsSearch):
    """Every kind from the files under ``root`` (layout: this module's docstring)."""

    name = "local"

    def __init__(self, root: Path) -> None:
        self.root = Path(root)
        self._files = ParsedFiles()

    @property
    def kinds(self) -> frozenset[DataKind]:
        """The kinds whose files exist now: adding a file enables its kind without a restart."""
        return frozenset(
            kind
            for kind, paths in REQUIRED.items()
            if all((self.root / path).exists() for path in paths)
        )

    # -- records ---------------------------------------------------------------------------

    def universe(self, as_of: datetime) -> list[Listing]:
        check_as_of(as_of)
        listings = self._listings()
        if not listings:
            raise NoData(f"local {UNIVERSE_FILE} lists no symbol")
        return listings

    def search_news(self, query: NewsQuery) -> list[NewsItem]:
        symbol, topic = query.symbol, query.topic
        wanted = [
            item
            for item in self._load(NEWS_FILE, jsonl_parser(NewsItem))
            if (symbol is None or symbol.upper() in {s.upper() for s in item.symbols})
            and (topic is None or topic.lower() in {t.lower() for t in item.topics})
        ]
        about = (f" about {symbol}" if symbol else "") + (f" on topic {topic}" if topic else "")
        found = visible(
            wanted, lambda item: item.published_at, query.as_of, f"news{about}", query.window
        )
        return _newest(found, query.limit)

    def social(
        self, symbol: str, as_of: datetime, window: timedelta, limit: int = 50
    ) -> list[SocialPost]:
        posts = _of_symbol(self._load(SOCIAL_FILE, jsonl_parser(SocialPost)), symbol)
        found = visible(posts, lambda post: post.posted_at, as_of, f"posts about {symbol}", window)
        return _newest(found, limit)

    def insider(self, symbol: str, as_of: datetime, window: timedelta) -> list[InsiderTransaction]:
        trades = _of_symbol(self._load(INSIDER_FILE, jsonl_parser(InsiderTransaction)), symbol)
        found = visible(
            trades, lambda trade: trade.filed_at, as_of, f"insider trades of {symbol}", window
        )
        return _newest(found)

    def statements(
        self, symbol: str, kind: StatementKind, as_of: datetime, periods: int = 4
    ) -> list[Statement]:
        of_kind = [s for s in self._current_statements(symbol, as_of) if s.kind is kind]
        if not of_kind:
            raise NoData(f"local has no {kind.value} statement of {symbol} reported by {as_of}")
        return sorted(of_kind, key=lambda s: s.period_end, reverse=True)[:periods]

    def fundamentals(self, symbol: str, as_of: datetime) -> Fundamentals:
        return compute_fundamentals(
            symbol.upper(),
            check_as_of(as_of),
            self._current_statements(symbol, as_of),
            self._last_close(symbol, as_of),
            self._listing(symbol),
        )

    def macro(self, series: str, as_of: datetime, lookback: int = 24) -> MacroSeries:
        check_lookback(lookback)
        key = series.upper()
        path = self._named(MACRO_DIR, (".csv",)).get(key)
        if path is None:
            raise NotConfigured(f"local has no {MACRO_DIR}/{key}.csv under {self.root}")
        data = self._files.load(path, read_macro_file, f"{path} disappeared")
        released = visible(data.points, lambda p: p.released_at, as_of, f"{key} values")
        points = sorted(latest_versions(released, lambda p: p.observed), key=lambda p: p.observed)
        return MacroSeries(
            series=key,
            name=data.info.name if data.info else key,
            unit=data.info.unit if data.info else "",
            points=points[-lookback:],
        )

    # -- bars and what is computed from them ------------------------------------------------

    def ohlcv(self, symbol: str, timeframe: Timeframe, as_of: datetime, lookback: int) -> list[Bar]:
        return read_bars(self._bars(symbol), self.name, symbol.upper(), timeframe, as_of, lookback)

    def sectors(self, as_of: datetime) -> list[SectorPerformance]:
        self._require(DataKind.SECTORS)
        found = sector_performance(lambda etf: self._daily(etf, as_of))
        if not found:
            raise NoData(f"local has no sector ETF bars ({', '.join(SECTOR_ETFS.values())})")
        return found

    def indices(self, as_of: datetime) -> list[IndexLevel]:
        self._require(DataKind.INDICES)
        names = INDEX_SYMBOLS | {
            x.symbol: x.name for x in self._optional_listings() if x.asset_type == "index"
        }
        found = index_levels(lambda symbol: self._daily(symbol, as_of), names)
        if not found:
            raise NoData(f"local has no index bars ({', '.join(names)})")
        return found

    def movers(self, as_of: datetime, limit: int = 10) -> MarketMovers:
        self._require(DataKind.MOVERS)
        histories = [
            (listing, bars)
            for listing in self._listings()
            if listing.asset_type == "equity"
            and (bars := self._daily(listing.symbol, as_of, RELATIVE_VOLUME_DAYS + 1)) is not None
        ]
        found = market_movers(histories, check_as_of(as_of), limit)
        if found is None:
            raise NoData(f"local has no two sessions of any universe equity by {as_of}")
        return found

    def industry(self, sector: Sector, as_of: datetime, limit: int = 10) -> list[IndustryCompany]:
        self._require(DataKind.INDUSTRY)
        members = [x for x in self._listings() if x.sector is sector and x.asset_type == "equity"]
        if not members:
            raise NoData(f"local {UNIVERSE_FILE} lists no {sector.value} equity")
        companies = [
            IndustryCompany(
                symbol=listing.symbol,
                name=listing.name,
                sector=sector,
                industry=listing.industry or "unclassified",
                market_cap=self._market_cap(listing.symbol, as_of),
                return_21d=self._return_21d(listing.symbol, as_of),
            )
            for listing in members
        ]
        companies.sort(key=lambda c: (c.market_cap is None, -(c.market_cap or 0), c.symbol))
        return companies[:limit]

    # -- files -----------------------------------------------------------------------------

    def _require(self, kind: DataKind) -> None:
        """``NotConfigured`` naming what a computed kind lacks, rather than an empty answer."""
        missing = [path for path in REQUIRED[kind] if not (self.root / path).exists()]
        if missing:
            raise NotConfigured(
                f"local has no {' or '.join(missing)} under {self.root}, needed for {kind.value}"
            )

    def _load(self, relative: str, parse: Callable[[Path], T]) -> T:
        missing = f"local has no {relative} under {self.root}"
        return self._files.load(self.root / relative, parse, missing)

    def _named(self, directory: str, suffixes: tuple[str, ...]) -> dict[str, Path]:
        """The files of a directory by upper-case name without suffix (``aapl.csv`` -> AAPL)."""
        folder = self.root / directory
        if not folder.is_dir():
            raise NotConfigured(f"local has no {directory}/ directory under {self.root}")
        named: dict[str, Path] = {}
        for path in sorted(folder.iterdir()):
            suffix = next((s for s in suffixes if path.name.lower().endswith(s)), None)
            if suffix is None or not path.is_file():
                continue
            key = path.name[: -len(suffix)].upper()
            if key in named:
                raise InvalidInput(
                    str(folder),
                    f"{named[key].name} and {path.name} both give {key}",
                    fix="Keep one.",
                )
            named[key] = path
        return named

    def _listings(self) -> list[Listing]:
        return self._load(UNIVERSE_FILE, csv_parser(Listing))

    def _optional_listings(self) -> list[Listing]:
        """The universe where it only adds names: none without the file."""
        return self._listings() if (self.root / UNIVERSE_FILE).exists() else []

    def _listing(self, symbol: str) -> Listing | None:
        key = symbol.upper()
        return next((x for x in self._optional_listings() if x.symbol.upper() == key), None)

    def _current_statements(self, symbol: str, as_of: datetime) -> list[Statement]:
        """The latest version of every statement of ``symbol`` reported by ``as_of``."""
        key = symbol.upper()
        path = self._named(STATEMENTS_DIR, (".json",)).get(key)
        if path is None:
            raise NotConfigured(f"local has no {STATEMENTS_DIR}/{key}.json under {self.root}")
        reported = visible(
            self._files.load(path, statements_parser(key), f"{path} disappeared"),
            lambda s: s.reported_at,
            as_of,
            f"statements of {key} reported",
        )
        return latest_versions(reported, lambda s: (s.kind, s.fiscal_period))

    def _bars(self, symbol: str) -> CsvSource:
        key = symbol.upper()
        path = self._named(OHLCV_DIR, _BAR_SUFFIXES).get(key)
        if path is None:
            raise NotConfigured(f"local has no {OHLCV_DIR}/{key}.csv or .parquet under {self.root}")
        return self._files.load(path, bar_parser(key), f"{path} disappeared")

    def _daily(self, symbol: str, as_of: datetime, lookback: int | None = None) -> list[Bar] | None:
        """Daily bars of ``symbol`` up to ``as_of``, or None when the files have none."""
        try:
            return read_bars(self._bars(symbol), self.name, symbol, Timeframe.D1, as_of, lookback)
        except (NotConfigured, NoData):
            return None

    def _last_close(self, symbol: str, as_of: datetime) -> float | None:
        """The close of the last bar at ``as_of`` in the file's own timeframe, if any."""
        try:
            source = self._bars(symbol)
            timeframe = native_timeframe(source, symbol.upper())
            return read_bars(source, self.name, symbol, timeframe, as_of, 1)[-1].close
        except (NotConfigured, NoData):
            return None

    def _return_21d(self, symbol: str, as_of: datetime) -> float | None:
        bars = self._daily(symbol, as_of, 22)
        return None if bars is None else return_over(bars, 21)

    def _market_cap(self, symbol: str, as_of: datetime) -> float | None:
        try:
            return self.fundamentals(symbol, as_of).market_cap
        except (NotConfigured, NoData):
            return None
