"""Counterfactual probes: does a call follow the chart, or the caller's memory and bias?

Each window is shown again, changed in a way whose right answer is known:

- ``mirrored``: the visible path reflected about the middle of its price range
  (p → low + high − p), so every rise becomes a fall of the same size, the range
  and the dates stay: a caller that reads the chart flips its call (flip rate);
- ``rescaled``: the same bars shifted in time and rescaled (``anonymise``), ticker
  kept: nothing the chart shows changed, so the call should not (consistency);
- ``random_walk``: a driftless random walk with the window's volatility, shown
  under a placeholder in a disguised period: its future is a coin, so accuracy
  should be near 50%, and the share of LONG calls is the caller's long bias;
- ``anonymised``: the window disguised (placeholder ticker, shifted dates, rescaled
  prices): the accuracy gap against the real window is what memory was worth.

The callers probed are the agent's decision, the two chart agents (the pattern
agent's bias, the trend agent's prediction; neutral or sideways is a call of its
own) and the baselines, fed the same changed bars. Every changed window is built
from the visible bars only and seeded by the window, so the workflow (which shows
it to the agent) and the scorer (which rebuilds the random walk's held-out bars
for its truth) build exactly the same one.
"""

from __future__ import annotations

import math
import random
import statistics
from collections.abc import Callable, Iterable, Sequence
from datetime import timedelta
from enum import StrEnum

from pydantic import BaseModel, Field

from shared.agents.quantagent import Direction, TrendPrediction
from shared.evaluation.anonymise import Disguise, disguise_bars
from shared.evaluation.baselines import BASELINE_TITLES, BASELINES
from shared.evaluation.paired import PairedTest, format_p
from shared.evaluation.scoring import OVERALL, AgentCall, wilson_interval
from shared.evaluation.windows import HELD_OUT, InvalidWindow, VisibleWindow, Window
from shared.market.bars import Bar, Timeframe
from shared.ta.patterns import Bias


class Variant(StrEnum):
    """A changed copy of a window an agent is shown besides the original."""

    ANONYMISED = "anonymised"
    MIRRORED = "mirrored"
    RESCALED = "rescaled"
    RANDOM_WALK = "random_walk"


PROBES = (Variant.MIRRORED, Variant.RESCALED, Variant.RANDOM_WALK)
"""What ``quantdesk eval probes`` shows besides each window."""

FLAT_VOLATILITY = 0.01
"""The random walk's step when the window's closes never move (a log-return sd of 1%)."""


class Lean(StrEnum):
    """A caller's call on one window: a direction, or neither (a neutral pattern, sideways)."""

    LONG = "LONG"
    SHORT = "SHORT"
    NEUTRAL = "NEUTRAL"

    @property
    def mirrored(self) -> Lean:
        """The call a chart reader makes on the mirrored chart."""
        return {Lean.LONG: Lean.SHORT, Lean.SHORT: Lean.LONG}.get(self, Lean.NEUTRAL)


_BIAS_LEAN = {Bias.BULLISH: Lean.LONG, Bias.BEARISH: Lean.SHORT, Bias.NEUTRAL: Lean.NEUTRAL}
_TREND_LEAN = {
    TrendPrediction.UP: Lean.LONG,
    TrendPrediction.DOWN: Lean.SHORT,
    TrendPrediction.SIDEWAYS: Lean.NEUTRAL,
}


class ProbeCall(BaseModel):
    """What QuantAgent's directional agents answered on one window as shown one way."""

    window_id: str
    variant: Variant | None = Field(description="null: the window as it is")
    decision: Direction | None = None
    pattern: Bias | None = Field(None, description="the pattern agent's bias")
    trend: TrendPrediction | None = Field(None, description="the trend agent's prediction")
    error: str | None = Field(None, description="why the analysis failed; then no calls")


# --- the changed windows ----------------------------------------------------------------


def mirror_bars(bars: Sequence[Bar]) -> list[Bar]:
    """``bars`` reflected about the middle of their range: rises become falls, the level stays.

    An arithmetic reflection keeps every price inside the original range (so positive)
    and negates every slope exactly; high and low swap roles.
    """
    pivot = min(bar.low for bar in bars) + max(bar.high for bar in bars)
    return [
        Bar(
            time=bar.time,
            open=pivot - bar.open,
            high=pivot - bar.low,
            low=pivot - bar.high,
            close=pivot - bar.close,
            volume=bar.volume,
        )
        for bar in bars
    ]


