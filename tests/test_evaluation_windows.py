"""The evaluation's windows: loaded from QuantAgent's directory layout (each bad file or row
named, DST shifts and missing bars kept and noted) and cut from a source, over the window files
test_evaluation.py writes."""

from __future__ import annotations

from collections.abc import Callable
from datetime import timedelta
from pathlib import Path

import pytest

from shared.errors import InvalidInput
from shared.evaluation.scoring import score_windows
from shared.evaluation.sources import (
    BenchmarkDirectory,
    CutWindows,
    cut_windows,
    load_benchmark_directory,
    load_windows,
)
from shared.evaluation.windows import MIN_WINDOW_BARS, InvalidWindow, SpacingNote, Window
from shared.market.bars import Bar, Timeframe
from shared.market.sources import BundledSource
from tests.test_evaluation import (
    FALL_BACK,
    FALL_BACK_ROW,
    START,
    known_windows,
    write_benchmark_file,
    write_dst_shifted_file,
)

# --- windows from QuantAgent's directory layout -------------------------------------------


def benchmark_dir(root: Path) -> Path:
    goog = BundledSource().read("GOOG", "1d")
    eurusd = BundledSource().read("EURUSD", "1h")
    for n in (1, 2, 10):
        write_benchmark_file(root / "GOOG" / f"GOOG_1d_{n}.csv", goog[n * 100 : n * 100 + 100])
    write_benchmark_file(root / "EURUSD" / "EURUSD_1h_1.csv", eurusd[:100])
    return root


def test_benchmark_layout_loads_each_file_as_one_window(tmp_path: Path) -> None:
    goog = BundledSource().read("GOOG", "1d")

    windows = load_windows(BenchmarkDirectory(path=str(benchmark_dir(tmp_path))))

    assert [w.window_id for w in windows] == ["EURUSD_1h_1", "GOOG_1d_1", "GOOG_1d_2", "GOOG_1d_10"]
    assert windows[1].asset == "GOOG" and windows[1].timeframe is Timeframe.D1
    assert windows[0].timeframe is Timeframe.H1
    last = windows[3]
    assert isinstance(last, Window) and last.bars == goog[1000:1100]


def _missing_volume(path: Path, bars: list[Bar]) -> None:
    write_benchmark_file(path, bars, header="Datetime,Close,High,Low,Open")


def _text_close(path: Path, bars: list[Bar]) -> None:
    write_benchmark_file(path, bars)
    lines = path.read_text().splitlines()
    lines[5] = lines[5].replace(lines[5].split(",")[1], "abc", 1)
    path.write_text("\n".join(lines) + "\n")


def _too_short(path: Path, bars: list[Bar]) -> None:
    write_benchmark_file(path, bars[: MIN_WINDOW_BARS - 1])


def _high_below_close(path: Path, bars: list[Bar]) -> None:
    write_benchmark_file(
        path, [*bars[:7], bars[7].model_copy(update={"high": bars[7].low}), *bars[8:]]
    )


def _high_below_low(path: Path, bars: list[Bar]) -> None:
    bar = bars[7]
    swapped = bar.model_copy(update={"high": bar.low, "low": bar.high + 1})
    write_benchmark_file(path, [*bars[:7], swapped, *bars[8:]])


def _empty_cell(path: Path, bars: list[Bar]) -> None:
    write_benchmark_file(path, bars)
    lines = path.read_text().splitlines()
    cells = lines[12].split(",")  # line 0 is the header: data row 11
    lines[12] = ",".join([*cells[:2], "", *cells[3:]])
    path.write_text("\n".join(lines) + "\n")


def _out_of_order(path: Path, bars: list[Bar]) -> None:
    write_benchmark_file(path, [*bars[:20], bars[21], bars[20], *bars[22:]])


def _empty_file(path: Path, bars: list[Bar]) -> None:
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text("")


