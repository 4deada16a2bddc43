"""Bar sources: bundled data, local files, yfinance (faked, never online), the factory."""

from __future__ import annotations

import functools
import logging
import subprocess
import sys
import types
from datetime import UTC, datetime, timedelta
from pathlib import Path
from zoneinfo import ZoneInfo

import pandas as pd
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from shared.errors import ConfigError, InvalidInput
from shared.market.bars import Bar, Timeframe, bars_to_frame
from shared.market.sources import (
    DATA_DIR,
    BarSource,
    BundledSource,
    CsvSource,
    YFinanceSource,
    open_source,
)


def utc(*parts: int) -> datetime:
    return datetime(*parts, tzinfo=UTC)


@functools.cache
def raw(symbol: str) -> pd.DataFrame:
    """The bundled file read straight with pandas: the oracle the sources are checked against."""
    frame = pd.read_csv(DATA_DIR / f"{symbol}.csv", index_col=0, parse_dates=True)
    frame.index = frame.index.tz_localize("UTC")
    return frame.rename(columns=str.lower)


def as_of_within(symbol: str, slack: timedelta) -> st.SearchStrategy[datetime]:
    index = raw(symbol).index
    return st.datetimes(
        min_value=index[0].to_pydatetime().replace(tzinfo=None),
        max_value=(index[-1] + slack).to_pydatetime().replace(tzinfo=None),
        timezones=st.just(UTC),
    )


# --- bundled data ------------------------------------------------------------


def test_bundled_source_offers_the_shipped_symbols_and_real_indices() -> None:
    source = BundledSource()

    assert source.symbols() == ("BTCUSD", "EURUSD", "GOOG", "^GSPC", "^IXIC", "^VIX")
    assert isinstance(source, BarSource)


def test_bundled_timeframes_are_the_real_bar_spacing_then_resampled_ones() -> None:
    source = BundledSource()

    assert source.timeframes("GOOG") == ("1d", "1wk", "1mo")
    assert source.timeframes("EURUSD") == ("1h", "4h", "1d", "1wk", "1mo")
    assert source.timeframes("BTCUSD") == ("1mo",)


def test_bundled_btcusd_months_are_labelled_by_their_first_day() -> None:
    bars = BundledSource().read("BTCUSD", "1mo")

    assert len(bars) == 156
    assert (bars[0].time, bars[0].close) == (utc(2012, 1, 1), 5.55)
    assert bars[-1].time == utc(2024, 12, 1)


@pytest.mark.parametrize("symbol", ["GOOG", "EURUSD"])
@settings(deadline=None)
@given(data=st.data())
def test_bundled_read_returns_exactly_the_bars_up_to_as_of(
    symbol: str, data: st.DataObject
) -> None:
    as_of = data.draw(as_of_within(symbol, slack=timedelta(days=10)))
    lookback = data.draw(st.integers(min_value=1, max_value=300))
    timeframe = {"GOOG": "1d", "EURUSD": "1h"}[symbol]
    expected = raw(symbol)[raw(symbol).index <= as_of]

    bars = BundledSource().read(symbol, timeframe, as_of=as_of)
    last = BundledSource().read(symbol, timeframe, as_of=as_of, lookback=lookback)

    assert all(bar.time <= as_of for bar in bars)
    assert len(bars) == len(expected)
    assert bars[-1].time == expected.index[-1]
    assert bars[-1].close == expected["close"].iloc[-1]
    assert last == bars[-lookback:]


@settings(deadline=None)
@given(as_of=as_of_within("BTCUSD", slack=timedelta(days=60)))
def test_bundled_monthly_read_stops_at_the_latest_month_started_by_as_of(as_of: datetime) -> None:
    bars = BundledSource().read("BTCUSD", "1mo", as_of=as_of)

    assert bars[-1].time == min(utc(as_of.year, as_of.month, 1), utc(2024, 12, 1))


@functools.cache
def resampled(symbol: str, rule: str) -> pd.DataFrame:
    """Oracle: pandas' own resampling of the raw file, empty buckets dropped."""
    buckets = raw(symbol).resample(rule, label="left", closed="left")
    ohlcv = {"open": "first", "high": "max", "low": "min", "close": "last", "volume": "sum"}
    return buckets.agg(ohlcv).dropna()


