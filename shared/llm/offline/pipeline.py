"""Offline analysts for the Pipeline's twelve agents: rules over the tool results and the context.

Each analyst turns what its tools returned into ``Evidence`` (a vote from -1
bearish to +1 bullish, a weight, and the sentence with the number it rests on),
and the report follows from the weighted vote. The critical abort is a typed
rule over the data (``ABORT_RULES``), never a word found in an agent's prose.
Everyone after the analysts reads the typed inputs of its kind
(``shared.agents.pipeline.inputs``) from the request's context:

| agent                                        | reads                                                |
|----------------------------------------------|------------------------------------------------------|
| market_analyst                               | tool results: get_ohlcv, get_indicators              |
| social_analyst                               | tool results: get_social_posts, get_company_news     |
| news_analyst                                 | tool results: get_company_news, get_global_news,     |
|                                              | get_topic_news, get_macro_series                     |
| fundamentals_analyst                         | tool results: get_fundamentals, get_income_statement,|
|                                              | get_balance_sheet, get_cash_flow,                    |
|                                              | get_insider_transactions, get_company_news           |
| bull_researcher, bear_researcher             | ``DebaterInputs``: reports, transcript               |
| aggressive/conservative/neutral_debater      | ``DebaterInputs``: reports, transcript, proposal     |
| research_manager                             | ``ManagerInputs``: reports, transcript               |
| trader                                       | ``TraderInputs``: research_plan, reports, last_price,|
|                                              | atr, volatility                                      |
| portfolio_manager                            | ``ManagerInputs``: reports (their critical_abort),   |
|                                              | research_plan, proposal, transcript                  |

An analyst's request context is ``AnalystInputs``: its ``symbol`` and ``names``
fill the tool calls the offline engine makes (``get_indicators`` needs names).
"""

from __future__ import annotations

import re
import statistics
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from functools import partial
from typing import Any, TypeVar

from pydantic import BaseModel

from shared.agents.pipeline.facts import Payloads, PriceFacts, payloads, price_facts, records
from shared.agents.pipeline.inputs import (
    AnalystReports,
    DebaterInputs,
    ManagerInputs,
    TraderInputs,
)
from shared.agents.pipeline.prompts import render_order, render_plan, render_proposal
from shared.agents.pipeline.roles import (
    AGENTS,
    ANALYST_AGENTS,
    DEBATER_AGENTS,
    PORTFOLIO_MANAGER,
    RESEARCH_MANAGER,
    TRADER,
)
from shared.agents.pipeline.schemas import (
    DEBATE_OF,
    SIGNAL_OF_RATING,
    Action,
    AnalystKind,
    AnalystReport,
    CriticalAbort,
    Debate,
    DebateTurn,
    KeyPoint,
    PortfolioDecision,
    Rating,
    ResearchPlan,
    SentimentReport,
    Speaker,
    TraderProposal,
    TradeSignal,
    band_for_score,
)
from shared.agents.schemas import Stance
from shared.data.contracts import (
    Fundamentals,
    InsiderTransaction,
    MacroSeries,
    NewsItem,
    SocialPost,
    Statement,
)
from shared.errors import InvalidInput
from shared.llm.offline.engine import OfflineAnalyst, OfflineAnswer, register_analyst
from shared.llm.offline.reading import OfflineInput
from shared.ta.indicators_by_name import IndicatorByName

T = TypeVar("T")
Bands = Sequence[tuple[float, T]]
"""(upper bound, value) rows, ascending: a number takes the value of the first bound above it."""


def banded(value: float, bands: Bands[T]) -> T:
    """The value of the first band whose upper bound exceeds ``value`` (the last band is open)."""
    return next((row for bound, row in bands if value < bound), bands[-1][1])


@dataclass(frozen=True)
class Evidence:
    """One fact and its vote: -1 bearish to +1 bullish; weight 0 informs without voting."""

    vote: float
    weight: float
    point: str

    @property
    def leans(self) -> Stance:
        """The way the fact points alone."""
        return STANCE_OF_SIGN[_sign(self.vote)]


INF = float("inf")
MAX_POINTS = 8
STANCE_BANDS: Bands[Stance] = (
    (-0.15, Stance.BEARISH),
    (0.15, Stance.NEUTRAL),
    (INF, Stance.BULLISH),
)
VOTE_OF_STANCE: dict[Stance, int] = {Stance.BULLISH: 1, Stance.BEARISH: -1, Stance.NEUTRAL: 0}
STANCE_OF_SIGN: dict[float, Stance] = {float(v): stance for stance, v in VOTE_OF_STANCE.items()}
ACTION_SIGN: dict[Action, int] = {Action.BUY: 1, Action.HOLD: 0, Action.SELL: -1}


AMOUNT_UNITS = (("B", 1e9), ("M", 1e6), ("K", 1e3))


