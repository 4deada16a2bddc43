"""The news and macro analyst: its spec, and its offline reading of news (which the social
and fundamentals analysts share)."""

from __future__ import annotations

import re
import statistics
from collections.abc import Sequence

from shared.agents.pipeline.analyst import Desk, analyst_spec
from shared.agents.pipeline.evidence import INF, Bands, Evidence, banded, counted
from shared.agents.pipeline.facts import Payloads, records
from shared.data.contracts import (
    MacroSeries,
    NewsItem,
)
from shared.tools.catalog import NEWS_TOOLS

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


def news_items(found: Payloads, *tools: str) -> list[NewsItem]:
    """The articles ``tools`` returned, in the order they came."""
    return [item for tool in tools for item in records(found.get(tool, []), NewsItem)]


def tone_evidence(items: Sequence[NewsItem], label: str, weight: float) -> list[Evidence]:
    """The articles' mean tone as one vote of ``weight`` (informative only if none is scored)."""
    scored = [item.sentiment for item in items if item.sentiment is not None]
    if not scored:
        return (
            [Evidence(0.0, 0.0, f"{label}: {counted(len(items), 'article')}, none with a tone")]
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
            f"{label}: {counted(len(items), 'article')}, mean sentiment {mean:+.2f} ({tone}; "
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


def event_evidence(items: Sequence[NewsItem]) -> list[Evidence]:
    """A heavy bearish vote for each catastrophe an article reports."""
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
    company = news_items(found, "get_company_news")
    world = news_items(found, "get_global_news", "get_topic_news")
    return (
        event_evidence(company)
        + tone_evidence(company, "company news", 2.0)
        + tone_evidence(world, "world and market news", 1.0)
        + _headlines(company)
        + _macro(found)
    )


SPEC = analyst_spec(
    "news",
    title="the news and macro analyst",
    focus="Read the company's news, the world and market news and the macro series behind them "
    "(rates, inflation, jobs): what happened, how the coverage leans, what it means for the "
    "stock. Count the articles and quote the tone.",
    tools=NEWS_TOOLS,
    heading="News analyst report",
    desk=Desk(news_evidence),
)