@pytest.mark.parametrize(
    ("symbol", "base", "timeframe", "rule"),
    [("EURUSD", "1h", "4h", "4h"), ("GOOG", "1d", "1wk", "W-MON")],
)
@settings(deadline=None)
@given(data=st.data())
def test_resampled_read_only_returns_buckets_complete_at_as_of(
    symbol: str, base: str, timeframe: str, rule: str, data: st.DataObject
) -> None:
    as_of = data.draw(as_of_within(symbol, slack=timedelta(days=10)))
    fine, width, step = raw(symbol), Timeframe(timeframe).duration, Timeframe(base).duration
    expected = resampled(symbol, rule)
    starts, cutoff = expected.index, min(pd.Timestamp(as_of), fine.index[-1])
    complete = starts[(starts >= fine.index[0]) & (starts + width - step <= cutoff)]
    if complete.empty:
        with pytest.raises(InvalidInput, match=f"before {symbol}'s first complete {timeframe} bar"):
            BundledSource().read(symbol, timeframe, as_of=as_of)
        return

    bars = BundledSource().read(symbol, timeframe, as_of=as_of, lookback=3)

    assert [bar.time for bar in bars] == list(complete[-3:])
    for bar in bars:
        members = fine[(fine.index >= bar.time) & (fine.index < bar.time + width)]
        assert members.index[-1] <= as_of  # nothing from after as_of leaks in
        row = expected.loc[bar.time]
        assert (bar.open, bar.high, bar.low, bar.close) == tuple(row.iloc[:4])
        assert bar.volume == pytest.approx(row["volume"])


def test_lookback_returns_the_last_n_bars_up_to_as_of() -> None:
    bars = BundledSource().read("GOOG", "1d", as_of=utc(2010, 1, 1), lookback=3)

    assert [bar.time for bar in bars] == [utc(2009, 12, 29), utc(2009, 12, 30), utc(2009, 12, 31)]


def test_lookback_longer_than_the_history_returns_all_of_it() -> None:
    bars = BundledSource().read("GOOG", "1d", as_of=utc(2004, 8, 23), lookback=100)

    assert [bar.time for bar in bars] == [utc(2004, 8, 19), utc(2004, 8, 20), utc(2004, 8, 23)]


def test_as_of_none_reads_up_to_the_latest_bar() -> None:
    bars = BundledSource().read("EURUSD", "1h", lookback=1)

    assert bars[0].time == utc(2018, 2, 7, 15)


def test_as_of_in_another_timezone_is_the_same_instant() -> None:
    new_york = datetime(2009, 12, 30, 19, tzinfo=ZoneInfo("America/New_York"))

    bars = BundledSource().read("GOOG", "1d", as_of=new_york, lookback=1)

    assert bars[0].time == utc(2009, 12, 31)  # 19:00 New York is 00:00 UTC the next day


def test_unknown_symbol_lists_the_available_ones() -> None:
    with pytest.raises(
        InvalidInput, match="unknown symbol 'AAPL'. Use one of: BTCUSD, EURUSD, GOOG"
    ):
        BundledSource().read("AAPL", "1d")


def test_symbols_are_case_insensitive() -> None:
    bars = BundledSource().read("goog", "1d", lookback=1)

    assert bars[0].time == utc(2013, 3, 1)


def test_unsupported_timeframe_names_what_the_symbol_has() -> None:
    with pytest.raises(InvalidInput, match="BTCUSD has no 1d bars .*Use one of: 1mo") as caught:
        BundledSource().read("BTCUSD", "1d")

    assert caught.value.field == "timeframe"


def test_finer_timeframe_than_the_data_is_unsupported() -> None:
    with pytest.raises(InvalidInput, match="GOOG has no 1h bars .*Use one of: 1d, 1wk, 1mo"):
        BundledSource().read("GOOG", "1h")


def test_as_of_before_the_data_gives_the_first_date() -> None:
    with pytest.raises(InvalidInput, match="before GOOG's first 1d bar, at 2004-08-19") as caught:
        BundledSource().read("GOOG", "1d", as_of=utc(2000, 1, 1))

    assert caught.value.field == "as_of"


def test_naive_as_of_is_rejected() -> None:
    with pytest.raises(InvalidInput, match="has no timezone") as caught:
        BundledSource().read("GOOG", "1d", as_of=datetime(2010, 1, 1))

    assert caught.value.field == "as_of"