def _amount(value: float) -> str:
    """A money amount the way a report writes it: 1.23B, 45.60M, 789."""
    scale = next(((unit, size) for unit, size in AMOUNT_UNITS if abs(value) >= size), None)
    return f"{value / scale[1]:.2f}{scale[0]}" if scale else f"{value:.4g}"


def _sign(value: float) -> float:
    """+1 for a positive number, -1 for a negative one, 0 for zero."""
    return float((value > 0) - (value < 0))


def _count(count: int, noun: str) -> str:
    return f"{count} {noun}{'' if count == 1 else 's'}"


def _with_sign(value: float) -> str:
    return f"{value:+.1%}"


# --- market analyst ----------------------------------------------------------------------

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
                _sign(gap),
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
            _sign(fast - slow),
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
                _sign(hist),
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
        found.append(
            Evidence(vote, 1.0, f"price {verb} {_with_sign(change)} over {facts.bars} bars")
        )
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


# --- news -----------------------------------------------------------------------------------

CATASTROPHIC_EVENTS: dict[str, tuple[str, ...]] = {
    "bankruptcy": ("bankruptcy", "bankrupt", "chapter 11", "insolvency", "insolvent"),
    "delisting": ("delisting", "delisted", "delist", "delists"),
    "fraud": ("fraud", "accounting irregularities", "ponzi"),
    "trading halt": ("trading halt", "trading halted", "halts trading", "trading suspended"),
}
"""Event -> the words in a headline (or a topic tag) that report it."""

_EVENT_PATTERNS: dict[str, re.Pattern[str]] = {
    event: re.compile(r"\b(" + "|".join(map(re.escape, words)) + r")\b", re.IGNORECASE)
    for event, words in CATASTROPHIC_EVENTS.items()
}

TONE_BANDS: Bands[tuple[float, str]] = (
    (-0.3, (-1.0, "clearly negative")),
    (-0.05, (-0.5, "leaning negative")),
    (0.05, (0.0, "neutral")),
    (0.3, (0.5, "leaning positive")),
    (INF, (1.0, "clearly positive")),
)
POSITIVE_TONE = 0.05


def catastrophic_events(items: Sequence[NewsItem]) -> list[tuple[str, NewsItem]]:
    """(event, article) for every article whose headline or topics report a catastrophe."""
    found = []
    for item in items:
        text = " ".join([item.title, *item.topics])
        found += [
            (event, item) for event, pattern in _EVENT_PATTERNS.items() if pattern.search(text)
        ]
    return found


def _news(found: Payloads, *tools: str) -> list[NewsItem]:
    return [item for tool in tools for item in records(found.get(tool, []), NewsItem)]


def _tone(items: Sequence[NewsItem], label: str, weight: float) -> list[Evidence]:
    scored = [item.sentiment for item in items if item.sentiment is not None]
    if not scored:
        return (
            [Evidence(0.0, 0.0, f"{label}: {_count(len(items), 'article')}, none with a tone")]
            if items
            else []
        )
    mean = statistics.fmean(scored)
    vote, tone = banded(mean, TONE_BANDS)
    positive = sum(1 for s in scored if s > POSITIVE_TONE)
    negative = sum(1 for s in scored if s < -POSITIVE_TONE)
    return [
        Evidence(
            vote,
            weight,
            f"{label}: {_count(len(items), 'article')}, mean sentiment {mean:+.2f} ({tone}; "
            f"{positive} positive, {negative} negative)",
        )
    ]


def _headlines(items: Sequence[NewsItem]) -> list[Evidence]:
    scored = sorted((i for i in items if i.sentiment is not None), key=lambda i: i.sentiment or 0)
    picks = {id(item): item for item in (scored[:1] + scored[-1:])}.values()
    return [
        Evidence(
            item.sentiment or 0.0,
            0.0,
            f'headline {item.published_at:%Y-%m-%d}: "{item.title}" (sentiment {item.sentiment:+.2f})',
        )
        for item in picks
    ]


def _events(items: Sequence[NewsItem]) -> list[Evidence]:
    return [
        Evidence(
            -1.0, 3.0, f'news reports a {event} ({item.published_at:%Y-%m-%d}): "{item.title}"'
        )
        for event, item in catastrophic_events(items)
    ]


def _macro(found: Payloads) -> list[Evidence]:
    found_series = records(found.get("get_macro_series"), MacroSeries)
    return [
        Evidence(
            0.0,
            0.0,
            f"{series.name} ({series.series}): {series.points[0].value:.4g} → "
            f"{series.points[-1].value:.4g} {series.unit} over {len(series.points)} releases",
        )
        for series in found_series
        if series.points
    ]


def news_evidence(found: Payloads) -> list[Evidence]:
    """The tone of company news (double weight) and of world news, the extremes, the events."""
    company = _news(found, "get_company_news")
    world = _news(found, "get_global_news", "get_topic_news")
    return (
        _events(company)
        + _tone(company, "company news", 2.0)
        + _tone(world, "world and market news", 1.0)
        + _headlines(company)
        + _macro(found)
    )


