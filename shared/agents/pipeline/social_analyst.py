"""The social-media sentiment analyst: its spec, and its offline reading of the crowd's mood."""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

from shared.agents.pipeline.analyst import Desk, analyst_spec
from shared.agents.pipeline.evidence import Evidence
from shared.agents.pipeline.facts import Payloads, records
from shared.agents.pipeline.news_analyst import (
    POSITIVE_TONE,
    news_items,
    tone_evidence,
)
from shared.agents.pipeline.schemas import (
    SentimentReport,
    band_for_score,
)
from shared.data.contracts import (
    SocialPost,
)
from shared.tools.catalog import SOCIAL_TOOLS

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
    return evidence + tone_evidence(news_items(found, "get_company_news"), "company news", 1.0)


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


SPEC = analyst_spec(
    "social",
    title="the social-media sentiment analyst",
    focus="Read what people post about the company over the last week, weighting posts by their "
    "reach, and the news they react to. Give the crowd's mood as a 0-10 score (0 very "
    "negative, 5 neutral, 10 very positive; its band follows from it) and a short narrative.",
    tools=SOCIAL_TOOLS,
    heading="Social sentiment report",
    desk=Desk(social_evidence, extra=sentiment_fields),
    output=SentimentReport,
)