@pytest.mark.parametrize("lookback", [0, -3, True])
def test_lookback_must_be_a_positive_count(lookback: int) -> None:
    with pytest.raises(InvalidInput, match="not a positive number of bars"):
        BundledSource().read("GOOG", "1d", lookback=lookback)


def test_partial_bucket_waits_until_its_last_hour() -> None:
    source = BundledSource()

    before = source.read("EURUSD", "4h", as_of=utc(2017, 4, 20, 2, 59), lookback=1)
    after = source.read("EURUSD", "4h", as_of=utc(2017, 4, 20, 3), lookback=1)

    assert before[0].time == utc(2017, 4, 19, 20)  # 00:00-04:00 still lacks its 03:00 hour
    assert after[0].time == utc(2017, 4, 20, 0)
    assert after[0].close == raw("EURUSD").loc[pd.Timestamp("2017-04-20 03:00", tz="UTC"), "close"]


# --- local files -------------------------------------------------------------


MAY_DAY = utc(2024, 5, 1, 13)


def hourly_bars(count: int = 6, start: datetime = MAY_DAY) -> list[Bar]:
    return [
        Bar(
            time=start + timedelta(hours=i),
            open=100 + i,
            high=102 + i,
            low=99 + i,
            close=101 + i,
            volume=1000 * (i + 1),
        )
        for i in range(count)
    ]


def write_quantagent_csv(path: Path, bars: list[Bar]) -> Path:
    """QuantAgent's layout: Datetime,Close,High,Low,Open,Volume, New York offsets."""
    frame = bars_to_frame(bars).tz_convert("America/New_York")
    frame = frame[["close", "high", "low", "open", "volume"]].rename(columns=str.capitalize)
    frame.rename_axis("Datetime").to_csv(path)
    return path


def test_csv_in_quantagent_layout_round_trips(tmp_path: Path) -> None:
    bars = hourly_bars()
    path = write_quantagent_csv(tmp_path / "btc_1h.csv", bars)

    read = CsvSource(path).read("BTC_1H", "1h")

    assert path.read_text().startswith(
        "Datetime,Close,High,Low,Open,Volume\n2024-05-01 09:00:00-04:00"
    )
    assert read == bars


def test_csv_column_names_ignore_case_and_spaces(tmp_path: Path) -> None:
    path = tmp_path / "x.csv"
    path.write_text(
        " DATE ,oPeN,HIGH,low,Close,VOLUME\n2024-01-02,10,12,9,11,5\n2024-01-03,11,13,10,12,6\n"
    )

    bars = CsvSource(path).read("X", "1d")

    assert bars[0] == Bar(time=utc(2024, 1, 2), open=10, high=12, low=9, close=11, volume=5)


def test_csv_naive_times_are_taken_as_utc_and_offsets_converted(tmp_path: Path) -> None:
    path = tmp_path / "mixed.csv"
    path.write_text(
        "time,open,high,low,close\n2024-01-02 10:00,1,1,1,1\n2024-01-02 12:00+01:00,1,1,1,1\n"
    )

    bars = CsvSource(path, timeframe="1h").read("MIXED", "1h")

    assert [bar.time for bar in bars] == [utc(2024, 1, 2, 10), utc(2024, 1, 2, 11)]


def test_csv_epoch_milliseconds_are_read_as_utc(tmp_path: Path) -> None:
    path = tmp_path / "epoch.csv"
    path.write_text(
        "timestamp,open,high,low,close,volume\n1704067200000,1,1,1,1,0\n1704070800000,1,1,1,1,0\n"
    )

    bars = CsvSource(path).read("EPOCH", "1h")

    assert [bar.time for bar in bars] == [utc(2024, 1, 1), utc(2024, 1, 1, 1)]


def test_csv_yyyymmdd_numbers_are_dates(tmp_path: Path) -> None:
    path = tmp_path / "ashare.csv"
    path.write_text("date,open,high,low,close\n20240102,1,1,1,1\n20240103,1,1,1,1\n")

    bars = CsvSource(path).read("ASHARE", "1d")

    assert [bar.time for bar in bars] == [utc(2024, 1, 2), utc(2024, 1, 3)]