def corporate_catastrophe(found: Payloads) -> str | None:
    """Abort rule: the company's own news reports a bankruptcy, delisting, fraud or halt."""
    events = catastrophic_events(_news(found, "get_company_news"))
    if not events:
        return None
    event, item = events[0]
    return f'company news reports a {event} on {item.published_at:%Y-%m-%d}: "{item.title}"'


# --- social ---------------------------------------------------------------------------------

NEUTRAL_SCORE = 5.0


def _posts(found: Payloads) -> list[SocialPost]:
    return [
        p for p in records(found.get("get_social_posts", []), SocialPost) if p.sentiment is not None
    ]


def crowd_mood(posts: Sequence[SocialPost]) -> float | None:
    """Reach-weighted mean sentiment of the posts (-1..1): a post with more likes counts more."""
    if not posts:
        return None
    weights = [1 + post.likes for post in posts]
    return sum(w * (p.sentiment or 0.0) for w, p in zip(weights, posts, strict=True)) / sum(weights)


def social_evidence(found: Payloads) -> list[Evidence]:
    """The crowd's reach-weighted mood, its loudest post, and the news it reacts to."""
    posts = _posts(found)
    mood = crowd_mood(posts)
    evidence = []
    if mood is not None:
        positive = sum(1 for p in posts if (p.sentiment or 0) > POSITIVE_TONE)
        negative = sum(1 for p in posts if (p.sentiment or 0) < -POSITIVE_TONE)
        loudest = max(posts, key=lambda p: p.likes)
        evidence += [
            Evidence(
                max(-1.0, min(1.0, 2 * mood)),
                2.0,
                f"{len(posts)} posts, reach-weighted sentiment {mood:+.2f} "
                f"({positive} positive, {negative} negative)",
            ),
            Evidence(
                loudest.sentiment or 0.0,
                0.0,
                f'most-liked post ({loudest.likes} likes): "{loudest.text}" '
                f"(sentiment {loudest.sentiment:+.2f})",
            ),
        ]
    return evidence + _tone(_news(found, "get_company_news"), "company news", 1.0)


def sentiment_fields(found: Payloads) -> dict[str, Any]:
    """The social report's score and narrative, from the posts alone (the band is the score's)."""
    posts = _posts(found)
    mood = crowd_mood(posts)
    score = NEUTRAL_SCORE if mood is None else round(NEUTRAL_SCORE * (1 + mood), 1)
    band = band_for_score(score)
    narrative = (
        f"No posts with a tone were found, so the crowd's mood is unknown (scored {score:g})."
        if mood is None
        else f"{len(posts)} posts; the crowd is {band.value.replace('_', ' ')} "
        f"(reach-weighted sentiment {mood:+.2f}, score {score:g}/10)."
    )
    return {"score": score, "narrative": narrative}


# --- fundamentals ---------------------------------------------------------------------------

PE_BANDS: Bands[tuple[float, str]] = (
    (0.0, (-1.0, "negative: the company loses money")),
    (15.0, (1.0, "cheap")),
    (25.0, (0.4, "moderate")),
    (40.0, (-0.3, "rich")),
    (INF, (-0.8, "expensive")),
)
LEVERAGE_BANDS: Bands[tuple[float, str]] = (
    (0.0, (-1.0, "negative: equity is below zero")),
    (0.5, (0.6, "low leverage")),
    (1.5, (0.0, "moderate leverage")),
    (3.0, (-0.5, "high leverage")),
    (INF, (-1.0, "very high leverage")),
)
GROWTH_BANDS: Bands[tuple[float, str]] = (
    (-0.05, (-1.0, "shrinking")),
    (0.05, (0.0, "flat")),
    (INF, (1.0, "growing")),
)
MARGIN_BANDS: Bands[tuple[float, str]] = (
    (0.0, (-1.0, "loss-making")),
    (0.05, (-0.2, "thin")),
    (0.15, (0.3, "healthy")),
    (INF, (0.8, "high")),
)
YEAR_AGO = 4
"""Quarters back to the same quarter of the previous year."""


def _statements(found: Payloads, tool: str) -> list[Statement]:
    """The tool's statements, newest first (as the tools return them)."""
    return sorted(records(found.get(tool, []), Statement), key=lambda s: s.period_end, reverse=True)


def _ratio(
    value: float | None, bands: Bands[tuple[float, str]], label: str, weight: float
) -> list[Evidence]:
    if value is None:
        return []
    vote, meaning = banded(value, bands)
    return [Evidence(vote, weight, f"{label} {value:.2f}: {meaning}")]


def _ratios(found: Payloads) -> list[Evidence]:
    evidence = []
    for profile in records(found.get("get_fundamentals"), Fundamentals)[:1]:
        evidence += _ratio(profile.pe_ratio, PE_BANDS, "P/E", 1.5)
        evidence += _ratio(profile.debt_to_equity, LEVERAGE_BANDS, "debt/equity", 1.0)
    return evidence


