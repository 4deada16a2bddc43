"""The local vendor: every kind from the sample files, as of any time, and clear errors."""

from __future__ import annotations

import json
import shutil
import tempfile
from collections.abc import Callable
from datetime import UTC, datetime, timedelta
from pathlib import Path
from typing import Any

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from shared.data.contracts import DataKind, DataVendor, Sector, StatementKind
from shared.data.local import LocalVendor
from shared.data.local_files import ParsedFiles
from shared.errors import InvalidInput, NoData, NotConfigured
from shared.market.bars import Timeframe

SAMPLES = Path(__file__).parent / "data" / "local"
LONG = timedelta(days=3650)
FEB_20 = datetime(2024, 2, 20, tzinfo=UTC)

READS: dict[DataKind, Callable[[LocalVendor, datetime], object]] = {
    DataKind.OHLCV: lambda v, t: v.ohlcv("ACME", Timeframe.D1, t, 500),
    DataKind.NEWS: lambda v, t: v.news(t, LONG),
    DataKind.SOCIAL: lambda v, t: v.social("ACME", t, LONG),
    DataKind.FUNDAMENTALS: lambda v, t: v.fundamentals("ACME", t),
    DataKind.STATEMENTS: lambda v, t: v.statements("ACME", StatementKind.INCOME, t, 8),
    DataKind.INSIDER: lambda v, t: v.insider("NOVA", t, LONG),
    DataKind.SECTORS: lambda v, t: v.sectors(t),
    DataKind.INDUSTRY: lambda v, t: v.industry(Sector.INDUSTRIALS, t),
    DataKind.MOVERS: lambda v, t: v.movers(t),
    DataKind.INDICES: lambda v, t: v.indices(t),
    DataKind.MACRO: lambda v, t: v.macro("UNRATE", t),
    DataKind.UNIVERSE: lambda v, t: v.universe(t),
}
"""One read of each kind; every kind must appear, so a new kind cannot go untested."""

STAMPS: dict[DataKind, Callable[[Any], list[datetime]]] = {
    DataKind.OHLCV: lambda bars: [bar.time for bar in bars],
    DataKind.NEWS: lambda items: [item.published_at for item in items],
    DataKind.SOCIAL: lambda posts: [post.posted_at for post in posts],
    DataKind.STATEMENTS: lambda rows: [row.reported_at for row in rows],
    DataKind.INSIDER: lambda trades: [t.filed_at for t in trades],
    DataKind.MACRO: lambda series: [p.released_at for p in series.points],
}
"""The as-of stamp of each record kind's answer."""


@pytest.fixture(scope="module")
def vendor() -> LocalVendor:
    return LocalVendor(SAMPLES)


def at(year: int, month: int, day: int, hour: int = 0, minute: int = 0) -> datetime:
    return datetime(year, month, day, hour, minute, tzinfo=UTC)


def write(root: Path, relative: str, text: str) -> Path:
    path = root / relative
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(text, encoding="utf-8")
    return path


def test_reads_cover_every_kind() -> None:
    assert set(READS) == set(DataKind)


def test_vendor_implements_the_protocol(vendor: LocalVendor) -> None:
    assert isinstance(vendor, DataVendor)


def test_serves_exactly_the_kinds_whose_files_exist(tmp_path: Path) -> None:
    assert LocalVendor(SAMPLES).kinds == frozenset(DataKind)
    assert LocalVendor(tmp_path / "missing").kinds == frozenset()
    write(tmp_path, "news.jsonl", "")
    write(tmp_path, "universe.csv", "symbol,name\n")

    assert LocalVendor(tmp_path).kinds == {DataKind.NEWS, DataKind.UNIVERSE}


@pytest.mark.parametrize("kind", list(DataKind))
def test_missing_files_are_not_configured(tmp_path: Path, kind: DataKind) -> None:
    with pytest.raises(NotConfigured, match="local has no"):
        READS[kind](LocalVendor(tmp_path), FEB_20)


