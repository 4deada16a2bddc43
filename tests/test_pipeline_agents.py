"""The Pipeline's agents: schemas that refuse contradictions, and prompts that show each agent
only what it should (the offline agents that answer them are test_pipeline_offline_agents.py).
"""

from __future__ import annotations

from collections.abc import Callable
from datetime import UTC, datetime
from typing import Any

import pytest
from pydantic import ValidationError

from shared.agents.missing import MissingStep
from shared.agents.pipeline import prompts, roles
from shared.agents.pipeline.inputs import (
    AnalystInputs,
    AnalystReports,
    DebaterInputs,
    ManagerInputs,
    TraderInputs,
)
from shared.agents.pipeline.roles import AGENTS, ManagerKind
from shared.agents.pipeline.schemas import (
    Action,
    AnalystKind,
    AnalystReport,
    CriticalAbort,
    Debate,
    DebateTurn,
    PortfolioDecision,
    Rating,
    ResearchPlan,
    SentimentBand,
    SentimentReport,
    Speaker,
    TraderProposal,
    TradeSignal,
)
from shared.agents.schemas import Stance
from shared.errors import InvalidInput
from shared.llm.contracts import ChatMessage
from shared.llm.offline.engine import analyst_for, generic_analyst
from shared.llm.providers import LlmRole

AS_OF = datetime(2016, 3, 2, 21, 0, tzinfo=UTC)
SYMBOL = "ACME"


def _report(kind: AnalystKind, text: str, **fields: Any) -> AnalystReport:
    model = SentimentReport if kind is AnalystKind.SOCIAL else AnalystReport
    extra = {"score": 5.0, "narrative": "calm"} if model is SentimentReport else {}
    return model.model_validate(
        {
            "analyst": kind,
            "stance": "neutral",
            "confidence": 0.5,
            "key_points": [{"point": f"{kind.value} point", "leans": "neutral"}],
            "report_markdown": text,
            **extra,
            **fields,
        }
    )


MARKED = AnalystReports.of(_report(kind, f"TEXT-OF-{kind.value.upper()}") for kind in AnalystKind)


def _proposal(action: Action, stop: float, entry: float, target: float) -> TraderProposal:
    return TraderProposal(
        action=action,
        reasoning=f"plan says {action.value.lower()}",
        entry_price=entry,
        stop_loss=stop,
        take_profit=target,
        position_sizing=0.05,
    )


PROPOSAL = _proposal(Action.BUY, stop=96, entry=100, target=106)
PLAN = ResearchPlan(recommendation=Action.BUY, rationale="strong", strategic_actions=["buy"])


def _turn(speaker: Speaker, argument: str, **fields: Any) -> DebateTurn:
    return DebateTurn(speaker=speaker, round=1, argument=argument, key_points=[argument], **fields)


def _text(messages: list[ChatMessage]) -> str:
    return "\n".join(message.content for message in messages)


# --- schemas --------------------------------------------------------------------------------


@pytest.mark.parametrize("kind", [AnalystKind.MARKET, AnalystKind.FUNDAMENTALS])
def test_market_and_fundamentals_analysts_may_raise_a_critical_abort(kind: AnalystKind) -> None:
    report = _report(kind, "text", critical_abort={"flag": True, "reason": "delisted"})

    assert report.critical_abort.flag


@pytest.mark.parametrize("kind", [AnalystKind.NEWS, AnalystKind.SOCIAL])
def test_a_news_or_social_abort_becomes_a_bearish_key_point(kind: AnalystKind) -> None:
    report = _report(kind, "text", critical_abort={"flag": True, "reason": "scary posts"})

    assert not report.critical_abort.flag and report.critical_abort.reason is None
    alarm = report.key_points[-1]
    assert alarm.leans is Stance.BEARISH
    assert "only the fundamentals and market analysts may: scary posts" in alarm.point
    assert AnalystReports.of([report]).critical_abort() is None


def test_a_raised_abort_needs_a_reason_and_an_unraised_one_keeps_none() -> None:
    with pytest.raises(ValidationError, match="needs its reason"):
        CriticalAbort(flag=True, reason=" ")

    assert CriticalAbort(flag=False, reason="nothing catastrophic").reason is None