def _income(found: Payloads) -> list[Evidence]:
    income = [s for s in _statements(found, "get_income_statement") if "revenue" in s.items]
    if not income:
        return []
    latest = income[0]
    base = income[min(YEAR_AGO, len(income) - 1)]
    evidence = []
    if base is not latest and base.items["revenue"] > 0:
        growth = latest.items["revenue"] / base.items["revenue"] - 1
        vote, meaning = banded(growth, GROWTH_BANDS)
        evidence.append(
            Evidence(
                vote,
                1.5,
                f"revenue {_amount(latest.items['revenue'])} in {latest.fiscal_period} vs "
                f"{_amount(base.items['revenue'])} in {base.fiscal_period}: {_with_sign(growth)} "
                f"({meaning})",
            )
        )
    net = latest.items.get("net_income")
    if net is not None and latest.items["revenue"] > 0:
        margin = net / latest.items["revenue"]
        vote, meaning = banded(margin, MARGIN_BANDS)
        evidence.append(
            Evidence(vote, 1.0, f"net margin {margin:.1%} in {latest.fiscal_period} ({meaning})")
        )
    return evidence


def _balance(found: Payloads) -> list[Evidence]:
    evidence = []
    for sheet in _statements(found, "get_balance_sheet")[:1]:
        equity, cash, debt = (sheet.items.get(k) for k in ("total_equity", "cash", "total_debt"))
        if equity is not None and equity < 0:
            evidence.append(
                Evidence(
                    -1.0,
                    2.0,
                    f"shareholders' equity is negative ({_amount(equity)}) in {sheet.fiscal_period}",
                )
            )
        if cash is not None and debt is not None:
            covered = cash >= debt
            evidence.append(
                Evidence(
                    0.3 if covered else -0.3,
                    0.5,
                    f"cash {_amount(cash)} {'covers' if covered else 'falls short of'} debt "
                    f"{_amount(debt)} in {sheet.fiscal_period}",
                )
            )
    return evidence


def _cash_flow(found: Payloads) -> list[Evidence]:
    return [
        Evidence(
            _sign(flow.items["free_cash_flow"]),
            1.0,
            f"free cash flow {_amount(flow.items['free_cash_flow'])} in {flow.fiscal_period}",
        )
        for flow in _statements(found, "get_cash_flow")[:1]
        if "free_cash_flow" in flow.items
    ]


def _insiders(found: Payloads) -> list[Evidence]:
    trades = records(found.get("get_insider_transactions", []), InsiderTransaction)
    if not trades:
        return []
    bought = sum(t.value for t in trades if t.side.lower() == "buy")
    sold = sum(t.value for t in trades if t.side.lower() == "sell")
    return [
        Evidence(
            0.5 * _sign(bought - sold),
            0.5,
            f"insiders bought {_amount(bought)} and sold {_amount(sold)} in {len(trades)} filed trades",
        )
    ]


FUNDAMENTAL_RULES: tuple[Callable[[Payloads], list[Evidence]], ...] = (
    _ratios,
    _income,
    _balance,
    _cash_flow,
    _insiders,
)


def fundamentals_evidence(found: Payloads) -> list[Evidence]:
    """Valuation, leverage, growth, margins, cash and insiders, then any corporate catastrophe."""
    evidence = [e for rule in FUNDAMENTAL_RULES for e in rule(found)]
    return _events(_news(found, "get_company_news")) + evidence


def negative_equity(found: Payloads) -> str | None:
    """Abort rule: the latest balance sheet shows equity below zero."""
    for sheet in _statements(found, "get_balance_sheet")[:1]:
        equity = sheet.items.get("total_equity")
        if equity is not None and equity < 0:
            return f"negative shareholders' equity of {_amount(equity)} in {sheet.fiscal_period}"
    return None


# --- the analysts' reports ------------------------------------------------------------------

AbortRule = Callable[[Payloads], str | None]


@dataclass(frozen=True)
class Desk:
    """One analyst's rules: its evidence, its abort rules, and the extra fields of its schema."""

    evidence: Callable[[Payloads], list[Evidence]]
    aborts: tuple[AbortRule, ...] = ()
    extra: Callable[[Payloads], dict[str, Any]] = field(default=lambda found: {})
    schema: type[AnalystReport] = AnalystReport


DESKS: dict[AnalystKind, Desk] = {
    AnalystKind.MARKET: Desk(market_evidence, aborts=(crash,)),
    AnalystKind.SOCIAL: Desk(social_evidence, extra=sentiment_fields, schema=SentimentReport),
    AnalystKind.NEWS: Desk(news_evidence),
    AnalystKind.FUNDAMENTALS: Desk(
        fundamentals_evidence, aborts=(negative_equity, corporate_catastrophe)
    ),
}
"""Only the market and fundamentals desks have abort rules, as ``ABORT_ANALYSTS`` allows."""