def test_a_symbol_without_its_file_is_not_configured(vendor: LocalVendor) -> None:
    with pytest.raises(NotConfigured, match="statements/NOVA.json"):
        vendor.fundamentals("NOVA", FEB_20)
    with pytest.raises(NotConfigured, match="ohlcv/BOLT"):
        vendor.ohlcv("BOLT", Timeframe.D1, FEB_20, 10)


def test_ohlcv_ends_at_as_of_and_resamples(vendor: LocalVendor) -> None:
    daily = vendor.ohlcv("acme", Timeframe.D1, at(2024, 1, 10, 12), 5)
    weekly = vendor.ohlcv("ACME", Timeframe.W1, FEB_20, 100)

    assert [bar.time.date().isoformat() for bar in daily][-2:] == ["2024-01-09", "2024-01-10"]
    assert len(daily) == 5
    assert weekly[-1].time == at(2024, 2, 12)  # the week of Feb 19 is still forming


def test_ohlcv_before_the_data_or_long_after_it_is_no_data(vendor: LocalVendor) -> None:
    with pytest.raises(NoData, match="ACME"):
        vendor.ohlcv("ACME", Timeframe.D1, at(2023, 11, 30), 10)
    with pytest.raises(NoData, match="too long before as_of"):
        vendor.ohlcv("ACME", Timeframe.D1, at(2024, 6, 1), 10)


def test_a_bar_file_that_cannot_be_read_is_invalid_input(tmp_path: Path) -> None:
    write(tmp_path, "ohlcv/ONE.csv", "Date,Open,High,Low,Close\n2024-01-02,1,2,0.5,1.5\n")

    with pytest.raises(InvalidInput, match="single bar"):
        LocalVendor(tmp_path).ohlcv("ONE", Timeframe.D1, FEB_20, 10)


def test_a_naive_as_of_is_invalid_input(vendor: LocalVendor) -> None:
    with pytest.raises(InvalidInput, match="as_of"):
        vendor.news(datetime(2024, 2, 20), LONG)  # noqa: DTZ001


def test_news_filters_by_window_symbol_and_topic_newest_first(vendor: LocalVendor) -> None:
    recent = vendor.news(FEB_20, timedelta(days=30))
    acme = vendor.news(FEB_20, LONG, symbol="acme", limit=2)
    macro = vendor.news(FEB_20, LONG, topic="MACRO")

    assert [item.id for item in recent] == ["n7", "n6", "n5", "n4"]
    assert [item.id for item in acme] == ["n7", "n5"]
    assert [item.id for item in macro] == ["n6", "n2"]
    with pytest.raises(NoData, match="news about NOVA"):
        vendor.news(at(2024, 1, 9), timedelta(days=7), symbol="NOVA")


def test_social_and_insider_read_by_posting_and_filing_time(vendor: LocalVendor) -> None:
    posts = vendor.social("NOVA", at(2024, 1, 24, 21, 40), LONG)
    trades = vendor.insider("NOVA", at(2024, 1, 16, 20, 44), LONG)

    assert [post.id for post in posts] == ["s3", "s2"]  # posted_at == as_of is visible
    assert [trade.insider for trade in trades] == ["Ravi Menon"]  # the next is filed a minute later


def test_statements_show_a_restatement_only_once_reported(vendor: LocalVendor) -> None:
    before = vendor.statements("ACME", StatementKind.INCOME, at(2024, 2, 15, 20), periods=2)
    after = vendor.statements("ACME", StatementKind.INCOME, at(2024, 2, 15, 21), periods=2)

    assert [s.fiscal_period for s in after] == ["2023Q4", "2023Q3"]
    assert before[1].items["net_income"] == 305e6
    assert after[1].items["net_income"] == 289e6
    with pytest.raises(NoData):
        vendor.statements("ACME", StatementKind.CASH_FLOW, at(2023, 10, 1), periods=2)


