"""The geopolitical scanner: its spec, and its offline reading of world and topic news."""

from __future__ import annotations

import statistics
from collections import Counter
from collections.abc import Sequence

from shared.agents.pipeline.evidence import banded
from shared.agents.pipeline.news_analyst import TONE_BANDS
from shared.agents.scan.facts import (
    found,
)
from shared.agents.scan.inputs import ScannerInputs
from shared.agents.scan.reading import scanner_report, scanner_spec, tool_answers
from shared.agents.scan.roles import (
    GEOPOLITICAL_SCANNER,
    ScannerKind,
)
from shared.agents.scan.schemas import (
    ScannerReport,
)
from shared.agents.spec import AgentSpec
from shared.data.contracts import (
    NewsItem,
)
from shared.llm.offline.reading import OfflineInput
from shared.tools.catalog import (
    GEOPOLITICAL_TOOLS,
)

GEOPOLITICAL_TOPICS = frozenset({"geopolitics"})
RISK_TONE = -0.1
"""A geopolitical article at or below this sentiment is a risk the synthesis should weigh."""
MARKET_RISK_TONE = -0.3
"""A non-company world article this negative (energy, inflation...) is a market risk too."""
NEWSWORTHY = 0.5
"""Company news this strong either way makes a name worth a look."""


def _tone(items: Sequence[NewsItem]) -> tuple[float, str] | None:
    scored = [item.sentiment for item in items if item.sentiment is not None]
    if not scored:
        return None
    mean = statistics.fmean(scored)
    return mean, banded(mean, TONE_BANDS)[1]


def _risk_line(item: NewsItem) -> str:
    return f'"{item.title}" ({item.published_at:%Y-%m-%d}, sentiment {item.sentiment:+.2f})'


def geopolitical_report(
    spec: AgentSpec[ScannerInputs, ScannerReport], inputs: ScannerInputs, offline: OfflineInput
) -> ScannerReport:
    """The tone of geopolitical and world news, its worst headlines, and news-driven names."""
    answers = tool_answers(offline)
    topic = found(answers, "get_topic_news", NewsItem)
    world = found(answers, "get_global_news", NewsItem)
    items = list({item.id: item for item in [*topic, *world]}.values())
    geo = [i for i in items if i in topic or GEOPOLITICAL_TOPICS & set(i.topics)]
    day = f"{inputs.as_of:%Y-%m-%d}"
    findings, headline = [], f"No geopolitical news in the week to {day}"
    geo_tone = _tone(geo)
    if geo_tone:
        mean, label = geo_tone
        findings.append(
            f"{len(geo)} geopolitical articles in the week to {day}, mean sentiment "
            f"{mean:+.2f} ({label})"
        )
    world_tone = _tone(world)
    if world_tone:
        topics = Counter(t for item in world for t in item.topics).most_common(5)
        findings.append(
            f"world and market news: {len(world)} articles, mean sentiment {world_tone[0]:+.2f} "
            f"({world_tone[1]}); topics {', '.join(f'{t} {n}' for t, n in topics)}"
        )
    scored = sorted((i for i in items if i.sentiment is not None), key=lambda i: i.sentiment or 0.0)
    risky = [i for i in scored if i in geo and (i.sentiment or 0.0) <= RISK_TONE]
    risky += [
        i
        for i in scored
        if i not in geo and "company" not in i.topics and (i.sentiment or 0.0) <= MARKET_RISK_TONE
    ]
    findings += [f"headline {_risk_line(item)}" for item in risky[:3]]
    if geo_tone:
        headline = (
            f"Geopolitical news is {geo_tone[1]} ({len(geo)} articles, mean "
            f"{geo_tone[0]:+.2f}) with {len(risky)} risk headlines"
        )
    loud = sorted(
        (i for i in items if i.symbols and abs(i.sentiment or 0.0) >= NEWSWORTHY),
        key=lambda i: -abs(i.sentiment or 0.0),
    )
    return scanner_report(
        "Geopolitical scan",
        headline,
        findings,
        offline,
        tickers=[symbol for item in loud for symbol in item.symbols],
        risks=[_risk_line(item) for item in risky],
    )


SPEC = scanner_spec(
    ScannerKind.GEOPOLITICAL,
    GEOPOLITICAL_SCANNER,
    title="the geopolitical scanner",
    focus="Read the geopolitical and world news of the last week (topics such as geopolitics, "
    "energy, central-bank, macro): conflicts, sanctions, trade, elections, commodity "
    "shocks. Count the articles, quote the tone, and list the risks that could move "
    "markets, worst first.",
    tools=GEOPOLITICAL_TOOLS,
    rule=geopolitical_report,
)