def weighted_vote(evidence: Sequence[Evidence]) -> float:
    """The weighted mean vote in [-1, 1]; 0 when nothing voted."""
    total = sum(e.weight for e in evidence)
    return sum(e.vote * e.weight for e in evidence) / total if total else 0.0


def _abort(desk: Desk, found: Payloads) -> CriticalAbort:
    reason = next((r for r in (rule(found) for rule in desk.aborts) if r), None)
    return CriticalAbort(flag=reason is not None, reason=reason)


def _confidence(abort: CriticalAbort, score: float, evidence: Sequence[Evidence]) -> float:
    """Near-certain on an abort, 0.1 with nothing that voted, else growing with the vote."""
    if abort.flag:
        return 0.95
    if not any(e.weight > 0 for e in evidence):
        return 0.1
    return round(min(0.9, 0.3 + 0.6 * abs(score)), 2)


def _markdown(heading: str, points: list[KeyPoint], abort: CriticalAbort, gaps: list[str]) -> str:
    lines = "\n".join(f"- ({p.leans.value}) {p.point}" for p in points)
    missing = "".join(f"\n- {gap}" for gap in gaps)
    return (
        f"{heading}\n\n{lines}"
        + (f"\n\n**Critical abort:** {abort.reason}" if abort.flag else "")
        + (f"\n\nData gaps:{missing}" if missing else "")
    )


def analyst_report(kind: AnalystKind, offline: OfflineInput) -> AnalystReport:
    """The report of ``kind``'s analyst from its tool results; with none, no view."""
    desk = DESKS[kind]
    found = payloads((o.name, o.data) for o in offline.tool_outputs if o.ok)
    # A failed call and a "no data in the window" sentence are both gaps the report names.
    gaps = [f"{o.name}: {o.data}" for o in offline.tool_outputs if not o.ok] + [
        f"{name}: {answer}" for name, answer in found.items() if isinstance(answer, str)
    ]
    evidence = sorted(desk.evidence(found), key=lambda e: -abs(e.vote) * e.weight)
    abort = _abort(desk, found)
    score = weighted_vote(evidence)
    stance = Stance.BEARISH if abort.flag else banded(score, STANCE_BANDS)
    confidence = _confidence(abort, score, evidence)
    points = [KeyPoint(point=e.point, leans=e.leans) for e in evidence][:MAX_POINTS]
    if abort.flag:
        points.insert(0, KeyPoint(point=f"critical: {abort.reason}", leans=Stance.BEARISH))
    points = points or [
        KeyPoint(point=f"no {kind.value} data came back from the tools", leans=Stance.NEUTRAL)
    ]
    heading = (
        f"**{kind.value.capitalize()} analyst: {stance.value}** (weighted vote {score:+.2f} "
        f"from {len(evidence)} facts, confidence {confidence:.2f})"
    )
    return desk.schema.model_validate(
        {
            "analyst": kind,
            "stance": stance,
            "confidence": confidence,
            "key_points": points,
            "report_markdown": _markdown(heading, points, abort, gaps),
            "critical_abort": abort,
            **desk.extra(found),
        }
    )


# --- the debates ----------------------------------------------------------------------------

SIDE: dict[Speaker, int] = {
    Speaker.BULL: 1,
    Speaker.BEAR: -1,
    Speaker.AGGRESSIVE: 1,
    Speaker.CONSERVATIVE: -1,
    Speaker.NEUTRAL: 0,
}
"""Which evidence a speaker argues from: researchers by direction; risk debaters for (+1) or
against (-1) the proposal's direction, the neutral one from both."""
SIZING_FACTOR: dict[Speaker, float] = {Speaker.AGGRESSIVE: 1.5, Speaker.CONSERVATIVE: 0.5}
MAX_POSITION = 0.15
"""The Portfolio's cap on one position: no debater argues past it."""
TURN_POINTS = 3


@dataclass(frozen=True)
class Cited:
    """A report's key point, with who made it and how sure they were."""

    analyst: AnalystKind
    confidence: float
    point: KeyPoint

    def text(self) -> str:
        """The point attributed to its analyst."""
        return f"{self.analyst.value}: {self.point.point}"


def cited_points(reports: AnalystReports) -> list[Cited]:
    """Every key point of the reports, the most confident analyst's first."""
    cited = [
        Cited(kind, report.confidence, point)
        for kind, report in reports.by_kind().items()
        for point in report.key_points
    ]
    # Two analysts may quote the same fact (both read company news): cite it once.
    unique = {c.point.point: c for c in sorted(cited, key=lambda c: c.confidence)}
    return sorted(unique.values(), key=lambda c: -c.confidence)


def _direction(speaker: Speaker, proposal: TraderProposal | None) -> int:
    """+1 argues the bullish evidence, -1 the bearish, 0 both."""
    if DEBATE_OF[speaker] is Debate.RESEARCH or proposal is None:
        return SIDE[speaker]
    # A Hold is weighed on its upside: "for" means the bullish evidence.
    return SIDE[speaker] * (ACTION_SIGN[proposal.action] or 1)


