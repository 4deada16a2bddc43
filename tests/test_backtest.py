"""The pure walk-forward: schedule, position rule, metrics against hand-computed series, files."""

from __future__ import annotations

import csv
import io
import math
import statistics
from datetime import UTC, date, datetime, timedelta

import pytest

from shared.backtest import (
    Book,
    Flow,
    Position,
    PricePoint,
    StepRecord,
    WalkForward,
    buy_and_hold,
    equity_curve,
    performance,
    position_for,
    walk_forward,
)
from shared.backtest.chart import render_equity_chart
from shared.backtest.report import equity_csv, render_report
from shared.charts.png import png_dimensions
from shared.errors import InvalidInput

LONG, FLAT, SHORT = Position.LONG, Position.FLAT, Position.SHORT


def _weekdays(first: date, count: int, closes: list[float] | None = None) -> list[PricePoint]:
    """``count`` weekday closes from ``first`` (100, 101, ... unless given)."""
    points, day = [], first
    while len(points) < count:
        if day.weekday() < 5:
            close = closes[len(points)] if closes else 100.0 + len(points)
            points.append(
                PricePoint(time=datetime(day.year, day.month, day.day, tzinfo=UTC), close=close)
            )
        day += timedelta(days=1)
    return points


# Mon 2010-01-04 .. Fri 2010-01-29: 20 weekdays.
JANUARY = _weekdays(date(2010, 1, 4), 20)


# --- schedule ---------------------------------------------------------------------------


def test_a_step_every_n_bars_from_the_first_date_never_on_the_last() -> None:
    plan = walk_forward(JANUARY, date(2010, 1, 4), date(2010, 1, 19), 5)

    assert len(plan.prices) == 12
    assert plan.steps == [0, 5, 10]
    assert [t.date() for t in plan.step_times] == [
        date(2010, 1, 4),
        date(2010, 1, 11),
        date(2010, 1, 18),
    ]
    assert [plan.holding(k) for k in range(3)] == [(0, 5), (5, 10), (10, 11)]


def test_every_bar_is_a_step_with_every_1_and_the_range_starts_at_the_first_trading_day() -> None:
    plan = walk_forward(JANUARY, date(2010, 1, 9), date(2010, 1, 15), 1)  # from a Saturday

    assert plan.prices[0].time.date() == date(2010, 1, 11)
    assert plan.steps == [0, 1, 2, 3]
    assert plan.holding(3) == (3, 4)


def test_an_end_on_a_weekend_just_after_the_data_is_accepted() -> None:
    plan = walk_forward(JANUARY, date(2010, 1, 25), date(2010, 1, 31), 2)

    assert plan.prices[-1].time.date() == date(2010, 1, 29)
    assert plan.steps == [0, 2]


@pytest.mark.parametrize(
    ("start", "end", "every", "field", "words"),
    [
        (date(2010, 1, 15), date(2010, 1, 8), 5, "start", "after end 2010-01-08"),
        (date(2009, 12, 1), date(2010, 1, 15), 5, "start", "covers 2010-01-04 to 2010-01-29"),
        (date(2010, 1, 4), date(2010, 3, 1), 5, "end", "after the data's last bar"),
        (date(2010, 1, 8), date(2010, 1, 10), 5, "end", "1 bar(s) between"),
        (date(2010, 1, 9), date(2010, 1, 10), 5, "end", "0 bar(s) between"),
        (date(2010, 1, 4), date(2010, 1, 15), 0, "every", "below 1"),
    ],
)
def test_bad_ranges_name_the_field_and_what_the_data_covers(
    start: date, end: date, every: int, field: str, words: str
) -> None:
    with pytest.raises(InvalidInput) as caught:
        walk_forward(JANUARY, start, end, every)

    assert caught.value.field == field
    assert words in str(caught.value)


# --- position rule ----------------------------------------------------------------------


@pytest.mark.parametrize(
    ("signal", "previous", "allow_short", "expected"),
    [
        ("BUY", FLAT, True, LONG),
        ("BUY", SHORT, True, LONG),
        ("SELL", LONG, True, SHORT),
        ("SELL", LONG, False, FLAT),
        ("HOLD", FLAT, True, FLAT),
        ("HOLD", LONG, True, LONG),
        ("HOLD", SHORT, True, SHORT),
        ("LONG", SHORT, True, LONG),
        ("SHORT", LONG, True, SHORT),
        ("SHORT", LONG, False, FLAT),
        ("buy", FLAT, True, LONG),
    ],
)
def test_signals_become_positions_by_the_documented_rule(
    signal: str, previous: Position, allow_short: bool, expected: Position
) -> None:
    assert position_for(signal, previous, allow_short=allow_short) is expected


def test_an_unknown_signal_is_refused_by_name() -> None:
    with pytest.raises(InvalidInput) as caught:
        position_for("MAYBE", FLAT, allow_short=True)
    assert caught.value.field == "signal" and "BUY, SELL, HOLD, LONG, SHORT" in str(caught.value)


# --- metrics against hand-computed series -----------------------------------------------

# Three steps at closes 0, 2, 4: long 100 → 99, short 99 → 98.01, flat 98.01 → 107.811.
CLOSES = [100.0, 110.0, 99.0, 89.1, 98.01, 107.811]
STEPS = [0, 2, 4]
POSITIONS = [LONG, SHORT, FLAT]
# Long: 1 → 1.1 → 0.99. Short from 0.99 at 99: 0.99 × (1 + 0.1) = 1.089, 0.99 × 1.01 = 0.9999.
# Flat: 0.9999 stays.
EQUITY = [1.0, 1.1, 0.99, 1.089, 0.9999, 0.9999]


