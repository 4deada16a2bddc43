"""QuantAgent's charts as text: what a model without vision reads instead of the PNGs, and which
model reads it.

Real bundled windows throughout (GOOG daily, EURUSD hourly, BTCUSD monthly), the
pattern scan and the trendline fit run on them as the workflow's activities do.
"""

from __future__ import annotations

import csv
from collections.abc import Sequence
from datetime import UTC, datetime

import pytest

from shared.agents import quantagent as qa
from shared.agents.chart_text import (
    bar_table,
    pattern_scan_text,
    price_decimals,
    trendlines_text,
)
from shared.llm.contracts import ChatMessage, LlmChoice
from shared.llm.providers import LlmRole, provider_spec
from shared.market.bars import Bar
from shared.market.sources import BundledSource
from shared.storage.objects import ObjectRef
from shared.ta.patterns import PatternMatch, PatternName, detect_patterns
from shared.ta.trend_summary import TrendLines, summarize_trendlines
from workflows.quantagent import ChartReader

AS_OF = datetime(2012, 6, 1, tzinfo=UTC)
EURUSD_AS_OF = datetime(2018, 1, 15, tzinfo=UTC)
SCANNED_AS_OF = datetime(2013, 3, 1, tzinfo=UTC)
"""A GOOG window in which the scan sees two patterns (a rising wedge, an ascending triangle)."""
CHART = ObjectRef(bucket="charts", key="quantagent/wf/run/pattern_chart.png")
MAX_PROMPT_CHARS = 9_000
"""~2,500 tokens at ~3.6 characters a token (digits and commas tokenise worse than prose):
what a 4k-context local model can read and still answer."""
SERIES = (("GOOG", "1d"), ("EURUSD", "1h"), ("BTCUSD", "1mo"))
WINDOWS_PER_SERIES = 40


def _goog(lookback: int) -> list[Bar]:
    return BundledSource().read("GOOG", "1d", as_of=AS_OF, lookback=lookback)


def _scan(bars: Sequence[Bar]) -> list[PatternMatch]:
    return detect_patterns(
        [b.open for b in bars],
        [b.high for b in bars],
        [b.low for b in bars],
        [b.close for b in bars],
    )


def _lines(bars: Sequence[Bar]) -> TrendLines:
    return summarize_trendlines(
        [b.high for b in bars], [b.low for b in bars], [b.close for b in bars]
    )


def _chars(messages: list[ChatMessage]) -> int:
    return sum(len(message.content) for message in messages)


def test_bar_table_is_one_csv_row_per_bar_numbered_from_zero_as_the_chart_x_axis() -> None:
    bars = _goog(qa.PATTERN_WINDOW)

    rows = list(csv.DictReader(bar_table(bars).splitlines()))

    assert len(rows) == qa.PATTERN_WINDOW
    assert [int(row["bar"]) for row in rows] == list(range(qa.PATTERN_WINDOW))
    assert [row["time_utc"] for row in rows] == [f"{bar.time:%Y-%m-%d}" for bar in bars]


@pytest.mark.parametrize(
    ("symbol", "timeframe", "as_of", "decimals"),
    [("GOOG", "1d", AS_OF, 1), ("EURUSD", "1h", EURUSD_AS_OF, 5)],
)
def test_prices_keep_a_twentieth_of_a_typical_bar_range_and_no_more(
    symbol: str, timeframe: str, as_of: datetime, decimals: int
) -> None:
    bars = BundledSource().read(symbol, timeframe, as_of=as_of, lookback=qa.PATTERN_WINDOW)

    rows = list(csv.DictReader(bar_table(bars).splitlines()))

    assert price_decimals(bars) == decimals
    for row, bar in zip(rows, bars, strict=True):
        for field in ("open", "high", "low", "close"):
            assert abs(float(row[field]) - getattr(bar, field)) <= 0.5 * 10**-decimals
            assert len(row[field].partition(".")[2]) == decimals


def test_intraday_bars_keep_their_time_of_day() -> None:
    bars = BundledSource().read("EURUSD", "1h", as_of=EURUSD_AS_OF, lookback=3)

    rows = list(csv.DictReader(bar_table(bars).splitlines()))

    assert [row["time_utc"] for row in rows] == [f"{bar.time:%Y-%m-%d %H:%M}" for bar in bars]


def test_volumes_are_three_significant_digits_with_a_unit() -> None:
    bar = _goog(1)[0]
    volumes = {2_318_900.0: "2.32M", 841_200.0: "841K", 950.0: "950", 0.0: "0", 3.2e9: "3.2B"}

    for volume, shown in volumes.items():
        [row] = csv.DictReader(bar_table([bar.model_copy(update={"volume": volume})]).splitlines())
        assert row["volume"] == shown