def _pick(pool: list[Cited], direction: int, turn: int) -> list[Cited]:
    """The speaker's evidence, rotated so each of its rounds leads with fresh points."""
    if direction:
        mine = [c for c in pool if VOTE_OF_STANCE[c.point.leans] == direction]
    else:
        sides = ([c for c in pool if VOTE_OF_STANCE[c.point.leans] == s] for s in (1, -1))
        mine = [c for pair in zip(*sides, strict=False) for c in pair]
    if not mine:
        return []
    start = (turn - 1) * TURN_POINTS % len(mine)
    return (mine[start:] + mine[:start])[:TURN_POINTS]


def _sizing(speaker: Speaker, inputs: DebaterInputs) -> float | None:
    """Aggressive up, conservative down, neutral the middle of the two's last sizes."""
    if inputs.proposal is None or DEBATE_OF[speaker] is not Debate.RISK:
        return None
    base = inputs.proposal.position_sizing
    if speaker in SIZING_FACTOR:
        return round(min(MAX_POSITION, base * SIZING_FACTOR[speaker]), 4)
    argued = [t.position_sizing for t in inputs.answering(speaker) if t.position_sizing is not None]
    return round(statistics.fmean(argued), 4) if argued else base


LEANING_WORDS: dict[int, str] = {1: "bullish", -1: "bearish", 0: "two-sided"}


def debate_turn(speaker: Speaker, inputs: DebaterInputs) -> DebateTurn:
    """The speaker's turn: its side's strongest evidence, and a rebuttal of the last opponent."""
    direction = _direction(speaker, inputs.proposal)
    round_ = inputs.next_round(speaker)
    picked = _pick(cited_points(inputs.reports), direction, round_)
    points = [c.text() for c in picked] or [
        f"the reports hold no {LEANING_WORDS[direction]} evidence for {inputs.symbol}"
    ]
    answering = inputs.answering(speaker)
    target = answering[0] if answering else None
    sentences = [
        f"The {speaker.value} case on {inputs.symbol}, round {round_}: the "
        f"{LEANING_WORDS[direction]} evidence is {'; '.join(points)}."
    ]
    if target is not None:
        sentences.append(
            f'The {target.speaker.value} argued "{target.key_points[0]}", but that is outweighed '
            f"by {points[0]}."
        )
    sizing = _sizing(speaker, inputs)
    if inputs.proposal is not None and sizing is not None:
        sentences.append(
            f"The trader proposes {render_order(inputs.proposal)}; I argue for {sizing:.1%} "
            "of the portfolio."
        )
    return DebateTurn(
        speaker=speaker,
        round=round_,
        argument=" ".join(sentences),
        rebuttal_of=target.speaker if target else None,
        key_points=points,
        position_sizing=sizing,
    )


# --- research manager, trader, portfolio manager --------------------------------------------

PLAN_BANDS: Bands[Action] = ((-0.2, Action.SELL), (0.2, Action.HOLD), (INF, Action.BUY))
PLAN_STEPS: dict[Action, tuple[str, ...]] = {
    Action.BUY: (
        "Buy {symbol}: {agree} of {count} reports lean bullish (weighted stance {score:+.2f})",
        "Guard against the strongest counterpoint: {against}",
        "Reassess if the {lead} report turns bearish",
    ),
    Action.SELL: (
        "Sell or avoid {symbol}: {agree} of {count} reports lean bearish (weighted stance "
        "{score:+.2f})",
        "Watch what would change the view: {against}",
        "Reassess if the {lead} report turns bullish",
    ),
    Action.HOLD: (
        "Hold {symbol}: the reports balance (weighted stance {score:+.2f})",
        "Buy on confirmation of: {strongest_bull}",
        "Sell on confirmation of: {strongest_bear}",
    ),
}
"""The research plan's steps per recommendation, filled from the reports."""


def report_score(reports: AnalystReports) -> float:
    """Mean of the reports' stances (+1/-1/0) weighted by their confidence, in [-1, 1]."""
    given = list(reports.by_kind().values())
    if not given:
        return 0.0
    return sum(VOTE_OF_STANCE[r.stance] * r.confidence for r in given) / len(given)


def _strongest(pool: list[Cited], direction: int) -> str:
    found = next((c for c in pool if VOTE_OF_STANCE[c.point.leans] == direction), None)
    return found.text() if found else f"no {LEANING_WORDS[direction]} point was made"


