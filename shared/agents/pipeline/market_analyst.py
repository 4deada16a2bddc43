"""The market (technical) analyst: its spec, and its offline rules over price and indicators."""

from __future__ import annotations

from collections.abc import Callable

from shared.agents.pipeline.analyst import Desk, analyst_spec
from shared.agents.pipeline.evidence import INF, Bands, Evidence, banded, sign_of, signed
from shared.agents.pipeline.facts import Payloads, PriceFacts, price_facts
from shared.ta.indicator_names import IndicatorByName
from shared.tools.catalog import MARKET_TOOLS

CRASH_DRAWDOWN = 0.9
"""A close this far below the window's high is a collapse, not a correction: abort."""
DEEP_DRAWDOWN = 0.2
AVERAGES: tuple[tuple[IndicatorByName, str, float], ...] = (
    (IndicatorByName.SMA_200, "200-bar SMA", 2.0),
    (IndicatorByName.SMA_50, "50-bar SMA", 1.5),
    (IndicatorByName.EMA_10, "10-bar EMA", 0.5),
)
"""(indicator, label, weight): the longer the average, the more the close's side of it says."""
RSI_BANDS: Bands[tuple[float, str]] = (
    (30.0, (0.5, "oversold (below 30): a rebound is likely")),
    (50.0, (-0.3, "below mid-range: momentum is soft")),
    (70.0, (0.3, "above mid-range: momentum is firm")),
    (INF, (-0.5, "overbought (above 70): a pullback is likely")),
)
RETURN_BANDS: Bands[tuple[float, str]] = (
    (-0.02, (-1.0, "fell")),
    (0.02, (0.0, "was flat")),
    (INF, (1.0, "rose")),
)


def _versus_averages(facts: PriceFacts) -> list[Evidence]:
    close = facts.last_close
    found = []
    for name, label, weight in AVERAGES:
        average = facts.indicators.get(name)
        if close is None or average is None or average <= 0:
            continue
        gap = close / average - 1
        side = "above" if gap > 0 else "below"
        found.append(
            Evidence(
                sign_of(gap),
                weight,
                f"close {close:.6g} is {abs(gap):.1%} {side} its {label} ({average:.6g})",
            )
        )
    return found


def _cross(facts: PriceFacts) -> list[Evidence]:
    fast, slow = (
        facts.indicators.get(IndicatorByName.SMA_50),
        facts.indicators.get(IndicatorByName.SMA_200),
    )
    if fast is None or slow is None:
        return []
    golden = fast > slow
    regime = "above" if golden else "below"
    return [
        Evidence(
            sign_of(fast - slow),
            1.0,
            f"the 50-bar SMA ({fast:.6g}) is {regime} the 200-bar SMA ({slow:.6g}): "
            f"a {'bullish' if golden else 'bearish'} regime",
        )
    ]


def _momentum(facts: PriceFacts) -> list[Evidence]:
    found = []
    rsi = facts.indicators.get(IndicatorByName.RSI)
    if rsi is not None:
        vote, meaning = banded(rsi, RSI_BANDS)
        found.append(Evidence(vote, 1.0, f"RSI {rsi:.1f} is {meaning}"))
    macd, signal = (
        facts.indicators.get(IndicatorByName.MACD),
        facts.indicators.get(IndicatorByName.MACDS),
    )
    hist = facts.indicators.get(IndicatorByName.MACDH)
    if hist is None and macd is not None and signal is not None:
        hist = macd - signal
    if hist is not None:
        side = "above" if hist > 0 else "below"
        found.append(
            Evidence(
                sign_of(hist),
                1.5,
                f"MACD is {side} its signal line (histogram {hist:+.4g})",
            )
        )
    return found


def _price_path(facts: PriceFacts) -> list[Evidence]:
    found = []
    change = facts.window_return
    if change is not None:
        vote, verb = banded(change, RETURN_BANDS)
        found.append(Evidence(vote, 1.0, f"price {verb} {signed(change)} over {facts.bars} bars"))
    if facts.drawdown is not None and facts.window_high is not None:
        deep = facts.drawdown >= DEEP_DRAWDOWN
        found.append(
            Evidence(
                -1.0 if deep else 0.0,
                1.0 if deep else 0.0,
                f"the close is {facts.drawdown:.1%} below the window high ({facts.window_high:.6g})",
            )
        )
    if facts.atr is not None and facts.last_close:
        spread = f", daily volatility {facts.volatility:.2%}" if facts.volatility else ""
        found.append(
            Evidence(
                0.0,
                0.0,
                f"ATR {facts.atr:.4g} ({facts.atr / facts.last_close:.2%} of the price){spread}",
            )
        )
    return found


MARKET_RULES: tuple[Callable[[PriceFacts], list[Evidence]], ...] = (
    _versus_averages,
    _cross,
    _momentum,
    _price_path,
)


def market_evidence(found: Payloads) -> list[Evidence]:
    """Trend against the averages, the regime, momentum, and the price path."""
    facts = price_facts(found)
    return [evidence for rule in MARKET_RULES for evidence in rule(facts)]


def crash(found: Payloads) -> str | None:
    """Abort rule: the close sits more than 90% below the window's high."""
    facts = price_facts(found)
    if facts.drawdown is None or facts.drawdown < CRASH_DRAWDOWN:
        return None
    return (
        f"the price collapsed {facts.drawdown:.0%} from its window high of "
        f"{facts.window_high:.6g} to {facts.last_close:.6g}"
    )


SPEC = analyst_spec(
    "market",
    title="the market (technical) analyst",
    focus="Read the price trend and momentum: where the close sits against its 50- and 200-bar "
    "SMAs and 10-bar EMA, the MACD against its signal line, RSI zones, the Bollinger bands, "
    "and ATR for volatility. Choose complementary indicators (e.g. {names}) and avoid "
    "redundant ones. Report the drawdown from the window's high.",
    tools=MARKET_TOOLS,
    heading="Market analyst report",
    desk=Desk(market_evidence, aborts=(crash,)),
    may_abort=True,
)