@pytest.mark.parametrize(
    ("score", "band"),
    [
        (0.0, SentimentBand.VERY_NEGATIVE),
        (3.9, SentimentBand.NEGATIVE),
        (5.0, SentimentBand.NEUTRAL),
        (6.0, SentimentBand.POSITIVE),
        (10.0, SentimentBand.VERY_POSITIVE),
    ],
)
def test_the_sentiment_band_is_derived_from_the_score_whatever_the_model_said(
    score: float, band: SentimentBand
) -> None:
    report = _report(AnalystKind.SOCIAL, "text", band="very_negative", score=score)

    assert report.band is band
    assert report.model_dump(mode="json")["band"] == band.value
    assert "band" not in SentimentReport.model_json_schema()["properties"]


@pytest.mark.parametrize(
    ("action", "stop", "entry", "target"),
    [
        (Action.BUY, 105.0, 100.0, 110.0),
        (Action.BUY, 95.0, 100.0, 99.0),
        (Action.SELL, 95, 100, 90),
    ],
)
def test_trade_levels_on_the_wrong_side_of_the_entry_are_refused(
    action: Action, stop: float, entry: float, target: float
) -> None:
    with pytest.raises(ValidationError, match="must be below"):
        _proposal(action, stop, entry, target)


def test_a_short_has_its_stop_above_and_its_target_below_the_entry() -> None:
    short = _proposal(Action.SELL, stop=105, entry=100, target=90)

    assert short.take_profit is not None and short.take_profit < short.entry_price < 105


@pytest.mark.parametrize(
    ("rating", "signal"),
    [
        (Rating.BUY, TradeSignal.BUY),
        (Rating.OVERWEIGHT, TradeSignal.BUY),
        (Rating.HOLD, TradeSignal.HOLD),
        (Rating.UNDERWEIGHT, TradeSignal.SELL),
        (Rating.SELL, TradeSignal.SELL),
    ],
)
def test_the_decision_signal_follows_from_the_rating(rating: Rating, signal: TradeSignal) -> None:
    fields = {"rating": rating, "executive_summary": "s", "investment_thesis": "t"}
    decision = PortfolioDecision.model_validate({**fields, "time_horizon": "3 months"})

    assert decision.signal is signal
    wrong = next(s for s in TradeSignal if s is not signal)
    told = PortfolioDecision.model_validate({**fields, "time_horizon": "3m", "signal": wrong})
    assert told.signal is signal
    assert "signal" not in PortfolioDecision.model_json_schema()["properties"]


def test_a_critical_abort_allows_only_sell_or_underweight() -> None:
    fields = {"executive_summary": "s", "investment_thesis": "t", "time_horizon": "now"}
    with pytest.raises(ValidationError, match="only Sell or Underweight"):
        PortfolioDecision.model_validate({**fields, "rating": "Hold", "abort_reason": "fraud"})

    assert PortfolioDecision.model_validate(
        {**fields, "rating": "Underweight", "abort_reason": "x"}
    )


def test_debate_turns_are_normalised_into_their_debate() -> None:
    assert _turn(Speaker.BULL, "a", rebuttal_of=Speaker.AGGRESSIVE).rebuttal_of is None
    assert _turn(Speaker.BULL, "a", rebuttal_of=Speaker.BULL).rebuttal_of is None
    assert _turn(Speaker.BEAR, "a", rebuttal_of=Speaker.BULL).rebuttal_of is Speaker.BULL
    assert _turn(Speaker.BEAR, "a", position_sizing=0.1).position_sizing is None
    assert _turn(Speaker.NEUTRAL, "a", position_sizing=0.1).position_sizing == 0.1


def test_a_report_given_under_another_analysts_name_is_refused() -> None:
    with pytest.raises(ValidationError, match="the news report was given as fundamentals"):
        AnalystReports(fundamentals=_report(AnalystKind.NEWS, "news"))


NEWS_MISSING = MissingStep(
    step="news_analyst",
    reason="its reply did not match AnalystReport: the reply holds no JSON object",
    raw_reply_key="s3://payloads/pipeline/run/news_analyst.raw.txt",
)


