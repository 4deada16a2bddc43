"""The evaluation's pure parts: the protocol split, the scorer, the Wilson interval, McNemar's
exact test, the baselines and the four renderings of the table; and the window files of
QuantAgent's layout that test_evaluation_windows.py loads (the benches write them too)."""

from __future__ import annotations

import csv
import io
import json
import math
from collections.abc import Callable, Sequence
from datetime import UTC, datetime, timedelta
from fractions import Fraction
from pathlib import Path
from zoneinfo import ZoneInfo

import pytest
from hypothesis import given
from hypothesis import strategies as st

from activities.evaluation import paginate
from shared.agents.quantagent import Direction
from shared.evaluation.baselines import (
    BASELINES,
    SLOPE_BARS,
    least_squares_slope,
    random_call,
    slope_call,
)
from shared.evaluation.paired import PairedTest, mcnemar_exact_p
from shared.evaluation.plot import render_accuracy_plot
from shared.evaluation.report import CSV_COLUMNS, render_csv, render_json, render_markdown
from shared.evaluation.scoring import (
    AgentCall,
    Evaluation,
    score_windows,
    wilson_interval,
)
from shared.evaluation.sources import BENCHMARK_HEADER
from shared.evaluation.windows import HELD_OUT, InvalidWindow, VisibleWindow, Window
from shared.market.bars import Bar, Timeframe

START = datetime(2020, 1, 1, tzinfo=UTC)


def bars_from_closes(closes: Sequence[float], step: timedelta = timedelta(days=1)) -> list[Bar]:
    """Bars whose open is the previous close, so the closes alone decide the window."""
    bars = []
    for i, close in enumerate(closes):
        open_ = closes[i - 1] if i else close
        bars.append(
            Bar(
                time=START + i * step,
                open=open_,
                high=max(open_, close) + 0.5,
                low=min(open_, close) - 0.5,
                close=close,
                volume=1000 + i,
            )
        )
    return bars


def window(window_id: str, closes: Sequence[float], asset: str = "TEST") -> Window:
    return Window(
        window_id=window_id, asset=asset, timeframe=Timeframe.D1, bars=bars_from_closes(closes)
    )


def flat_then(last_seen: float, future: float, n: int = 100) -> list[float]:
    """``n`` closes: flat at 100, then ``last_seen`` as the last visible and ``future`` last."""
    return [100.0] * (n - HELD_OUT - 1) + [last_seen] + [100.0] * (HELD_OUT - 1) + [future]


def utc_stamp(time: datetime) -> str:
    """A time as the benchmark writes it: no offset."""
    return time.strftime("%Y-%m-%d %H:%M:%S")


def write_benchmark_file(
    path: Path,
    bars: Sequence[Bar],
    header: str = BENCHMARK_HEADER,
    stamp: Callable[[datetime], str] = utc_stamp,
) -> Path:
    """A window file in QuantAgent's layout and column order."""
    path.parent.mkdir(parents=True, exist_ok=True)
    lines = [header]
    for bar in bars:
        lines.append(f"{stamp(bar.time)},{bar.close},{bar.high},{bar.low},{bar.open},{bar.volume}")
    path.write_text("\n".join(lines) + "\n")
    return path


NEW_YORK = ZoneInfo("America/New_York")
FALL_BACK_ROW = 79
FALL_BACK = datetime(2024, 11, 3, 3, tzinfo=UTC)
"""Where the DST-shifted file's short step is, as read: the row and time of the issue's error."""


def new_york_stamp(time: datetime) -> str:
    """New York wall-clock time, written without an offset."""
    return utc_stamp(time.astimezone(NEW_YORK))


def write_dst_shifted_file(path: Path, prices: Sequence[Bar]) -> Path:
    """QuantAgent's 4h BTC layout across the 2024-11-03 fall-back in New York.

    The bars lie on the UTC 4h grid (00:00, 04:00, ... UTC) but are written in New
    York wall-clock time without an offset, which loaders read as UTC: 00:00 EDT
    (04:00 UTC) is followed by 03:00 EST (08:00 UTC), so row 79 reads as
    2024-11-03T03:00 UTC, only 3 hours after row 78, the step the published
    ``BTC_4h_29.csv`` stopped the evaluation at. ``prices`` give the values.
    """
    first = datetime(2024, 11, 3, 4, tzinfo=UTC) - (FALL_BACK_ROW - 1) * timedelta(hours=4)
    bars = [
        bar.model_copy(update={"time": first + i * timedelta(hours=4)})
        for i, bar in enumerate(prices)
    ]
    return write_benchmark_file(path, bars, stamp=new_york_stamp)