def test_the_pattern_scan_lists_each_match_with_its_bars_and_evidence() -> None:
    bars = BundledSource().read("GOOG", "1d", as_of=SCANNED_AS_OF, lookback=qa.PATTERN_WINDOW)
    matches = _scan(bars)

    text = pattern_scan_text(matches).splitlines()

    assert [m.name for m in matches] == [PatternName.RISING_WEDGE, PatternName.ASCENDING_TRIANGLE]
    assert text[1:] == [
        f"- {m.name.value}: {m.bias.value}, confidence {m.confidence:.2f}, "
        f"bars {m.start_index}-{m.end_index}. {m.description}"
        for m in matches
    ]


def test_a_scan_that_found_nothing_says_so() -> None:
    assert pattern_scan_text([]) == (
        "The geometric scan found none of the sixteen patterns in these bars."
    )


def test_trendlines_give_slope_ends_touches_and_the_last_close_against_each_line() -> None:
    bars = _goog(qa.TREND_WINDOW)
    lines = _lines(bars)

    text = trendlines_text(lines, bars).splitlines()

    assert len(text) == 5
    assert f"last close {lines.last_close:.1f}" in text[0]
    for row, (label, line) in zip(
        text[1:],
        [
            ("close-based support", lines.close_support),
            ("close-based resistance", lines.close_resistance),
            ("support on the lows", lines.high_low_support),
            ("resistance on the highs", lines.high_low_resistance),
        ],
        strict=True,
    ):
        assert row.startswith(f"- {label}: slope {line.slope:+.3g} per bar, ")
        assert f"{line.intercept:.1f} at bar 0, {line.last_value:.1f} at bar 49" in row
        assert f"{line.touches} touch" in row
        gap = round(lines.last_close - line.last_value, 1)
        assert (f"last close {gap:+.1f} from it" if gap else "last close on it") in row


def test_lines_recorded_before_touches_were_counted_say_so() -> None:
    bars = _goog(qa.TREND_WINDOW)
    old = TrendLines.model_validate(
        {
            **_lines(bars).model_dump(),
            "close_support": {"slope": 0.5, "intercept": 550.0, "last_value": 574.5},
        }
    )

    assert "574.5 at bar 49, touches not counted;" in trendlines_text(old, bars)


def test_text_prompts_ask_the_vision_prompts_questions_without_images() -> None:
    pattern_bars, trend_bars = _goog(qa.PATTERN_WINDOW), _goog(qa.TREND_WINDOW)
    pairs = [
        (
            qa.pattern_messages("GOOG", "1d", CHART),
            qa.pattern_text_messages("GOOG", "1d", pattern_bars, _scan(pattern_bars)),
            qa.PATTERN_QUESTION,
        ),
        (
            qa.trend_messages("GOOG", "1d", CHART),
            qa.trend_text_messages("GOOG", "1d", trend_bars, _lines(trend_bars)),
            qa.TREND_QUESTION,
        ),
    ]

    for vision, text, question in pairs:
        assert vision[0] == text[0]  # the same analyst
        assert question in vision[1].content and question in text[1].content
        assert vision[1].images == [CHART]
        assert all(message.images == [] for message in text)
        assert "as a table rather than an image" in text[1].content
    pattern_text, trend_text = pairs[0][1][1].content, pairs[1][1][1].content
    assert bar_table(pattern_bars) in pattern_text
    assert pattern_scan_text(_scan(pattern_bars)) in pattern_text
    assert trendlines_text(_lines(trend_bars), trend_bars) in trend_text
    assert bar_table(trend_bars) in trend_text


@pytest.mark.parametrize(("symbol", "timeframe"), SERIES)
def test_both_text_prompts_fit_a_small_models_context_on_every_window(
    symbol: str, timeframe: str
) -> None:
    series = BundledSource().read(symbol, timeframe)
    ends = range(qa.TREND_WINDOW, len(series) + 1, max(1, len(series) // WINDOWS_PER_SERIES))
    largest = {"pattern": 0, "trend": 0}

    for end in ends:
        pattern_bars, trend_bars = (
            series[end - qa.PATTERN_WINDOW : end],
            series[end - qa.TREND_WINDOW : end],
        )
        pattern = qa.pattern_text_messages(symbol, timeframe, pattern_bars, _scan(pattern_bars))
        trend = qa.trend_text_messages(symbol, timeframe, trend_bars, _lines(trend_bars))
        largest = {
            "pattern": max(largest["pattern"], _chars(pattern)),
            "trend": max(largest["trend"], _chars(trend)),
        }

    assert largest["pattern"] <= MAX_PROMPT_CHARS, largest
    assert largest["trend"] <= MAX_PROMPT_CHARS, largest


@pytest.mark.parametrize(
    ("llm", "expected"),
    [
        (LlmChoice(provider="openai"), ("image", LlmRole.VISION)),
        (LlmChoice(provider="deepseek"), ("text", LlmRole.QUICK)),
        (LlmChoice(provider="deepseek", vision_model="deepseek-chat"), ("text", LlmRole.VISION)),
    ],
)
def test_text_is_read_by_the_quick_model_unless_the_run_names_a_chart_model(
    llm: LlmChoice, expected: tuple[str, LlmRole]
) -> None:
    reader = ChartReader.of(provider_spec(llm.provider), llm)

    assert (reader.input, reader.role) == expected