def test_a_missing_report_is_named_with_its_reason_where_it_would_have_been_read() -> None:
    given = [_report(kind, f"TEXT-OF-{kind.value}") for kind in AnalystKind]
    reports = AnalystReports.of(
        [r for r in given if r.analyst is not AnalystKind.NEWS], {AnalystKind.NEWS: NEWS_MISSING}
    )
    inputs = DebaterInputs(symbol=SYMBOL, reports=reports)

    text = _text(prompts.debater_messages(Speaker.BULL, inputs))

    news = text.split("### News analyst report\n", 1)[1]
    assert news.startswith("MISSING: news_analyst gave no usable output (its reply did not")
    assert NEWS_MISSING.raw_reply_key in news and "do not guess" in text
    assert "TEXT-OF-market" in text and "TEXT-OF-news" not in text
    with pytest.raises(ValidationError, match="given and also marked missing"):
        AnalystReports.of(given, {AnalystKind.NEWS: NEWS_MISSING})


# --- roles and prompts ----------------------------------------------------------------------


def test_managers_use_the_deep_model_and_everyone_else_the_quick_one() -> None:
    deep = {name for name, row in AGENTS.items() if row.llm_role is LlmRole.DEEP}

    assert deep == {roles.RESEARCH_MANAGER, roles.PORTFOLIO_MANAGER}
    assert len(AGENTS) == 12


def test_every_agent_has_an_offline_analyst() -> None:
    assert all(analyst_for(agent) is not generic_analyst for agent in AGENTS)


def test_debates_alternate_their_speakers_for_the_rounds_asked() -> None:
    assert roles.speaking_order(Debate.RESEARCH, 2) == [Speaker.BULL, Speaker.BEAR] * 2
    assert roles.speaking_order(Debate.RISK) == [
        Speaker.AGGRESSIVE,
        Speaker.CONSERVATIVE,
        Speaker.NEUTRAL,
    ]


def _heading_before(text: str, marker: str) -> str:
    before = text[: text.index(marker)]
    return before[before.rindex("### ") + 4 :].split("\n", 1)[0]


@pytest.mark.parametrize(
    "build",
    [
        lambda: prompts.debater_messages(
            Speaker.CONSERVATIVE, DebaterInputs(symbol=SYMBOL, reports=MARKED, proposal=PROPOSAL)
        ),
        lambda: prompts.manager_messages(
            ManagerKind.PORTFOLIO_MANAGER,
            ManagerInputs(symbol=SYMBOL, reports=MARKED, research_plan=PLAN, proposal=PROPOSAL),
        ),
        lambda: prompts.trader_messages(
            TraderInputs(symbol=SYMBOL, reports=MARKED, research_plan=PLAN)
        ),
    ],
    ids=["risk_debater", "portfolio_manager", "trader"],
)
def test_each_report_appears_once_under_its_own_heading(
    build: Callable[[], list[ChatMessage]],
) -> None:
    text = _text(build())

    for kind in AnalystKind:
        marker = f"TEXT-OF-{kind.value.upper()}"
        assert text.count(marker) == 1
        assert _heading_before(text, marker) == prompts.REPORT_HEADINGS[kind]


def test_the_bull_answers_the_bears_last_argument() -> None:
    transcript = [_turn(Speaker.BULL, "growth is strong"), _turn(Speaker.BEAR, "BEAR-LAST-POINT")]
    inputs = DebaterInputs(symbol=SYMBOL, reports=MARKED, transcript=transcript)

    text = _text(prompts.debater_messages(Speaker.BULL, inputs))

    answer = text[text.index("## The arguments to answer") :]
    assert "BEAR-LAST-POINT" in answer.split("## Task")[0]
    assert 'rebuttal_of to "bear"' in text
    assert "round 2" in text


def test_memories_are_shown_only_when_given() -> None:
    inputs = DebaterInputs(symbol=SYMBOL, reports=MARKED, memories="LESSON: sold too early")

    assert "LESSON: sold too early" in _text(prompts.debater_messages(Speaker.BEAR, inputs))
    blank = inputs.model_copy(update={"memories": ""})
    assert "Lessons from similar" not in _text(prompts.debater_messages(Speaker.BEAR, blank))