@pytest.mark.parametrize(
    ("as_of", "period", "revenue", "net_income"),
    [
        (at(2024, 1, 31), "2023Q3", 9432e6, 1151e6),  # 2022Q4..2023Q3
        (at(2024, 2, 5), "2023Q4", 9652e6, 1188e6),  # 2023Q1..2023Q4
        (at(2024, 2, 20), "2023Q4", 9652e6, 1172e6),  # 2023Q3 restated
    ],
)
def test_fundamentals_use_only_statements_reported_by_as_of(
    vendor: LocalVendor, as_of: datetime, period: str, revenue: float, net_income: float
) -> None:
    summary = vendor.fundamentals("ACME", as_of)
    close = vendor.ohlcv("ACME", Timeframe.D1, as_of, 1)[-1].close
    shares = vendor.statements("ACME", StatementKind.BALANCE, as_of, 1)[0].items[
        "shares_outstanding"
    ]

    assert summary.latest_period == period
    assert summary.revenue_ttm == pytest.approx(revenue)
    assert summary.net_income_ttm == pytest.approx(net_income)
    assert summary.price == close
    assert summary.market_cap == pytest.approx(close * shares)
    assert summary.pe_ratio == pytest.approx(close / (net_income / shares))
    assert (summary.name, summary.sector) == ("Acme Industrial Corp.", Sector.INDUSTRIALS)


def test_fundamentals_before_any_report_are_no_data(vendor: LocalVendor) -> None:
    with pytest.raises(NoData, match="statements of ACME"):
        vendor.fundamentals("ACME", at(2023, 2, 1))


def test_market_cap_needs_shares_outstanding(tmp_path: Path) -> None:
    statement = {
        "symbol": "ZED",
        "kind": "balance",
        "fiscal_period": "2023Q4",
        "period_end": "2023-12-31",
        "reported_at": "2024-01-30T21:00:00Z",
        "items": {"total_equity": 5e8},
    }
    write(tmp_path, "statements/ZED.json", json.dumps([statement]))
    shutil.copy(SAMPLES / "ohlcv" / "ACME.csv", write(tmp_path, "ohlcv/ZED.csv", ""))

    summary = LocalVendor(tmp_path).fundamentals("ZED", FEB_20)

    assert summary.price is not None
    assert (summary.market_cap, summary.eps_ttm, summary.revenue_ttm) == (None, None, None)
    assert summary.name == "ZED"


def test_macro_sees_each_value_as_released_and_revised(vendor: LocalVendor) -> None:
    january = vendor.macro("unrate", at(2024, 1, 10))
    february = vendor.macro("UNRATE", at(2024, 2, 2, 13, 30), lookback=2)

    assert (january.name, january.unit) == ("Unemployment Rate", "percent")
    assert january.points[-1].observed.isoformat() == "2023-12-01"
    assert january.points[-1].value == 3.7
    assert [(p.observed.month, p.value) for p in february.points] == [(12, 3.8), (1, 3.7)]


def test_macro_without_sidecar_is_named_after_its_file(tmp_path: Path) -> None:
    write(
        tmp_path,
        "macro/fedfunds.csv",
        "observed,released_at,value\n2024-01-01,2024-02-01T14:00:00Z,5.33\n",
    )

    series = LocalVendor(tmp_path).macro("FEDFUNDS", FEB_20)

    assert (series.series, series.name, series.unit) == ("FEDFUNDS", "FEDFUNDS", "")


def test_universe_lists_the_file(vendor: LocalVendor) -> None:
    listings = vendor.universe(FEB_20)

    assert [x.symbol for x in listings] == ["ACME", "BOLT", "NOVA", "XLK", "^GSPC"]
    assert listings[3].sector is None
    assert listings[4].asset_type == "index"


def test_sectors_and_indices_come_from_local_etf_and_index_bars(vendor: LocalVendor) -> None:
    closes = [bar.close for bar in vendor.ohlcv("XLK", Timeframe.D1, FEB_20, 500)]
    last_2023 = [b.close for b in vendor.ohlcv("XLK", Timeframe.D1, at(2023, 12, 31), 1)][-1]
    index = vendor.ohlcv("^GSPC", Timeframe.D1, FEB_20, 2)

    (tech,) = vendor.sectors(FEB_20)
    (spx,) = vendor.indices(FEB_20)

    assert (tech.sector, tech.etf) == (Sector.INFORMATION_TECHNOLOGY, "XLK")
    assert tech.return_5d == pytest.approx(closes[-1] / closes[-6] - 1)
    assert tech.return_ytd == pytest.approx(closes[-1] / last_2023 - 1)
    assert (spx.symbol, spx.name, spx.level) == ("^GSPC", "S&P 500", index[-1].close)
    assert spx.change_1d_pct == pytest.approx((index[-1].close / index[0].close - 1) * 100)