# --- the protocol split ------------------------------------------------------------------


@pytest.mark.parametrize(
    ("last_seen", "future", "truth"),
    [(100.0, 101.0, Direction.LONG), (100.0, 99.0, Direction.SHORT), (100.0, 100.0, "SHORT")],
)
def test_truth_is_long_only_when_the_close_three_bars_later_is_above(
    last_seen: float, future: float, truth: str
) -> None:
    w = window("w", flat_then(last_seen, future))

    assert w.truth == truth
    assert (w.last_seen_close, w.future_close) == (last_seen, future)


def test_the_agent_sees_all_but_the_last_three_bars() -> None:
    w = window("w", [100.0 + i for i in range(100)])

    visible = VisibleWindow.of(w)

    assert visible.bars == w.bars[:-3]
    assert visible.bars[-1].close == w.last_seen_close
    assert len(visible.bars) == 97


# --- the Wilson interval -----------------------------------------------------------------


def test_wilson_interval_matches_a_hand_computed_value() -> None:
    # 7 of 10, z = 1.95996 (z² = 3.84146): centre (0.7 + 0.192073) / 1.384146 = 0.644494,
    # half-width 1.95996 * sqrt(0.021 + 0.00960365) / 1.384146 = 0.247715.
    low, high = wilson_interval(7, 10)  # type: ignore[misc]

    assert low == pytest.approx(0.39678, abs=1e-5)
    assert high == pytest.approx(0.89221, abs=1e-5)


def test_wilson_interval_stays_in_range_at_the_edges_and_is_none_without_trials() -> None:
    zero = wilson_interval(0, 20)
    full = wilson_interval(20, 20)

    assert zero is not None and zero[0] == 0.0 and 0 < zero[1] < 0.2
    assert full is not None and full[1] == 1.0 and 0.8 < full[0] < 1
    assert wilson_interval(0, 0) is None


# --- McNemar's exact test ----------------------------------------------------------------


@pytest.mark.parametrize(
    ("wins", "losses", "p"),
    [
        (0, 6, 0.03125),  # 2 * 1/64
        (6, 0, 0.03125),
        (3, 3, 1.0),  # 2 * 42/64, capped
        (1, 9, 0.021484375),  # 2 * (1 + 10)/1024
        (0, 1, 1.0),
        (0, 0, 1.0),  # no discordant window: nothing tells the two apart
        (2, 8, 0.109375),  # 2 * (1 + 10 + 45)/1024
    ],
)
def test_mcnemar_exact_p_matches_hand_computed_binomial_tails(
    wins: int, losses: int, p: float
) -> None:
    assert mcnemar_exact_p(wins, losses) == p


def test_mcnemar_exact_p_refuses_a_negative_count_naming_it() -> None:
    with pytest.raises(ValueError, match="losses is a count of windows, 0 or more; got -1"):
        mcnemar_exact_p(3, -1)


_counts = st.integers(min_value=0, max_value=500)


@given(_counts, _counts)
def test_mcnemar_exact_p_is_symmetric_and_in_the_unit_interval(wins: int, losses: int) -> None:
    p = mcnemar_exact_p(wins, losses)

    assert p == mcnemar_exact_p(losses, wins)
    assert 0 < p <= 1


@given(_counts, _counts)
def test_mcnemar_exact_p_is_the_chance_of_a_split_at_least_as_lopsided(
    wins: int, losses: int
) -> None:
    n = wins + losses
    as_lopsided = [k for k in range(n + 1) if min(k, n - k) <= min(wins, losses)]
    chance = Fraction(sum(math.comb(n, k) for k in as_lopsided), 2**n)

    # Twice the smaller tail is the same sum, except at an even split, where it passes 1.
    assert mcnemar_exact_p(wins, losses) == float(min(chance, Fraction(1)))