def _hourly_bars_named_daily(path: Path, bars: list[Bar]) -> None:
    hourly = [
        bar.model_copy(update={"time": START + i * timedelta(hours=1)})
        for i, bar in enumerate(bars)
    ]
    write_benchmark_file(path, hourly)


@pytest.mark.parametrize(
    ("name", "make", "expected"),
    [
        ("GOOG_1d_1.csv", _missing_volume, "missing column Volume"),
        ("GOOG-1d-1.csv", write_benchmark_file, "file name is not <ASSET>_<tf>_<n>.csv"),
        ("AAPL_1d_1.csv", write_benchmark_file, "says asset 'AAPL' but it is in folder 'GOOG'"),
        ("GOOG_2d_1.csv", write_benchmark_file, "unknown timeframe '2d'"),
    ],
)
def test_a_file_in_the_wrong_layout_fails_the_whole_input_naming_the_file(
    tmp_path: Path, name: str, make: object, expected: str
) -> None:
    bars = BundledSource().read("GOOG", "1d", lookback=100)
    benchmark_dir(tmp_path)
    bad = tmp_path / "GOOG" / name
    make(bad, bars)  # type: ignore[operator]

    with pytest.raises(InvalidInput) as caught:
        load_benchmark_directory(tmp_path)

    assert caught.value.field == str(bad)
    assert expected in str(caught.value)


def _at(row: int, bar: int, problem: str) -> Callable[[list[Bar]], str]:
    """The expected error: ``row`` as read from the file holds ``bars[bar]``."""
    return lambda bars: f"row {row} at {bars[bar].time.isoformat()}: {problem}"


@pytest.mark.parametrize(
    ("make", "expected"),
    [
        (_text_close, lambda _: "row 4: 'abc' is not a number in column close"),
        (_too_short, lambda _: f"has {MIN_WINDOW_BARS - 1} bars"),
        (_high_below_close, _at(7, 7, "high is below max(open, close)")),
        (_high_below_low, _at(7, 7, "high is below low")),
        (_empty_cell, _at(11, 11, "high is not finite")),
        (_out_of_order, _at(21, 20, "time is earlier than row 20")),
        (_empty_file, lambda _: "not a readable CSV file"),
        (_hourly_bars_named_daily, lambda _: "typically 1:00:00 apart, shorter than one 1d bar"),
    ],
)
def test_a_file_with_bad_rows_is_an_invalid_window_and_the_others_load(
    tmp_path: Path,
    make: Callable[[Path, list[Bar]], None],
    expected: Callable[[list[Bar]], str],
) -> None:
    bars = BundledSource().read("GOOG", "1d", lookback=100)
    benchmark_dir(tmp_path)
    bad = tmp_path / "GOOG" / "GOOG_1d_3.csv"
    make(bad, bars)

    windows = load_benchmark_directory(tmp_path)

    invalid = [w for w in windows if isinstance(w, InvalidWindow)]
    assert [w.window_id for w in invalid] == ["GOOG_1d_3"]
    assert (invalid[0].asset, invalid[0].timeframe) == ("GOOG", Timeframe.D1)
    assert str(bad) in invalid[0].error
    assert expected(bars) in invalid[0].error
    assert sum(isinstance(w, Window) for w in windows) == 4


def test_a_dst_shift_in_local_time_is_kept_and_noted(tmp_path: Path) -> None:
    prices = BundledSource().read("EURUSD", "1h")[:100]
    write_dst_shifted_file(tmp_path / "BTC" / "BTC_4h_29.csv", prices)

    (window,) = load_benchmark_directory(tmp_path)
    scored = score_windows([window], {}, seed=0, label="t").windows[0]

    assert isinstance(window, Window) and len(window.bars) == 100
    assert window.bars[FALL_BACK_ROW].time == FALL_BACK
    assert [bar.close for bar in window.bars] == [bar.close for bar in prices]
    assert scored.spacing == [
        SpacingNote(gap=timedelta(hours=3), count=1, first_row=FALL_BACK_ROW, first_time=FALL_BACK)
    ]


