"""Anonymised windows and counterfactual probes, without a server.

The anonymiser is checked where a model would find the asset or the period: every
prompt QuantAgent builds from the window (both chart agents as image and as text),
every indicator tool answer, and the text layer of both charts as matplotlib
draws them (every text artist: title, tick labels, legend).
"""

from __future__ import annotations

import re
from collections.abc import Iterator
from datetime import datetime

import pytest
from matplotlib.figure import Figure
from matplotlib.text import Text

from activities.market import LoadedBars, PatternScanRequest, scan_patterns
from shared.agents import quantagent as qa
from shared.agents import quantagent_agents as agents
from shared.charts.candles import candle_figure, chart_window, drawing
from shared.charts.render import trend_figure
from shared.evaluation.anonymise import PLACEHOLDER_PREFIX, Disguise
from shared.evaluation.probes import (
    Lean,
    ProbeCall,
    Variant,
    mirror_bars,
    probe_report,
    random_walk_bars,
    render_probes_markdown,
    variant_window,
)
from shared.evaluation.scoring import AgentCall
from shared.evaluation.windows import HELD_OUT, VisibleWindow, Window
from shared.market.bars import Bar, Timeframe
from shared.market.sources import BundledSource
from shared.storage.objects import ObjectRef
from shared.tools.indicator_tools import INDICATOR_TOOLS
from workflows.quantagent import ChartReader, chart_inputs, indicator_inputs

WINDOWS = {"GOOG": ("1d", 1500), "EURUSD": ("1h", 4000)}
"""A daily stock window and an hourly FX one (prices near 1, so many digits are the level)."""


def _window(asset: str, number: int = 0) -> Window:
    timeframe, start = WINDOWS[asset]
    start += number * 100
    bars = BundledSource().read(asset, timeframe)[start : start + 100]
    return Window(
        window_id=f"{asset}_{timeframe}_{number}",
        asset=asset,
        timeframe=Timeframe(timeframe),
        bars=bars,
    )


def _figure_text(figure: Figure) -> list[str]:
    """Every string matplotlib draws on the figure (drawn first, so tick labels exist)."""
    figure.canvas.draw()
    return [text.get_text() for text in figure.findobj(Text) if text.get_text()]


def _chart_text(shown: VisibleWindow) -> list[str]:
    """The text layer of the pattern chart and the trend chart of ``shown``."""
    with drawing():
        pattern, _ = candle_figure(
            chart_window(shown.bars, qa.PATTERN_WINDOW),
            symbol=shown.asset,
            timeframe=shown.timeframe.value,
            volume=True,
        )
        trend, _ = trend_figure(shown.bars, symbol=shown.asset, timeframe=shown.timeframe.value)
        texts = _figure_text(pattern) + _figure_text(trend)
        for figure in (pattern, trend):
            figure.clear()
    return texts


def _prompt_text(shown: VisibleWindow) -> Iterator[str]:
    """Every prompt QuantAgent builds from ``shown``, and every indicator tool answer."""
    loaded = LoadedBars(symbol=shown.asset, timeframe=shown.timeframe, bars=shown.bars)
    for tool in INDICATOR_TOOLS:
        yield tool.run(tool.arguments(bars=shown.bars)).model_dump_json()  # type: ignore[attr-defined]
    yield from _messages(agents.INDICATOR, indicator_inputs(loaded, shown.timeframe))
    chart = ObjectRef(bucket="charts", key="quantagent/run/pattern_chart.png")
    pattern_bars = shown.bars[-qa.PATTERN_WINDOW :]
    matches = scan_patterns(PatternScanRequest(bars=pattern_bars)).matches
    trend_bars = shown.bars[-qa.TREND_WINDOW :]
    with drawing():
        figure, lines = trend_figure(trend_bars, symbol=shown.asset, timeframe="1d")
        figure.clear()
    reports = {}
    for reader in ("image", "text"):
        read = ChartReader(input=reader, role=agents.PATTERN.llm_role)
        pattern = chart_inputs(loaded, shown.timeframe, read, chart, pattern_bars, patterns=matches)
        trend = chart_inputs(loaded, shown.timeframe, read, chart, trend_bars, trendlines=lines)
        yield from _messages(agents.PATTERN, pattern)
        yield from _messages(agents.TREND, trend)
        reports = {"pattern": agents.read_patterns(pattern), "trend": agents.read_trend(trend)}
    decision = qa.DecisionInputs(
        symbol=shown.asset,
        timeframe=shown.timeframe.value,
        indicator_report="momentum mixed",
        pattern_report=reports["pattern"],
        trend_report=reports["trend"],
    )
    yield from _messages(agents.DECISION, decision)


def _messages(spec: object, inputs: object) -> Iterator[str]:
    for message in spec.prompt(spec, inputs):  # type: ignore[attr-defined]
        yield message.content


def _price_strings(bars: list[Bar]) -> set[str]:
    """The real level as a prompt would print it: the last close and the extremes, 4-6 digits."""
    levels = (bars[-1].close, min(bar.low for bar in bars), max(bar.high for bar in bars))
    return {f"{level:.{digits}g}" for level in levels for digits in (4, 5, 6)}


def _numbers(text: str) -> Iterator[float]:
    for match in re.finditer(r"(?<![\d.])\d+(?:\.\d+)?", text.replace("\u2212", "-")):
        yield float(match.group())