def test_bull_and_bear_prompts_differ_only_by_their_role() -> None:
    inputs = DebaterInputs(symbol=SYMBOL, reports=MARKED)
    bull, bear = (prompts.DEBATER_BRIEFS[s] for s in (Speaker.BULL, Speaker.BEAR))

    bull_text = _text(prompts.debater_messages(Speaker.BULL, inputs))
    bear_text = _text(prompts.debater_messages(Speaker.BEAR, inputs))

    swapped = (
        bull_text.replace(bull.title, bear.title)
        .replace(bull.brief, bear.brief)
        .replace('speaker "bull"', 'speaker "bear"')
    )
    assert bull_text != bear_text
    assert swapped == bear_text


def test_researchers_never_see_the_proposal_and_risk_debaters_need_it() -> None:
    with_proposal = DebaterInputs(symbol=SYMBOL, reports=MARKED, proposal=PROPOSAL)

    assert "plan says buy" not in _text(prompts.debater_messages(Speaker.BULL, with_proposal))
    assert "plan says buy" in _text(prompts.debater_messages(Speaker.NEUTRAL, with_proposal))
    with pytest.raises(InvalidInput, match="proposal"):
        prompts.debater_messages(Speaker.AGGRESSIVE, DebaterInputs(symbol=SYMBOL, reports=MARKED))


def test_a_debater_refuses_a_transcript_of_the_other_debate() -> None:
    inputs = DebaterInputs(
        symbol=SYMBOL, reports=MARKED, transcript=[_turn(Speaker.BULL, "a")], proposal=PROPOSAL
    )

    with pytest.raises(InvalidInput, match="turns of bull"):
        prompts.debater_messages(Speaker.NEUTRAL, inputs)


def test_the_research_manager_decides_before_the_proposal_exists() -> None:
    inputs = ManagerInputs(symbol=SYMBOL, reports=MARKED, proposal=PROPOSAL)

    with pytest.raises(InvalidInput, match="proposal"):
        prompts.manager_messages(ManagerKind.RESEARCH_MANAGER, inputs)
    with pytest.raises(InvalidInput, match="research_plan"):
        prompts.manager_messages(ManagerKind.PORTFOLIO_MANAGER, inputs)


def test_after_an_abort_the_portfolio_manager_is_told_the_reason_and_to_sell() -> None:
    aborting = _report(
        AnalystKind.FUNDAMENTALS,
        "text",
        critical_abort={"flag": True, "reason": "ACME filed for Chapter 11"},
    )
    reports = MARKED.model_copy(update={"reports": {**MARKED.reports, aborting.analyst: aborting}})

    text = _text(
        prompts.manager_messages(
            ManagerKind.PORTFOLIO_MANAGER, ManagerInputs(symbol=SYMBOL, reports=reports)
        )
    )

    assert "The fundamentals analyst raised a critical abort: ACME filed for Chapter 11" in text
    assert "Sell or Underweight" in text
    assert "risk debate" not in text


def test_only_market_and_fundamentals_analysts_are_told_they_may_abort() -> None:
    inputs = AnalystInputs(symbol=SYMBOL, as_of=AS_OF)
    texts = {kind: _text(prompts.analyst_messages(kind, inputs)) for kind in AnalystKind}

    may = {kind for kind, text in texts.items() if prompts.abort_rule(True) in text}
    assert may == {AnalystKind.MARKET, AnalystKind.FUNDAMENTALS}
    assert "get_indicators" in texts[AnalystKind.MARKET]
    assert "get_social_posts" in texts[AnalystKind.SOCIAL]


def test_analyst_prompts_show_the_macro_context_and_position_when_given() -> None:
    inputs = AnalystInputs(
        symbol=SYMBOL, as_of=AS_OF, macro_context="MACRO: rates rising", position={"shares": 10}
    )

    text = _text(prompts.analyst_messages(AnalystKind.NEWS, inputs))

    assert "MACRO: rates rising" in text
    assert '"shares": 10' in text