def research_plan(inputs: ManagerInputs) -> ResearchPlan:
    """Weigh the reports' stances by confidence; the debate's best points become the steps."""
    reports = inputs.reports.by_kind()
    score = report_score(inputs.reports)
    action = Action.SELL if inputs.reports.critical_abort() else banded(score, PLAN_BANDS)
    sign = ACTION_SIGN[action]
    pool = cited_points(inputs.reports)
    agreeing = [k for k, r in reports.items() if VOTE_OF_STANCE[r.stance] == sign]
    values = {
        "symbol": inputs.symbol,
        "score": score,
        "count": len(reports),
        "agree": len(agreeing),
        "lead": (agreeing[0] if agreeing else AnalystKind.MARKET).value,
        "against": _strongest(pool, -sign or -1),
        "strongest_bull": _strongest(pool, 1),
        "strongest_bear": _strongest(pool, -1),
    }
    stances = ", ".join(
        f"{k.value} {r.stance.value} ({r.confidence:.2f})" for k, r in reports.items()
    )
    heard = sorted({turn.speaker.value for turn in inputs.transcript})
    return ResearchPlan(
        recommendation=action,
        rationale=(
            f"{action.value}: the reports' confidence-weighted stance is {score:+.2f} ({stances}). "
            f"Strongest bullish point: {values['strongest_bull']}. Strongest bearish point: "
            f"{values['strongest_bear']}. Debate heard from: {', '.join(heard) or 'nobody'} "
            f"over {len(inputs.transcript)} turns."
        ),
        strategic_actions=[step.format(**values) for step in PLAN_STEPS[action]],
    )


STOP_RISK_MULTIPLE = 2.0
"""The stop sits this many ATRs (or daily moves) from the entry."""
REWARD_RISK = 1.5
"""The target sits this many stop distances away: within QuantAgent's 1.2-1.8."""
MAX_STOP_SHARE = 0.5
"""A stop is never further than half the price away, however wild the volatility."""
MAX_TRADE_SIZE = 0.10
MIN_TRADE_SIZE = 0.01
"""A Buy or Sell the reports do not back still trades, at a token size."""


def _levels(action: Action, price: float | None, risk: float | None) -> dict[str, float | None]:
    sign = ACTION_SIGN[action]
    if price is None or risk is None or not sign:
        return {"entry_price": price, "stop_loss": None, "take_profit": None}
    distance = min(risk, MAX_STOP_SHARE * price)
    return {
        "entry_price": price,
        "stop_loss": float(f"{price - sign * distance:.6g}"),
        "take_profit": float(f"{price + sign * REWARD_RISK * distance:.6g}"),
    }


def _risk(inputs: TraderInputs) -> tuple[float | None, str]:
    """The stop distance in price units and what it was measured from: ATR, else volatility."""
    if inputs.atr is not None:
        return STOP_RISK_MULTIPLE * inputs.atr, f"{STOP_RISK_MULTIPLE:g} × ATR {inputs.atr:.4g}"
    if inputs.volatility is not None and inputs.last_price is not None:
        return (
            STOP_RISK_MULTIPLE * inputs.volatility * inputs.last_price,
            f"{STOP_RISK_MULTIPLE:g} daily moves ({inputs.volatility:.2%})",
        )
    return None, "no ATR or volatility was given, so no stop or target is set"


def trader_proposal(inputs: TraderInputs) -> TraderProposal:
    """The plan as an order: entry at the last price, stop and target from ATR or volatility,
    size from the confidence of the reports that agree."""
    action = inputs.research_plan.recommendation
    sign = ACTION_SIGN[action]
    risk, basis = _risk(inputs)
    reports = list(inputs.reports.by_kind().values())
    agreeing = [r for r in reports if sign and VOTE_OF_STANCE[r.stance] == sign]
    conviction = sum(r.confidence for r in agreeing) / len(reports) if reports else 0.0
    sizing = round(max(MIN_TRADE_SIZE, MAX_TRADE_SIZE * conviction), 4) if sign else 0.0
    price = inputs.last_price
    return TraderProposal(
        action=action,
        reasoning=(
            f"{action.value} {inputs.symbol} as the research plan recommends. Entry at the last "
            f"price {price if price is not None else 'unknown'}; risk distance from {basis}; "
            f"target at {REWARD_RISK:g}× the risk. {len(agreeing)} of {len(reports)} reports agree, "
            f"so {sizing:.1%} of the portfolio."
        ),
        position_sizing=sizing,
        **_levels(action, price, risk),
    )


RATING_BANDS: Bands[Rating] = (
    (-0.6, Rating.SELL),
    (-0.2, Rating.UNDERWEIGHT),
    (0.2, Rating.HOLD),
    (0.6, Rating.OVERWEIGHT),
    (INF, Rating.BUY),
)
DECISION_WEIGHTS = {"proposal": 0.5, "plan": 0.3, "reports": 0.2}
"""How much the trader's action, the research plan and the reports' stance count."""
TIME_HORIZON = "1-3 months"
SIGN_OF_SIGNAL: dict[TradeSignal, int] = {
    TradeSignal.BUY: 1,
    TradeSignal.HOLD: 0,
    TradeSignal.SELL: -1,
}