@pytest.mark.parametrize("asset", sorted(WINDOWS))
def test_an_anonymised_window_names_no_ticker_date_or_price_level_in_prompts_or_charts(
    asset: str,
) -> None:
    window = _window(asset)
    real = VisibleWindow.of(window)
    shown = variant_window(real, Variant.ANONYMISED, seed=0)

    prompts = "\n".join(_prompt_text(shown))
    charts = _chart_text(shown)
    everything = prompts + "\n" + "\n".join(charts)

    assert shown.asset.startswith(PLACEHOLDER_PREFIX) and shown.asset in everything
    assert asset.lower() not in everything.lower()
    real_dates = {bar.time.strftime(pattern) for bar in real.bars for pattern in ("%Y-%m-%d",)}
    real_dates |= {bar.time.strftime("%Y-%m") for bar in real.bars}
    assert not [date for date in real_dates if date in everything]
    years = {bar.time.year for bar in real.bars}
    assert not [year for year in years if re.search(rf"(?<!\d){year}-", everything)]
    printed = [
        price
        for price in _price_strings(real.bars)
        if re.search(rf"(?<![\d.]){re.escape(price)}(?!\d)", everything)
    ]
    assert not printed
    low, high = min(b.low for b in real.bars), max(b.high for b in real.bars)
    on_charts = [x for text in charts for x in _numbers(text) if low <= x <= high]
    assert not on_charts, f"chart numbers inside the real range {low}–{high}: {on_charts}"


def test_a_disguise_is_seeded_by_the_window_and_keeps_every_direction() -> None:
    window = _window("GOOG")
    first, again = (variant_window(VisibleWindow.of(window), Variant.ANONYMISED, 3) for _ in "ab")
    other = variant_window(VisibleWindow.of(window), Variant.ANONYMISED, 4)

    assert first == again and first.bars != other.bars
    disguise = Disguise.seeded(3, window.window_id)
    assert not 0.2 < disguise.price_factor < 5
    moves = [b.close > a.close for a, b in zip(window.visible, window.visible[1:], strict=False)]
    shown = [b.close > a.close for a, b in zip(first.bars, first.bars[1:], strict=False)]
    assert shown == moves
    assert [b.time.weekday() for b in first.bars] == [b.time.weekday() for b in window.visible]


def test_a_mirrored_path_reverses_every_move_inside_the_same_range() -> None:
    bars = _window("EURUSD").visible
    mirrored = mirror_bars(bars)

    assert [round(b.close - a.close, 9) for a, b in zip(mirrored, mirrored[1:], strict=False)] == [
        round(a.close - b.close, 9) for a, b in zip(bars, bars[1:], strict=False)
    ]
    assert min(b.low for b in mirrored) == pytest.approx(min(b.low for b in bars))
    assert max(b.high for b in mirrored) == pytest.approx(max(b.high for b in bars))


def test_the_random_walk_shown_is_the_start_of_the_one_scored() -> None:
    window = VisibleWindow.of(_window("GOOG"))
    walk = random_walk_bars(window, seed=1)
    shown = variant_window(window, Variant.RANDOM_WALK, seed=1)

    assert len(walk) == len(window.bars) + HELD_OUT and walk[: len(window.bars)] == shown.bars
    assert shown.asset.startswith(PLACEHOLDER_PREFIX)
    assert walk != random_walk_bars(window, seed=2)


def test_the_mirror_probe_flips_the_slope_rule_and_not_always_long() -> None:
    windows = [_window(asset, n) for asset in WINDOWS for n in range(5)]

    report = probe_report(windows, [], [], variants=[Variant.MIRRORED, Variant.RESCALED], seed=0)
    probes = {caller.caller: caller for caller in report.callers}

    slope, long = probes["linreg slope"], probes["always long"]
    assert slope.flip_rate is not None and (slope.flip_rate.hits, slope.flip_rate.n) == (10, 10)
    assert slope.consistency is not None and slope.consistency.value == 1.0
    assert long.flip_rate is not None and long.flip_rate.value == 0.0
    assert probes["QuantAgent decision"].flip_rate is not None
    assert probes["QuantAgent decision"].flip_rate.n == 0  # no agent calls were recorded


def test_agent_probes_pair_each_changed_call_with_the_original() -> None:
    windows = [_window("GOOG", n) for n in range(4)]
    calls = [AgentCall(window_id=w.window_id, decision=qa.Direction.LONG) for w in windows]
    flipped = qa.Direction.SHORT
    probe_calls = [
        ProbeCall(window_id=c.window_id, variant=None, decision=c.decision) for c in calls
    ]
    probe_calls += [
        ProbeCall(window_id=w.window_id, variant=Variant.MIRRORED, decision=flipped)
        for w in windows[:3]
    ] + [ProbeCall(window_id=windows[3].window_id, variant=Variant.MIRRORED, error="timed out")]
    probe_calls += [
        ProbeCall(window_id=w.window_id, variant=Variant.ANONYMISED, decision=w.truth)
        for w in windows
    ]

    report = probe_report(
        windows, calls, probe_calls, variants=[Variant.MIRRORED, Variant.ANONYMISED], seed=0
    )

    decision = report.callers[0]
    assert decision.caller == "QuantAgent decision" and decision.flip_rate is not None
    assert (decision.flip_rate.hits, decision.flip_rate.n) == (3, 3)
    assert report.failed == 1
    overall = report.gap[-1]
    raw = sum(w.truth is qa.Direction.LONG for w in windows) / 4
    assert overall.asset == "overall" and overall.anonymised == 1.0 and overall.raw == raw
    assert overall.gap == pytest.approx(raw - 1.0)
    markdown = render_probes_markdown(report)
    assert "### QuantAgent decision" in markdown and "## Raw against anonymised" in markdown
    assert Lean.NEUTRAL.mirrored is Lean.NEUTRAL


def test_times_in_the_disguise_stay_timezone_aware() -> None:
    shown = variant_window(VisibleWindow.of(_window("EURUSD")), Variant.RESCALED, seed=0)
    assert all(isinstance(b.time, datetime) and b.time.utcoffset() is not None for b in shown.bars)