def test_csv_without_volume_gets_zero_volume_and_a_warning(
    tmp_path: Path, caplog: pytest.LogCaptureFixture
) -> None:
    path = tmp_path / "novol.csv"
    path.write_text("Date,Open,High,Low,Close\n2024-01-02,10,12,9,11\n2024-01-03,11,13,10,12\n")

    with caplog.at_level(logging.WARNING, logger="shared.market.files"):
        bars = CsvSource(path).read("NOVOL", "1d")

    assert [bar.volume for bar in bars] == [0.0, 0.0]
    assert "no volume column" in caplog.text


def test_csv_missing_columns_are_listed_with_the_file(tmp_path: Path) -> None:
    path = tmp_path / "bad.csv"
    path.write_text("when,Open,Close\n2024-01-02,10,11\n")

    with pytest.raises(
        InvalidInput, match="missing a time column .*, high, low; found columns: when, Open, Close"
    ) as caught:
        CsvSource(path).read("BAD", "1d")

    assert caught.value.field == str(path)


def test_csv_empty_cell_is_rejected_not_filled(tmp_path: Path) -> None:
    path = tmp_path / "gap.csv"
    path.write_text(
        "Date,Open,High,Low,Close,Volume\n2024-01-02,10,12,9,11,5\n2024-01-03,11,,10,12,6\n"
    )

    with pytest.raises(
        InvalidInput, match=r"gap.csv`: row 1 at 2024-01-03T00:00:00\+00:00: high is not finite"
    ):
        CsvSource(path).read("GAP", "1d")


def test_csv_text_in_a_number_column_names_row_and_value(tmp_path: Path) -> None:
    path = tmp_path / "text.csv"
    path.write_text("Date,Open,High,Low,Close\n2024-01-02,10,12,9,11\n2024-01-03,11,n/a?,10,12\n")

    with pytest.raises(InvalidInput, match="row 1: 'n/a\\?' is not a number in column high"):
        CsvSource(path).read("TEXT", "1d")


def test_csv_sorted_newest_first_is_rejected_with_the_fix(tmp_path: Path) -> None:
    path = tmp_path / "desc.csv"
    path.write_text("Date,Open,High,Low,Close\n2024-01-03,10,12,9,11\n2024-01-02,11,13,10,12\n")

    with pytest.raises(InvalidInput, match="row 1 .*earlier than row 0. Sort the bars by time"):
        CsvSource(path).read("DESC", "1d")


def test_csv_bars_closer_than_the_timeframe_are_rejected(tmp_path: Path) -> None:
    path = write_quantagent_csv(tmp_path / "h.csv", hourly_bars())

    with pytest.raises(
        InvalidInput, match="row 1 .* is only 1:00:00 after the previous bar, less than one 1d bar"
    ):
        CsvSource(path, timeframe="1d").read("H", "1d")


def test_csv_timeframe_is_inferred_and_resampled(tmp_path: Path) -> None:
    path = write_quantagent_csv(tmp_path / "h.csv", hourly_bars(count=8, start=utc(2024, 5, 1)))
    source = CsvSource(path)

    bars = source.read("H", "4h")

    assert source.timeframes("H")[0] == "1h"
    assert [(bar.time, bar.open, bar.close, bar.volume) for bar in bars] == [
        (utc(2024, 5, 1, 0), 100, 104, 10_000),
        (utc(2024, 5, 1, 4), 104, 108, 26_000),
    ]


def test_csv_directory_gives_one_symbol_per_file(tmp_path: Path) -> None:
    write_quantagent_csv(tmp_path / "aapl.csv", hourly_bars())
    write_quantagent_csv(tmp_path / "msft.csv", hourly_bars())
    (tmp_path / "notes.txt").write_text("not bars")

    assert CsvSource(tmp_path).symbols() == ("AAPL", "MSFT")


def test_csv_mapping_names_the_symbols(tmp_path: Path) -> None:
    path = write_quantagent_csv(tmp_path / "whatever.csv", hourly_bars())

    bars = CsvSource({"nvda": path}).read("NVDA", "1h", lookback=2)

    assert len(bars) == 2


def test_csv_missing_file_fails_at_construction(tmp_path: Path) -> None:
    with pytest.raises(InvalidInput, match="nope.csv is not a file") as caught:
        CsvSource(tmp_path / "nope.csv")

    assert caught.value.field == "files"