def test_each_position_is_held_from_its_close_to_the_next_steps_close() -> None:
    assert equity_curve(CLOSES, STEPS, POSITIONS) == pytest.approx(EQUITY, abs=1e-12)


def test_metrics_match_the_hand_computed_series() -> None:
    result = performance(CLOSES, STEPS, POSITIONS)

    returns = [0.1, -0.1, 0.1, 0.9999 / 1.089 - 1, 0.0]
    assert result.days == 5
    assert result.cumulative_return == pytest.approx(-0.0001, abs=1e-12)
    assert result.final_equity == pytest.approx(0.9999, abs=1e-12)
    assert result.annualised_return == pytest.approx(0.9999 ** (252 / 5) - 1, abs=1e-12)
    expected_sharpe = statistics.fmean(returns) / statistics.stdev(returns) * math.sqrt(252)
    assert result.sharpe == pytest.approx(expected_sharpe, rel=1e-9)
    assert result.max_drawdown == pytest.approx(0.1, abs=1e-12)  # 1.1 down to 0.99
    # The long lost (100 → 99), the short won (99 → 98.01); the flat step does not count.
    assert (result.hits, result.steps_with_position, result.hit_rate) == (1, 2, 0.5)
    assert result.trade_count == 3  # flat → long → short → flat


def test_buy_and_hold_is_long_throughout_over_the_same_holdings() -> None:
    result = buy_and_hold(CLOSES, STEPS)

    assert result.cumulative_return == pytest.approx(0.07811, abs=1e-12)
    assert result.max_drawdown == pytest.approx(0.19, abs=1e-12)  # 110 down to 89.1
    assert result.trade_count == 1
    assert (result.hits, result.steps_with_position) == (1, 3)  # only 98.01 → 107.811 rose


def test_always_flat_has_no_sharpe_no_hit_rate_and_no_trades() -> None:
    result = performance(CLOSES, STEPS, [FLAT, FLAT, FLAT])

    assert result.cumulative_return == 0 and result.max_drawdown == 0
    assert result.sharpe is None and result.hit_rate is None and result.trade_count == 0


def test_a_short_that_loses_everything_ends_the_account_at_zero() -> None:
    result = performance([100.0, 250.0, 300.0], [0], [SHORT])

    assert result.final_equity == 0 and result.annualised_return == -1
    assert result.max_drawdown == 1


def test_positions_must_match_the_steps() -> None:
    with pytest.raises(ValueError, match="2 positions for 3 steps"):
        equity_curve(CLOSES, STEPS, [LONG, SHORT])
    with pytest.raises(ValueError, match="increase strictly"):
        equity_curve(CLOSES, [0, 0], [LONG, SHORT])


# --- the book, its files ----------------------------------------------------------------


def _book(decided: int) -> Book:
    prices = _weekdays(date(2010, 1, 4), len(CLOSES), CLOSES)
    schedule = WalkForward(prices=prices, steps=STEPS, every=2)
    records = [
        StepRecord(
            step=k,
            as_of=prices[STEPS[k]].time,
            signal={LONG: "BUY", SHORT: "SELL", FLAT: "HOLD"}[position],
            position=position,
            workflow_id=f"bt-{k + 1:03d}-pipeline",
            recalled_roles=k,
        )
        for k, position in enumerate(POSITIONS[:decided])
    ]
    return Book(
        symbol="TEST", flow=Flow.PIPELINE, allow_short=True, schedule=schedule, records=records
    )


def test_equity_so_far_stops_at_the_last_decided_steps_close() -> None:
    book = _book(2)

    assert book.equity() == pytest.approx(EQUITY[:3], abs=1e-12)
    assert book.buy_and_hold_equity() == pytest.approx([1.0, 1.1, 0.99], abs=1e-12)
    with pytest.raises(ValueError, match="2 of 3 steps decided"):
        book.scores()


def test_the_csv_has_a_row_per_close_with_the_position_held_after_it() -> None:
    rows = list(csv.DictReader(io.StringIO(equity_csv(_book(3)))))

    assert [r["position"] for r in rows] == ["long", "long", "short", "short", "flat", "flat"]
    assert [float(r["strategy_equity"]) for r in rows] == pytest.approx(EQUITY, abs=1e-8)
    assert float(rows[-1]["buy_and_hold_equity"]) == pytest.approx(1.07811, abs=1e-8)
    assert rows[0]["date"] == "2010-01-04"


def test_the_report_shows_the_metrics_against_buy_and_hold_and_every_step() -> None:
    book = _book(3)
    strategy, benchmark = book.scores()

    markdown = render_report(book, strategy, benchmark)

    assert "| cumulative return | -0.01% | +7.81% |" in markdown
    assert "| max drawdown | 10.00% | 19.00% |" in markdown
    assert "| hit rate | 50.00% | 33.33% |" in markdown
    assert "| trades | 3 | 1 |" in markdown
    assert "| 2 | 2010-01-06 | SELL |  | short | -1.00% | 1 |" in markdown


def test_the_equity_chart_is_a_png_of_the_house_size() -> None:
    png = render_equity_chart(_book(3))

    assert png_dimensions(png) == (1280, 720)
    assert render_equity_chart(_book(3)) == png  # no timestamp: the same book, the same bytes