def random_walk_bars(window: VisibleWindow, seed: int) -> list[Bar]:
    """A driftless walk of ``len(window.bars) + HELD_OUT`` bars, disguised like the window.

    Each close is the previous one times exp(N(0, σ)), σ the sd of the window's
    close-to-close log returns; highs and lows lie half a σ-draw beyond the body.
    Its first ``len(window.bars)`` bars are shown, the last ``HELD_OUT`` are its truth.
    """
    bars = window.bars
    disguise = Disguise.seeded(seed, window.window_id)
    returns = [math.log(b.close / a.close) for a, b in zip(bars, bars[1:], strict=False)]
    sigma = statistics.pstdev(returns) or FLAT_VOLATILITY
    rng = random.Random(f"random-walk:{seed}:{window.window_id}")
    step = _bar_step(bars, window.timeframe)
    times = [bar.time for bar in bars] + [bars[-1].time + step * k for k in range(1, HELD_OUT + 1)]
    volumes = [bar.volume for bar in bars] + [bars[-1].volume] * HELD_OUT
    walk: list[Bar] = []
    close = bars[0].open * disguise.price_factor
    for time, volume in zip(times, volumes, strict=True):
        open_, close = close, close * math.exp(rng.gauss(0.0, sigma))
        walk.append(
            Bar(
                time=time + disguise.shift,
                open=open_,
                high=max(open_, close) * math.exp(abs(rng.gauss(0.0, sigma / 2))),
                low=min(open_, close) * math.exp(-abs(rng.gauss(0.0, sigma / 2))),
                close=close,
                volume=volume * disguise.volume_factor,
            )
        )
    return walk


def _bar_step(bars: Sequence[Bar], timeframe: Timeframe) -> timedelta:
    """The window's last step, else one bar: held-out times continue the window's rhythm."""
    return bars[-1].time - bars[-2].time if len(bars) > 1 else timeframe.duration


def variant_window(window: VisibleWindow, variant: Variant, seed: int) -> VisibleWindow:
    """What the agent is shown for ``variant`` of ``window``: the symbol and the visible bars."""
    disguise = Disguise.seeded(seed, window.window_id)
    symbol, bars = window.asset, window.bars
    if variant is Variant.ANONYMISED:
        symbol, bars = disguise.placeholder, disguise_bars(bars, disguise)
    elif variant is Variant.RESCALED:
        bars = disguise_bars(bars, disguise)
    elif variant is Variant.MIRRORED:
        bars = mirror_bars(bars)
    else:
        symbol, bars = disguise.placeholder, random_walk_bars(window, seed)[: len(bars)]
    return VisibleWindow(
        window_id=window.window_id, asset=symbol, timeframe=window.timeframe, bars=bars
    )


def random_walk_truth(window: Window, seed: int) -> Direction:
    """The direction the random walk shown for ``window`` took over its held-out bars."""
    walk = random_walk_bars(VisibleWindow.of(window), seed)
    return Window(
        window_id=window.window_id, asset="walk", timeframe=window.timeframe, bars=walk
    ).truth


# --- the tables -------------------------------------------------------------------------

Caller = Callable[[Window, Variant | None], Lean | None]
"""(window, variant or None for the original) -> the call, or None if there is none."""


class Rate(BaseModel):
    """A share of windows with its 95% Wilson interval."""

    hits: int = Field(ge=0)
    n: int = Field(ge=0, description="windows it is a share of")
    value: float | None
    ci_low: float | None
    ci_high: float | None

    @classmethod
    def of(cls, outcomes: Iterable[bool]) -> Rate:
        """The share of true ``outcomes``."""
        values = list(outcomes)
        hits, n = sum(values), len(values)
        interval = wilson_interval(hits, n)
        return cls(
            hits=hits,
            n=n,
            value=hits / n if n else None,
            ci_low=interval[0] if interval else None,
            ci_high=interval[1] if interval else None,
        )


class CallerProbes(BaseModel):
    """One caller's probe results; a probe that was not run is null."""

    caller: str
    flip_rate: Rate | None = Field(description="mirrored: the call flipped (should be ~100%)")
    consistency: Rate | None = Field(description="rescaled: the call stayed (should be 100%)")
    walk_accuracy: Rate | None = Field(
        description="random walk: directional calls that were right (should be ~50%)"
    )
    long_bias: Rate | None = Field(description="random walk: share of calls that were LONG")


class GapRow(BaseModel):
    """The agent's accuracy on the real and the anonymised windows of one asset."""

    asset: str
    timeframe: str
    n: int = Field(description="windows with a call both ways")
    raw: float | None
    anonymised: float | None
    gap: float | None = Field(description="raw minus anonymised: what the name and period add")
    paired: PairedTest | None = Field(description="raw right vs anonymised right, McNemar")

    @property
    def label(self) -> str:
        """How the row is named in tables."""
        return self.asset if self.asset == OVERALL else f"{self.asset} {self.timeframe}"