def test_movers_rank_universe_equities_on_the_last_session(vendor: LocalVendor) -> None:
    movers = vendor.movers(FEB_20)
    changes = {m.symbol: m.change_pct for m in movers.gainers + movers.losers}

    assert set(changes) == {"ACME", "NOVA"}  # BOLT has no bars; XLK is an ETF
    for symbol, change in changes.items():
        bars = vendor.ohlcv(symbol, Timeframe.D1, FEB_20, 2)
        assert change == pytest.approx((bars[1].close / bars[0].close - 1) * 100)
    assert [m.volume for m in movers.most_active] == sorted(
        (m.volume for m in movers.most_active), reverse=True
    )
    assert all(m.relative_volume is not None for m in movers.most_active)


def test_industry_ranks_a_sectors_equities_by_market_cap(vendor: LocalVendor) -> None:
    companies = vendor.industry(Sector.INDUSTRIALS, FEB_20)

    assert [c.symbol for c in companies] == ["ACME", "BOLT"]
    assert companies[0].market_cap == vendor.fundamentals("ACME", FEB_20).market_cap
    assert (companies[1].market_cap, companies[1].return_21d) == (None, None)
    with pytest.raises(NoData, match="Energy"):
        vendor.industry(Sector.ENERGY, FEB_20)


@pytest.mark.parametrize(
    ("relative", "text", "where", "field"),
    [
        (
            "news.jsonl",
            '{"id": "a", "published_at": "2024-01-02T00:00:00Z", "title": "t", "summary": "s",'
            ' "source": "x"}\n\n{"id": "b", "published_at": "2024-01-02", "title": "t"}\n',
            "line 3",
            "published_at",
        ),
        ("social.jsonl", "not json\n", "line 1", "the record"),
        (
            "insider.jsonl",
            '{"symbol": "A", "insider": "I", "role": "CEO", "side": "buy", "shares": -5,'
            ' "price": 1, "traded_on": "2024-01-02", "filed_at": "2024-01-03T00:00:00Z"}\n',
            "line 1",
            "shares",
        ),
        (
            "universe.csv",
            "symbol,name,sector\nAAA,Aaa Inc.,Energy\nBBB,Bbb Inc.,Tech\n",
            "line 3",
            "sector",
        ),
        (
            "macro/CPI.csv",
            "observed,released_at,value\n2024-01-01,2024-02-13T13:30:00Z,n/a\n",
            "line 2",
            "value",
        ),
        ("statements/AAA.json", '[{"symbol": "AAA"}]', "entry 1", "kind"),
        (
            "statements/AAA.json",
            '[{"symbol": "BBB", "kind": "income", "fiscal_period": "2023Q4",'
            ' "period_end": "2023-12-31", "reported_at": "2024-01-30T00:00:00Z", "items": {}}]',
            "entry 1",
            "symbol",
        ),
        ("statements/AAA.json", '[{"symbol": "AAA",\n', "line 2", "not valid JSON"),
    ],
)
def test_bad_records_name_the_file_line_and_field(
    tmp_path: Path, relative: str, text: str, where: str, field: str
) -> None:
    path = write(tmp_path, relative, text)
    vendor = LocalVendor(tmp_path)
    read = {
        "news.jsonl": lambda: vendor.news(FEB_20, LONG),
        "social.jsonl": lambda: vendor.social("A", FEB_20, LONG),
        "insider.jsonl": lambda: vendor.insider("A", FEB_20, LONG),
        "universe.csv": lambda: vendor.universe(FEB_20),
        "macro/CPI.csv": lambda: vendor.macro("CPI", FEB_20),
        "statements/AAA.json": lambda: vendor.fundamentals("AAA", FEB_20),
    }[relative]

    with pytest.raises(InvalidInput) as caught:
        read()

    message = str(caught.value)
    assert str(path) in message
    assert where in message
    assert field in message