@given(st.integers(min_value=2, max_value=400), st.data())
def test_mcnemar_exact_p_shrinks_as_the_same_windows_split_more_lopsidedly(
    n: int, data: st.DataObject
) -> None:
    wins = data.draw(st.integers(min_value=0, max_value=n // 2 - 1))

    assert mcnemar_exact_p(wins, n - wins) <= mcnemar_exact_p(wins + 1, n - wins - 1)


def test_a_paired_test_counts_only_the_windows_the_two_called_differently() -> None:
    pairs = [(True, False)] * 6 + [(True, True)] * 5 + [(False, False)] * 4 + [(False, True)]

    test = PairedTest.of(pairs)

    assert (test.wins, test.losses) == (6, 1)
    assert test.p_value == 2 * (1 + 7) / 128


# --- the scorer --------------------------------------------------------------------------


def known_windows() -> tuple[list[Window], dict[str, AgentCall]]:
    """Asset A: up, up, down, called LONG, SHORT, SHORT (2 of 3 right). Asset B: a failed
    window, and an up window called LONG (1 of 1)."""
    windows = [
        window("A1", flat_then(100, 105), "A"),
        window("A2", flat_then(100, 102), "A"),
        window("A3", flat_then(100, 97), "A"),
        window("B1", flat_then(100, 90), "B"),
        window("B2", flat_then(100, 110), "B"),
    ]
    calls = {
        "A1": AgentCall(window_id="A1", decision=Direction.LONG, risk_reward=1.2),
        "A2": AgentCall(window_id="A2", decision=Direction.SHORT, risk_reward=1.4),
        "A3": AgentCall(window_id="A3", decision=Direction.SHORT, risk_reward=1.6),
        "B1": AgentCall(window_id="B1", error="chat: model not found"),
        "B2": AgentCall(window_id="B2", decision=Direction.LONG, risk_reward=1.8),
    }
    return windows, calls


def test_scorer_counts_right_calls_per_asset_and_overall() -> None:
    windows, calls = known_windows()

    summary = score_windows(windows, calls, seed=0, label="t").summary

    a, b = summary.rows
    assert (a.asset, a.n, a.correct, a.failed) == ("A", 3, 2, 0)
    assert a.accuracy == pytest.approx(2 / 3)
    assert (b.asset, b.n, b.correct, b.failed, b.accuracy) == ("B", 1, 1, 1, 1.0)
    overall = summary.overall
    assert (overall.n, overall.correct, overall.failed) == (4, 3, 1)
    assert (overall.ci_low, overall.ci_high) == wilson_interval(3, 4)
    assert overall.mean_risk_reward == pytest.approx((1.2 + 1.4 + 1.6 + 1.8) / 4)
    assert summary.windows == 5 and summary.failed == 1


def test_failed_windows_are_left_out_of_the_baselines_too() -> None:
    windows, calls = known_windows()

    summary = score_windows(windows, calls, seed=0, label="t").summary

    # B's scored window rose, its failed one fell: always-long is judged on the rise only.
    assert summary.rows[1].baselines["always_long"] == 1.0
    assert summary.rows[0].baselines["always_long"] == pytest.approx(2 / 3)
    assert summary.overall.baselines["always_long"] == pytest.approx(3 / 4)


def split(test: PairedTest) -> tuple[int, int, float]:
    return test.wins, test.losses, test.p_value


def test_paired_tests_count_wins_and_losses_on_the_scored_windows_only() -> None:
    windows, calls = known_windows()
    # Asset C: six falls the agent called SHORT, one fall whose analysis failed, one broken file.
    for i in range(1, 8):
        windows.append(window(f"C{i}", flat_then(100, 95), "C"))
        calls[f"C{i}"] = AgentCall(window_id=f"C{i}", decision=Direction.SHORT, risk_reward=1.0)
    calls["C7"] = AgentCall(window_id="C7", error="chat: timed out")
    broken = InvalidWindow(window_id="C8", asset="C", timeframe=Timeframe.D1, error="bad rows")

    summary = score_windows([*windows, broken], calls, seed=0, label="t").summary

    a, b, c = summary.rows
    # Flat visible closes: the slope baseline says SHORT everywhere. A: the agent alone is
    # right on A1 and wrong with always-long on A2; B: B1 failed, so only B2 (agent right).
    assert split(a.paired["always_long"]) == (1, 1, 1.0)
    assert split(a.paired["linreg_slope"]) == (1, 0, 1.0)
    assert split(b.paired["always_long"]) == (0, 0, 1.0)
    assert split(b.paired["linreg_slope"]) == (1, 0, 1.0)
    # C: always-long is wrong on the six scored falls; C7 and C8 count for neither side.
    assert (c.n, c.failed) == (6, 2)
    assert split(c.paired["always_long"]) == (6, 0, 0.03125)
    assert split(c.paired["linreg_slope"]) == (0, 0, 1.0)
    assert split(summary.overall.paired["always_long"]) == (7, 1, 0.0703125)
    assert split(summary.overall.paired["linreg_slope"]) == (2, 0, 0.5)
    random = summary.overall.paired["random"]
    assert random.wins + random.losses <= summary.overall.n


def test_a_row_without_scored_windows_has_no_paired_tests() -> None:
    windows, calls = known_windows()
    calls["B2"] = AgentCall(window_id="B2", error="chat: timed out")

    b = score_windows(windows, calls, seed=0, label="t").summary.rows[1]

    assert (b.n, b.paired) == (0, {})


def test_a_window_without_a_call_counts_as_failed() -> None:
    windows, calls = known_windows()
    del calls["A1"]

    evaluation = score_windows(windows, calls, seed=0, label="t")

    assert evaluation.summary.rows[0].failed == 1
    assert evaluation.windows[0].error == "no result was recorded"


# --- the baselines -----------------------------------------------------------------------


def test_random_baseline_is_reproducible_with_a_seed_and_changes_with_it() -> None:
    ids = [f"w{i}" for i in range(200)]
    bars = bars_from_closes([100.0] * 60)

    first = [random_call(bars, i, 7) for i in ids]
    again = [random_call(bars, i, 7) for i in reversed(ids)][::-1]
    other = [random_call(bars, i, 8) for i in ids]

    assert first == again
    assert first != other
    assert 70 < first.count(Direction.LONG) < 130


def test_slope_baseline_fits_the_last_40_visible_closes() -> None:
    # Falling for 60 bars, then rising for the last 40: only the last 40 count.
    closes = [200.0 - i for i in range(60)] + [140.0 + i for i in range(SLOPE_BARS)]
    bars = bars_from_closes(closes)

    assert slope_call(bars, "w", 0) == Direction.LONG
    assert slope_call(bars[:60], "w", 0) == Direction.SHORT
    assert least_squares_slope([1.0, 3.0, 5.0, 7.0]) == pytest.approx(2.0)
    assert slope_call(bars_from_closes([100.0] * 50), "w", 0) == Direction.SHORT


def test_baselines_never_read_the_held_out_bars() -> None:
    rising = [100.0 + i for i in range(97)]
    crash, boom = window("w", [*rising, 1.0, 1.0, 1.0]), window("w", [*rising, 900, 900, 900])

    calls = {"w": AgentCall(window_id="w", decision=Direction.LONG, risk_reward=1.5)}
    crashed = score_windows([crash], calls, seed=3, label="t").windows[0]
    boomed = score_windows([boom], calls, seed=3, label="t").windows[0]

    assert crashed.truth != boomed.truth
    assert crashed.baselines == boomed.baselines
    assert set(crashed.baselines) == set(BASELINES)


# --- the renderings ----------------------------------------------------------------------


def test_the_table_renders_as_markdown_csv_json_and_png() -> None:
    windows, calls = known_windows()
    evaluation = score_windows(windows, calls, seed=5, label="QuantAgent, offline")

    markdown = render_markdown(evaluation)
    table = list(csv.DictReader(io.StringIO(render_csv(evaluation.summary))))
    restored = Evaluation.model_validate(json.loads(render_json(evaluation)))
    png = render_accuracy_plot(evaluation.summary)

    assert "| **overall** | 4 | 1 | 75.0% |" in markdown
    assert "- `B1`: chat: model not found" in markdown
    assert "## Paired tests against the baselines" in markdown
    random = evaluation.summary.overall.paired["random"]
    assert (
        f"| **overall** | {random.wins}–{random.losses}, p={random.p_value:.3g} "
        "| 2–0, p=0.5 | 1–1, p=1 |"
    ) in markdown
    assert "two-sided" in markdown and "no correction for the 3 baselines" in markdown
    assert [row["asset"] for row in table] == ["A", "B", "overall"]
    assert tuple(table[0]) == CSV_COLUMNS
    assert float(table[0]["accuracy"]) == pytest.approx(2 / 3, abs=1e-6)
    assert table[1]["failed"] == "1"
    assert [table[2][f"linreg_slope_{part}"] for part in ("wins", "losses", "p")] == [
        "2",
        "0",
        "0.5",
    ]
    assert restored == evaluation
    assert png[:8] == b"\x89PNG\r\n\x1a\n"
    assert render_accuracy_plot(evaluation.summary) == png


def test_a_table_scored_before_the_paired_tests_renders_them_as_missing() -> None:
    windows, calls = known_windows()
    stored = score_windows(windows, calls, seed=5, label="t").model_dump(mode="json")
    for row in [*stored["summary"]["rows"], stored["summary"]["overall"]]:
        del row["paired"]

    old = Evaluation.model_validate(stored)
    markdown = render_markdown(old)
    table = list(csv.DictReader(io.StringIO(render_csv(old.summary))))

    assert old.summary.overall.paired == {}
    assert "| **overall** | – | – | – |" in markdown
    assert table[2]["always_long_p"] == ""


def test_a_tiny_p_value_keeps_its_digits_in_csv_and_is_bounded_in_markdown() -> None:
    falls = [window(f"D{i}", flat_then(100, 95), "D") for i in range(30)]
    calls = {w.window_id: AgentCall(window_id=w.window_id, decision=Direction.SHORT) for w in falls}
    evaluation = score_windows(falls, calls, seed=0, label="t")

    table = list(csv.DictReader(io.StringIO(render_csv(evaluation.summary))))
    markdown = render_markdown(evaluation)

    assert table[0]["always_long_p"] == f"{2**-29:.6g}"
    # vs linreg slope (SHORT on flat closes, like the agent), then vs always long
    assert "| 0–0, p=1 | 30–0, p<0.001 |" in markdown


def test_invalid_and_irregular_windows_show_in_every_rendering() -> None:
    windows, calls = known_windows()
    broken = InvalidWindow(
        window_id="A4",
        asset="A",
        timeframe=Timeframe.D1,
        error="A_1d_4.csv: row 7: high is below low",
    )
    bars = bars_from_closes(flat_then(100, 104))
    later = [bar.model_copy(update={"time": bar.time + timedelta(days=1)}) for bar in bars[30:]]
    gappy = Window(window_id="A5", asset="A", timeframe=Timeframe.D1, bars=[*bars[:30], *later])
    calls["A5"] = AgentCall(window_id="A5", decision=Direction.LONG, risk_reward=1.5)
    evaluation = score_windows([*windows, broken, gappy], calls, seed=5, label="t")

    markdown = render_markdown(evaluation)
    restored = Evaluation.model_validate(json.loads(render_json(evaluation)))
    table = list(csv.DictReader(io.StringIO(render_csv(evaluation.summary))))

    a = evaluation.summary.rows[0]
    assert (a.n, a.failed, a.correct) == (4, 1, 3)
    assert (evaluation.summary.failed, evaluation.summary.irregular) == (2, 1)
    scored = {score.window_id: score for score in evaluation.windows}
    assert scored["A4"].error == broken.error and scored["A4"].truth is None
    assert scored["A5"].spacing[0].gap == timedelta(days=2)
    assert "- `A4`: A_1d_4.csv: row 7: high is below low" in markdown
    assert "## Irregular spacing" in markdown
    assert "- `A5`: 2 days, 0:00:00 between bars once at row 30" in markdown
    assert restored == evaluation
    assert table[0]["failed"] == "1"


def test_pages_hold_whole_windows_within_the_bar_budget() -> None:
    windows = [window(f"w{i}", [100.0 + i] * 100) for i in range(7)]

    pages = list(paginate(windows, page_bars=250))

    assert [len(page) for page in pages] == [2, 2, 2, 1]
    assert [w for page in pages for w in page] == windows