def test_parquet_file_reads_like_csv(tmp_path: Path) -> None:
    pytest.importorskip("pyarrow")
    bars = hourly_bars()
    path = tmp_path / "eth.parquet"
    bars_to_frame(bars).rename(columns=str.upper).to_parquet(path)

    assert CsvSource(path).read("ETH", "1h") == bars


def test_bar_file_of_another_type_is_refused(tmp_path: Path) -> None:
    path = tmp_path / "bars.xlsx"
    path.write_bytes(b"PK")

    with pytest.raises(InvalidInput, match="bars.xlsx is not a .csv or .parquet file"):
        CsvSource(path)


def test_parquet_without_pyarrow_says_to_install_it(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    path = tmp_path / "bars.parquet"
    path.write_bytes(b"PAR1")
    monkeypatch.setitem(sys.modules, "pyarrow", None)  # import fails even where it is installed

    with pytest.raises(ConfigError, match=r"needs pyarrow.*the parquet extra"):
        CsvSource(path).read("BARS", "1d")


# --- yfinance (never online) ---------------------------------------------------


def test_yfinance_missing_says_to_install_it(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setitem(sys.modules, "yfinance", None)

    with pytest.raises(ConfigError, match=r"pip install .*\[online\]") as caught:
        open_source("yfinance")

    assert caught.value.setting == "yfinance"


class FakeTicker:
    """Answers like yfinance's Ticker.history: exchange-local times, capitalised columns."""

    calls: list[dict[str, object]] = []

    def __init__(self, symbol: str) -> None:
        self.symbol = symbol

    def history(self, **options: object) -> pd.DataFrame:
        FakeTicker.calls.append({"symbol": self.symbol, **options})
        days = pd.date_range("2024-01-01", periods=10, freq="D", tz="America/New_York")
        return pd.DataFrame(
            {"Open": 10.0, "High": 12.0, "Low": 9.0, "Close": 11.0, "Volume": 100},
            index=pd.DatetimeIndex(days, name="Date"),
        )


def test_yfinance_reads_are_bounded_by_as_of_and_dated_by_session(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    monkeypatch.setitem(sys.modules, "yfinance", types.SimpleNamespace(Ticker=FakeTicker))
    FakeTicker.calls.clear()
    source = open_source("yfinance", symbols=["aapl"])

    bars = source.read("AAPL", "1d", as_of=utc(2024, 1, 5, 12), lookback=3)

    assert isinstance(source, YFinanceSource)
    assert [bar.time for bar in bars] == [utc(2024, 1, 3), utc(2024, 1, 4), utc(2024, 1, 5)]
    assert FakeTicker.calls[0]["interval"] == "1d"
    assert FakeTicker.calls[0]["end"] == pd.Timestamp("2024-01-06 12:00", tz="UTC")


def test_yfinance_allow_list_rejects_other_symbols(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setitem(sys.modules, "yfinance", types.SimpleNamespace(Ticker=FakeTicker))

    with pytest.raises(InvalidInput, match="unknown symbol 'MSFT'. Use one of: AAPL"):
        YFinanceSource(["AAPL"]).read("MSFT", "1d")


# --- factory and boundaries ------------------------------------------------------


def test_market_code_never_imports_temporalio_and_contracts_skip_pandas() -> None:
    probe = (
        "import sys, shared.market.bars as b; assert 'pandas' not in sys.modules; "
        "import shared.market.sources; assert 'temporalio' not in sys.modules"
    )

    result = subprocess.run(
        [sys.executable, "-c", probe], capture_output=True, text=True, cwd=Path(__file__).parents[1]
    )

    assert result.returncode == 0, result.stderr


def test_open_source_builds_sources_by_name(tmp_path: Path) -> None:
    path = write_quantagent_csv(tmp_path / "spy.csv", hourly_bars())

    assert isinstance(open_source("bundled"), BundledSource)
    assert open_source("csv", files=str(path)).symbols() == ("SPY",)


def test_open_source_unknown_name_lists_the_sources() -> None:
    with pytest.raises(
        InvalidInput, match="unknown source 'polygon'. Use one of: bundled, csv, yfinance"
    ):
        open_source("polygon")


def test_open_source_wrong_option_lists_the_accepted_ones() -> None:
    with pytest.raises(
        InvalidInput,
        match="csv source: missing a required argument: .files.. It accepts: files, timeframe",
    ):
        open_source("csv", path="x.csv")