class ProbeReport(BaseModel):
    """Every caller's probes and, for an anonymised run, the gap per asset."""

    variants: list[Variant]
    callers: list[CallerProbes]
    gap: list[GapRow] = Field(default_factory=list, description="empty unless anonymised")
    failed: int = Field(description="changed windows whose analysis failed, left out")


def _agent_caller(
    calls: dict[tuple[str, Variant | None], ProbeCall], read: Callable[[ProbeCall], Lean | None]
) -> Caller:
    """One of QuantAgent's agents, as the recorded probe calls show it (none when failed)."""

    def call(window: Window, variant: Variant | None) -> Lean | None:
        probe = calls.get((window.window_id, variant))
        return None if probe is None or probe.error is not None else read(probe)

    return call


def _baseline_caller(name: str, seed: int) -> Caller:
    """A baseline's call on the changed window's bars, as the agent was shown them."""
    rule = BASELINES[name]

    def call(window: Window, variant: Variant | None) -> Lean:
        shown = VisibleWindow.of(window)
        if variant is not None:
            shown = variant_window(shown, variant, seed)
        return Lean(rule(shown.bars, window.window_id, seed).value)

    return call


def _callers(probe_calls: Sequence[ProbeCall], seed: int) -> dict[str, Caller]:
    by_key = {(call.window_id, call.variant): call for call in probe_calls}
    return {
        "QuantAgent decision": _agent_caller(
            by_key, lambda p: Lean(p.decision.value) if p.decision else None
        ),
        "pattern agent": _agent_caller(
            by_key, lambda p: _BIAS_LEAN[p.pattern] if p.pattern else None
        ),
        "trend agent": _agent_caller(by_key, lambda p: _TREND_LEAN[p.trend] if p.trend else None),
        **{BASELINE_TITLES[name]: _baseline_caller(name, seed) for name in BASELINES},
    }


def _pairs(caller: Caller, windows: Sequence[Window], variant: Variant) -> list[tuple[Lean, Lean]]:
    """(original call, changed call) on every window where both exist."""
    pairs = []
    for window in windows:
        before, after = caller(window, None), caller(window, variant)
        if before is not None and after is not None:
            pairs.append((before, after))
    return pairs


def probe_caller(
    name: str, caller: Caller, windows: Sequence[Window], variants: Sequence[Variant], seed: int
) -> CallerProbes:
    """The four probe figures of one caller on ``windows``."""
    flip = consistency = accuracy = bias = None
    if Variant.MIRRORED in variants:
        flip = Rate.of(
            after == before.mirrored for before, after in _pairs(caller, windows, Variant.MIRRORED)
        )
    if Variant.RESCALED in variants:
        consistency = Rate.of(
            after == before for before, after in _pairs(caller, windows, Variant.RESCALED)
        )
    if Variant.RANDOM_WALK in variants:
        walked = [
            (lean, random_walk_truth(window, seed))
            for window in windows
            if (lean := caller(window, Variant.RANDOM_WALK)) is not None
        ]
        accuracy = Rate.of(
            lean.value == truth.value for lean, truth in walked if lean is not Lean.NEUTRAL
        )
        bias = Rate.of(lean is Lean.LONG for lean, _ in walked)
    return CallerProbes(
        caller=name, flip_rate=flip, consistency=consistency, walk_accuracy=accuracy, long_bias=bias
    )


def gap_rows(
    windows: Sequence[Window], original: dict[str, AgentCall], probe_calls: Sequence[ProbeCall]
) -> list[GapRow]:
    """The agent's raw and anonymised accuracy per asset and timeframe, then overall."""
    anonymised = {
        c.window_id: c.decision
        for c in probe_calls
        if c.variant is Variant.ANONYMISED and c.error is None and c.decision is not None
    }
    groups: dict[tuple[str, str], list[tuple[bool, bool]]] = {}
    for window in windows:
        raw = original.get(window.window_id)
        disguised = anonymised.get(window.window_id)
        if raw is None or raw.decision is None or raw.error is not None or disguised is None:
            groups.setdefault((window.asset, window.timeframe.value), [])
            continue
        pair = (raw.decision == window.truth, disguised == window.truth)
        groups.setdefault((window.asset, window.timeframe.value), []).append(pair)
    everything = [pair for pairs in groups.values() for pair in pairs]
    keys = [*sorted(groups), (OVERALL, "all")]
    return [
        _gap_row(asset, timeframe, everything if asset == OVERALL else groups[asset, timeframe])
        for asset, timeframe in keys
    ]