def _risk_consensus(inputs: ManagerInputs) -> float | None:
    """The size the risk debate settled on: the neutral debater's last, else the mean."""
    sizes = [
        (t.speaker, t.position_sizing) for t in inputs.transcript if t.position_sizing is not None
    ]
    neutral = [size for speaker, size in sizes if speaker is Speaker.NEUTRAL]
    if neutral:
        return neutral[-1]
    return statistics.fmean(size for _, size in sizes) if sizes else None


def _aborted(report: AnalystReport, symbol: str) -> PortfolioDecision:
    reason = report.critical_abort.reason or "unstated"
    return PortfolioDecision(
        rating=Rating.SELL,
        executive_summary=f"Sell {symbol}: the {report.analyst.value} analyst raised a critical "
        f"abort: {reason}.",
        investment_thesis="A catastrophic condition overrides every other signal; the debates "
        "and the trader were skipped and no position is held through it.",
        time_horizon="immediate",
        abort_reason=reason,
    )


def portfolio_decision(inputs: ManagerInputs) -> PortfolioDecision:
    """Sell on a critical abort; else the weighted call of proposal, plan and reports, scaled by
    how the risk debate resized the position."""
    aborted = inputs.reports.critical_abort()
    if aborted is not None:
        return _aborted(aborted, inputs.symbol)
    plan, proposal = inputs.research_plan, inputs.proposal
    if plan is None or proposal is None:
        raise InvalidInput("context", "the portfolio manager needs research_plan and proposal")
    parts = {
        "proposal": ACTION_SIGN[proposal.action],
        "plan": ACTION_SIGN[plan.recommendation],
        "reports": report_score(inputs.reports),
    }
    score = sum(DECISION_WEIGHTS[name] * value for name, value in parts.items())
    consensus = _risk_consensus(inputs)
    scale = 1.0
    if consensus is not None and proposal.position_sizing > 0:
        scale = max(0.5, min(1.5, consensus / proposal.position_sizing))
    rating = banded(max(-1.0, min(1.0, score * scale)), RATING_BANDS)
    signal = SIGNAL_OF_RATING[rating]
    agrees = SIGN_OF_SIGNAL[signal] != 0 and SIGN_OF_SIGNAL[signal] == ACTION_SIGN[proposal.action]
    size = f"{consensus:.1%}" if consensus is not None else f"{proposal.position_sizing:.1%}"
    return PortfolioDecision(
        rating=rating,
        executive_summary=f"{rating.value} {inputs.symbol} at a {size} position: weighted score "
        f"{score:+.2f} × risk-debate sizing {scale:.2f}.",
        investment_thesis=f"Plan: {render_plan(plan)}\nProposal: {render_proposal(proposal)}",
        price_target=proposal.take_profit if agrees else None,
        time_horizon=TIME_HORIZON,
    )


# --- registration ---------------------------------------------------------------------------

TEXT_OF: dict[type[BaseModel], Callable[[Any], str]] = {
    AnalystReport: lambda r: r.report_markdown,
    SentimentReport: lambda r: r.report_markdown,
    DebateTurn: lambda t: t.argument,
    ResearchPlan: render_plan,
    TraderProposal: render_proposal,
    PortfolioDecision: lambda d: f"{d.executive_summary}\n\n{d.investment_thesis}",
}
"""The free-text answer of each schema, for requests that ask for no structured output."""


def _offline(agent: str, build: Callable[[OfflineInput], BaseModel]) -> OfflineAnalyst:
    """``build`` as an offline analyst that writes only its agent's schema."""
    expected = AGENTS[agent].schema

    def answer(offline: OfflineInput, schema: str | None) -> OfflineAnswer:
        if schema not in (None, expected.__name__):
            raise InvalidInput(
                "response_schema",
                f"the offline {agent} writes {expected.__name__}, not {schema!r}",
                fix=f"Ask {agent} for {expected.__name__}.",
            )
        result = build(offline)
        return OfflineAnswer(text=TEXT_OF[expected](result), structured=result)

    return answer


def _reading(
    model: type[BaseModel], decide: Callable[[Any], BaseModel]
) -> Callable[[OfflineInput], BaseModel]:
    """``decide`` over the request context validated as ``model`` (the agent's inputs)."""
    return lambda offline: decide(model.model_validate(offline.context))


OFFLINE_BUILDERS: dict[str, Callable[[OfflineInput], BaseModel]] = {
    **{agent: partial(analyst_report, kind) for kind, agent in ANALYST_AGENTS.items()},
    **{
        agent: _reading(DebaterInputs, partial(debate_turn, speaker))
        for speaker, agent in DEBATER_AGENTS.items()
    },
    RESEARCH_MANAGER: _reading(ManagerInputs, research_plan),
    TRADER: _reading(TraderInputs, trader_proposal),
    PORTFOLIO_MANAGER: _reading(ManagerInputs, portfolio_decision),
}
"""Every agent of the Pipeline, by name, with the rules that answer for it offline."""

for _agent, _build in OFFLINE_BUILDERS.items():
    register_analyst(_agent, _offline(_agent, _build))