def test_files_load_lazily_and_reload_when_changed(tmp_path: Path) -> None:
    line = '{{"id": "{0}", "posted_at": "2024-01-0{0}T00:00:00Z", "author": "a", "text": "t", "symbol": "A"}}\n'
    write(tmp_path, "news.jsonl", "broken\n")
    posts = write(tmp_path, "social.jsonl", line.format(1))
    vendor = LocalVendor(tmp_path)

    assert [p.id for p in vendor.social("A", FEB_20, LONG)] == ["1"]  # news.jsonl is never read
    posts.write_text(line.format(1) + line.format(2), encoding="utf-8")
    assert [p.id for p in vendor.social("A", FEB_20, LONG)] == ["2", "1"]
    with pytest.raises(InvalidInput, match="news.jsonl"):
        vendor.news(FEB_20, LONG)


def _truncate(source: Path, target: Path, as_of: datetime) -> None:
    """A copy of the sample files holding only what was out by ``as_of``."""
    shutil.copytree(source, target)
    for bars in (target / "ohlcv").iterdir():
        _cut(bars, as_of, lambda row: f"{row[:10]}T00:00:00+00:00", header=True)
    for name, field in [
        ("news.jsonl", "published_at"),
        ("social.jsonl", "posted_at"),
        ("insider.jsonl", "filed_at"),
    ]:
        _cut(target / name, as_of, lambda row, field=field: json.loads(row)[field], header=False)
    _cut(target / "macro" / "UNRATE.csv", as_of, lambda row: row.split(",")[1], header=True)
    for statements in (target / "statements").iterdir():
        entries = json.loads(statements.read_text())
        reported = [e for e in entries if datetime.fromisoformat(e["reported_at"]) <= as_of]
        statements.write_text(json.dumps(reported))


def _cut(path: Path, as_of: datetime, stamp: Callable[[str], str], *, header: bool) -> None:
    """Keep the lines of ``path`` whose ``stamp`` is at or before ``as_of`` (and its header)."""
    lines = path.read_text().splitlines()
    head, rows = (lines[:1], lines[1:]) if header else ([], lines)
    kept = [row for row in rows if datetime.fromisoformat(stamp(row)) <= as_of]
    path.write_text("".join(f"{line}\n" for line in head + kept))


def _outcome(
    read: Callable[[LocalVendor, datetime], object], vendor: LocalVendor, as_of: datetime
) -> object:
    try:
        return read(vendor, as_of)
    except (NoData, NotConfigured) as error:
        return type(error).__name__


# From Dec 8 the truncated bar files hold a week of bars, enough to infer their timeframe.
@settings(max_examples=25, deadline=None)
@given(st.datetimes(datetime(2023, 12, 8), datetime(2024, 4, 1), timezones=st.just(UTC)))
def test_every_kind_at_as_of_sees_only_what_was_out_by_then(as_of: datetime) -> None:
    full = LocalVendor(SAMPLES)
    with tempfile.TemporaryDirectory() as folder:
        _truncate(SAMPLES, Path(folder) / "local", as_of)
        past = LocalVendor(Path(folder) / "local")
        for kind, read in READS.items():
            answer = _outcome(read, full, as_of)
            assert answer == _outcome(read, past, as_of), kind
            if kind in STAMPS and not isinstance(answer, str):
                assert all(stamp <= as_of for stamp in STAMPS[kind](answer)), kind


def test_only_the_files_read_last_stay_parsed(tmp_path: Path) -> None:
    parsed: list[str] = []

    def parse(path: Path) -> str:
        parsed.append(path.name)
        return path.read_text()

    files = ParsedFiles(keep=2)
    paths = [tmp_path / f"{name}.csv" for name in "abc"]
    for path in paths:
        path.write_text(path.stem)

    values = [files.load(p, parse, "gone") for p in (*paths, paths[2], paths[0])]

    assert values == ["a", "b", "c", "c", "a"]
    assert parsed == ["a.csv", "b.csv", "c.csv", "a.csv"]  # a made way for c, then came back