def _gap_row(asset: str, timeframe: str, pairs: Sequence[tuple[bool, bool]]) -> GapRow:
    n = len(pairs)
    raw = sum(r for r, _ in pairs) / n if n else None
    disguised = sum(a for _, a in pairs) / n if n else None
    return GapRow(
        asset=asset,
        timeframe=timeframe,
        n=n,
        raw=raw,
        anonymised=disguised,
        gap=raw - disguised if raw is not None and disguised is not None else None,
        paired=PairedTest.of(pairs) if n else None,
    )


def probe_report(
    windows: Sequence[Window | InvalidWindow],
    calls: Sequence[AgentCall],
    probe_calls: Sequence[ProbeCall],
    *,
    variants: Sequence[Variant],
    seed: int,
) -> ProbeReport:
    """Every caller's probes over the valid windows, and the anonymised gap if it was run."""
    valid = [w for w in windows if isinstance(w, Window)]
    original = {call.window_id: call for call in calls}
    probes = [v for v in variants if v is not Variant.ANONYMISED]
    callers = (
        [
            probe_caller(name, caller, valid, probes, seed)
            for name, caller in _callers(probe_calls, seed).items()
        ]
        if probes
        else []
    )
    return ProbeReport(
        variants=list(variants),
        callers=callers,
        gap=gap_rows(valid, original, probe_calls) if Variant.ANONYMISED in variants else [],
        failed=sum(1 for c in probe_calls if c.variant is not None and c.error is not None),
    )


# --- Markdown ---------------------------------------------------------------------------

_PROBE_LINES = (
    ("mirrored: call flipped", "flip_rate", "~100%"),
    ("rescaled + shifted: call kept", "consistency", "100%"),
    ("random walk: accuracy", "walk_accuracy", "~50%"),
    ("random walk: share LONG (long bias)", "long_bias", "~50%"),
)


def _rate_cells(rate: Rate | None) -> list[str]:
    if rate is None or rate.value is None:
        return ["–", "0" if rate else "–", "–"]
    interval = f"{rate.ci_low:.1%}–{rate.ci_high:.1%}"
    return [f"{rate.value:.1%}", f"{rate.hits}/{rate.n}", interval]


def _percent(value: float | None, signed: bool = False) -> str:
    if value is None:
        return "–"
    return f"{value:+.1%}" if signed else f"{value:.1%}"


def render_probes_markdown(report: ProbeReport) -> str:
    """One table per caller, then the anonymised gap per asset."""
    lines: list[str] = []
    if report.callers:
        lines += [
            "",
            "## Counterfactual probes",
            "",
            "Each window shown again: mirrored about the middle of its range (a chart reader "
            "flips), shifted in time and rescaled (nothing changed: a chart reader keeps its "
            "call), and replaced by a driftless random walk under a placeholder (accuracy should "
            "be near 50%; the share of LONG calls is the long bias). Neutral and sideways count "
            "as calls of their own; the random walk's accuracy is over directional calls only.",
        ]
        if report.failed:
            lines += ["", f"{report.failed} changed windows failed and are left out."]
        for caller in report.callers:
            lines += [
                "",
                f"### {caller.caller}",
                "",
                "| probe | value | windows | 95% CI | a chart reader |",
                "|---|---:|---:|---:|---:|",
            ]
            for title, field, expected in _PROBE_LINES:
                cells = _rate_cells(getattr(caller, field))
                lines.append(f"| {title} | " + " | ".join([*cells, expected]) + " |")
    if report.gap:
        lines += [
            "",
            "## Raw against anonymised",
            "",
            "The agent's accuracy on the real windows and on the same windows anonymised "
            "(placeholder ticker, dates moved 100–150 years on, prices rescaled 5–50x), on "
            "the windows with a call both ways. A positive gap is what the name and the period "
            "were worth: memory, not the chart. McNemar's exact test pairs the two calls.",
            "",
            "| asset | n | raw | anonymised | gap | raw-only right – anonymised-only right, p |",
            "|---|---:|---:|---:|---:|---:|",
        ]
        for row in report.gap:
            name = f"**{row.label}**" if row.asset == OVERALL else row.label
            paired = (
                "–"
                if row.paired is None
                else f"{row.paired.wins}–{row.paired.losses}, {format_p(row.paired.p_value)}"
            )
            lines.append(
                f"| {name} | {row.n} | {_percent(row.raw)} | {_percent(row.anonymised)} | "
                f"{_percent(row.gap, signed=True)} | {paired} |"
            )
    return "\n".join(lines) + "\n" if lines else ""