def test_a_missing_bar_is_kept_and_noted(tmp_path: Path) -> None:
    bars = BundledSource().read("EURUSD", "1h")[:101]
    four_hourly = [
        bar.model_copy(update={"time": START + i * timedelta(hours=4)})
        for i, bar in enumerate(bars)
    ]
    write_benchmark_file(tmp_path / "BTC" / "BTC_4h_1.csv", [*four_hourly[:40], *four_hourly[41:]])

    (window,) = load_benchmark_directory(tmp_path)
    scored = score_windows([window], {}, seed=0, label="t").windows[0]

    assert isinstance(window, Window) and len(window.bars) == 100
    assert scored.spacing == [
        SpacingNote(gap=timedelta(hours=8), count=1, first_row=40, first_time=four_hourly[41].time)
    ]


def test_evenly_spaced_windows_have_no_notes() -> None:
    windows, calls = known_windows()

    evaluation = score_windows(windows, calls, seed=0, label="t")

    assert all(score.spacing == [] for score in evaluation.windows)
    assert evaluation.summary.irregular == 0


def test_a_directory_whose_windows_are_all_invalid_fails_naming_the_first(tmp_path: Path) -> None:
    bars = BundledSource().read("GOOG", "1d", lookback=100)
    for n in (1, 2):
        _high_below_low(tmp_path / "GOOG" / f"GOOG_1d_{n}.csv", bars)

    with pytest.raises(InvalidInput) as caught:
        load_benchmark_directory(tmp_path)

    assert caught.value.field == "windows.path"
    assert "none of the 2 windows" in str(caught.value)
    assert "GOOG_1d_1.csv" in str(caught.value) and "high is below low" in str(caught.value)


def test_csv_files_directly_in_the_directory_are_refused_with_the_layout(tmp_path: Path) -> None:
    write_benchmark_file(
        tmp_path / "GOOG_1d_1.csv", BundledSource().read("GOOG", "1d", lookback=100)
    )

    with pytest.raises(InvalidInput, match="one folder down"):
        load_benchmark_directory(tmp_path)


def test_a_missing_directory_is_refused(tmp_path: Path) -> None:
    with pytest.raises(InvalidInput) as caught:
        load_benchmark_directory(tmp_path / "nope")

    assert caught.value.field == "windows.path"


def test_an_empty_directory_is_refused(tmp_path: Path) -> None:
    (tmp_path / "GOOG").mkdir()

    with pytest.raises(InvalidInput, match="holds no <asset>/<ASSET>_<tf>_<n>.csv files"):
        load_benchmark_directory(tmp_path)


# --- windows cut from a source -----------------------------------------------------------


def test_cut_windows_are_reproducible_with_a_seed_and_never_overlap() -> None:
    spec = CutWindows(symbols=["GOOG", "^GSPC"], timeframe="1d", count=6, seed=11)

    first, again = cut_windows(spec), cut_windows(spec)
    other = cut_windows(spec.model_copy(update={"seed": 12}))

    assert first == again
    assert [w.window_id for w in first] != [w.window_id for w in other]
    for asset in ("GOOG", "^GSPC"):
        mine = [w for w in first if w.asset == asset]
        assert len(mine) == 6 and all(len(w.bars) == 100 for w in mine)
        assert all(a.bars[-1].time < b.bars[0].time for a, b in zip(mine, mine[1:], strict=False))
    source = BundledSource().read("GOOG", "1d")
    start = source.index(first[0].bars[0])
    assert first[0].bars == source[start : start + 100]


def test_cutting_more_windows_than_fit_names_the_count_and_the_room() -> None:
    with pytest.raises(InvalidInput) as caught:
        cut_windows(CutWindows(symbols=["BTCUSD"], timeframe="1mo", count=3))

    assert caught.value.field == "windows.count"
    assert "room for 1 windows" in str(caught.value)
