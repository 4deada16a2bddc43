"""The Pipeline's offline agents: analysts that read the data and reach opposite calls on
opposite data, the debaters, the trader and the managers, and the whole chain.

Tool answers are written in the data tools' own frame (``{"as_of", "vendor", "simulated",
"data"}``), and one test runs the whole chain over the real tools on the sim market. The
marked reports, the plan and the proposal are the ones test_pipeline_agents.py builds for
the prompts.
"""

from __future__ import annotations

import json
from datetime import timedelta
from typing import Any

import pytest
from pydantic import BaseModel

from shared.agents.pipeline import prompts, roles
from shared.agents.pipeline.facts import payloads_of_results, price_facts
from shared.agents.pipeline.inputs import (
    AnalystInputs,
    AnalystReports,
    DebaterInputs,
    ManagerInputs,
    TraderInputs,
)
from shared.agents.pipeline.roles import AGENTS, ANALYST_AGENTS, DEBATER_AGENTS, ManagerKind
from shared.agents.pipeline.schemas import (
    Action,
    AnalystKind,
    AnalystReport,
    Debate,
    DebateTurn,
    KeyPoint,
    PortfolioDecision,
    Rating,
    SentimentBand,
    SentimentReport,
    Speaker,
    TraderProposal,
    TradeSignal,
)
from shared.agents.schemas import Stance
from shared.data.contracts import DataKind
from shared.data.router import DataRouter
from shared.data.sim import SimVendor
from shared.errors import InvalidInput
from shared.llm.contracts import ChatMessage, ChatRequest, ToolCall, ToolRequest, ToolResult
from shared.llm.offline import answer_offline
from shared.llm.providers import OFFLINE_MODEL
from shared.tools.capping import MAX_CONTENT_CHARS, preview
from shared.tools.registry import ToolServices, run_tool, tool_specs
from tests.test_pipeline_agents import AS_OF, MARKED, PLAN, PROPOSAL, SYMBOL, _report

Answers = dict[str, Any]


# --- tool answers in the tools' frame -------------------------------------------------------


def _ohlcv(closes: list[float]) -> dict[str, Any]:
    start = AS_OF - timedelta(days=len(closes))
    rows = [
        [(start + timedelta(days=i)).isoformat(), c, c * 1.01, c * 0.99, c, 1e6]
        for i, c in enumerate(closes)
    ]
    columns = ["time", "open", "high", "low", "close", "volume"]
    return {
        "symbol": SYMBOL,
        "timeframe": "1d",
        "bars": len(rows),
        "columns": columns,
        "rows": rows,
    }


def _indicators(**latest: float) -> dict[str, Any]:
    table = {name: {"description": name, "values": [v], "latest": v} for name, v in latest.items()}
    return {"symbol": SYMBOL, "timeframe": "1d", "times": [AS_OF.isoformat()], "indicators": table}


def _news(*headlines: tuple[str, float]) -> list[dict[str, Any]]:
    return [
        {
            "id": f"n{i}",
            "published_at": (AS_OF - timedelta(hours=i + 1)).isoformat(),
            "title": title,
            "summary": title,
            "source": "Test Wire",
            "symbols": [SYMBOL],
            "sentiment": sentiment,
        }
        for i, (title, sentiment) in enumerate(headlines)
    ]


def _posts(*posts: tuple[str, float, int]) -> list[dict[str, Any]]:
    return [
        {
            "id": f"p{i}",
            "posted_at": (AS_OF - timedelta(hours=i + 1)).isoformat(),
            "author": f"@user{i}",
            "text": text,
            "symbol": SYMBOL,
            "likes": likes,
            "sentiment": sentiment,
        }
        for i, (text, sentiment, likes) in enumerate(posts)
    ]


def _statements(kind: str, *periods: dict[str, float]) -> list[dict[str, Any]]:
    """Statements newest first, one per quarter back from 2015Q4."""
    ends = ["2015-12-31", "2015-09-30", "2015-06-30", "2015-03-31", "2014-12-31"]
    names = ["2015Q4", "2015Q3", "2015Q2", "2015Q1", "2014Q4"]
    return [
        {
            "symbol": SYMBOL,
            "kind": kind,
            "fiscal_period": names[i],
            "period_end": ends[i],
            "reported_at": "2016-02-08T21:05:00Z",
            "items": items,
        }
        for i, items in enumerate(periods)
    ]


def _fundamentals(pe: float, debt_to_equity: float) -> dict[str, Any]:
    return {
        "symbol": SYMBOL,
        "as_of": AS_OF.isoformat(),
        "name": "Acme Corp",
        "sector": None,
        "industry": None,
        "pe_ratio": pe,
        "debt_to_equity": debt_to_equity,
    }


def _scenario(up: bool) -> dict[AnalystKind, Answers]:
    """Every analyst's tool answers for a company doing well (``up``) or badly."""
    sign = 1 if up else -1
    closes = [100 * (1 + sign * 0.004) ** i for i in range(60)]
    last = closes[-1]
    tone = 0.6 * sign
    return {
        AnalystKind.MARKET: {
            "get_ohlcv": _ohlcv(closes),
            "get_indicators": _indicators(
                sma_50=last * (1 - 0.05 * sign),
                sma_200=last * (1 - 0.10 * sign),
                ema_10=last * (1 - 0.01 * sign),
                rsi=50 + 12 * sign,
                macd=1.0 * sign,
                macds=0.5 * sign,
                macdh=0.5 * sign,
                atr=2.0,
            ),
        },
        AnalystKind.SOCIAL: {
            "get_social_posts": _posts(
                ("$ACME to the moon" if up else "$ACME is done", tone, 40),
                ("holding $ACME", tone / 2, 3),
            ),
            "get_company_news": _news(("Acme beats estimates" if up else "Acme misses", tone)),
        },
        AnalystKind.NEWS: {
            "get_company_news": _news(
                ("Acme wins a large contract" if up else "Acme loses its largest client", tone),
                ("Acme raises guidance" if up else "Acme cuts guidance", tone),
            ),
            "get_global_news": _news(("Markets steady", 0.0)),
        },
        AnalystKind.FUNDAMENTALS: {
            "get_fundamentals": _fundamentals(pe=12 if up else 60, debt_to_equity=0.3 if up else 4),
            "get_income_statement": _statements(
                "income",
                *(
                    {"revenue": 1e9 * (1 + sign * 0.05) ** (4 - i), "net_income": 2e8 * sign}
                    for i in range(5)
                ),
            ),
            "get_cash_flow": _statements("cash_flow", {"free_cash_flow": 1e8 * sign}),
        },
    }


# --- running the offline agents -------------------------------------------------------------


def _framed(data: Any) -> str:
    return json.dumps(
        {"as_of": AS_OF.isoformat(), "vendor": "test", "simulated": False, "data": data}
    )


def _ask(agent: str, messages: list[ChatMessage], context: BaseModel) -> Any:
    """The offline agent's structured reply, validated against its schema."""
    schema = AGENTS[agent].schema
    request = ChatRequest(
        agent=agent,
        role=AGENTS[agent].llm_role,
        messages=messages,
        response_schema=schema.__name__,
        context=context.model_dump(mode="json"),
    )
    return schema.model_validate_json(answer_offline(request, OFFLINE_MODEL).text)


def _analyst(kind: AnalystKind, answers: Answers) -> AnalystReport:
    """The analyst's reply after its tool loop returned ``answers``."""
    inputs = AnalystInputs(symbol=SYMBOL, as_of=AS_OF)
    calls = [ToolCall(id=f"c{i}", name=name) for i, name in enumerate(answers)]
    messages = [
        *prompts.analyst_messages(kind, inputs),
        ChatMessage(role="assistant", tool_calls=calls),
        *(
            ChatMessage(role="tool", content=_framed(data), tool_call_id=call.id, name=call.name)
            for call, data in zip(calls, answers.values(), strict=True)
        ),
    ]
    report = _ask(ANALYST_AGENTS[kind], messages, inputs)
    assert isinstance(report, AnalystReport)
    return report


def _reports(scenario: dict[AnalystKind, Answers]) -> AnalystReports:
    return AnalystReports.of(_analyst(kind, answers) for kind, answers in scenario.items())


def _debate(debate: Debate, base: DebaterInputs, rounds: int = 1) -> list[DebateTurn]:
    transcript: list[DebateTurn] = []
    for speaker in roles.speaking_order(debate, rounds):
        inputs = base.model_copy(update={"transcript": list(transcript)})
        transcript.append(
            _ask(DEBATER_AGENTS[speaker], prompts.debater_messages(speaker, inputs), inputs)
        )
    return transcript


def _manager(kind: ManagerKind, inputs: ManagerInputs) -> Any:
    return _ask(kind.value, prompts.manager_messages(kind, inputs), inputs)


def _trader(inputs: TraderInputs) -> TraderProposal:
    proposal = _ask(roles.TRADER, prompts.trader_messages(inputs), inputs)
    assert isinstance(proposal, TraderProposal)
    return proposal


def _pipeline(reports: AnalystReports, last_price: float = 100.0) -> PortfolioDecision:
    """The whole chain after the analysts, as the workflow will run it."""
    research = _debate(Debate.RESEARCH, DebaterInputs(symbol=SYMBOL, reports=reports), rounds=2)
    plan = _manager(
        ManagerKind.RESEARCH_MANAGER,
        ManagerInputs(symbol=SYMBOL, reports=reports, transcript=research),
    )
    proposal = _trader(
        TraderInputs(
            symbol=SYMBOL, reports=reports, research_plan=plan, last_price=last_price, atr=2.0
        )
    )
    risk = _debate(Debate.RISK, DebaterInputs(symbol=SYMBOL, reports=reports, proposal=proposal))
    return _manager(
        ManagerKind.PORTFOLIO_MANAGER,
        ManagerInputs(
            symbol=SYMBOL, reports=reports, transcript=risk, research_plan=plan, proposal=proposal
        ),
    )


# --- offline analysts -----------------------------------------------------------------------


@pytest.mark.parametrize("kind", list(AnalystKind))
def test_offline_analysts_take_opposite_stances_on_opposite_data(kind: AnalystKind) -> None:
    bullish = _analyst(kind, _scenario(up=True)[kind])
    bearish = _analyst(kind, _scenario(up=False)[kind])

    assert (bullish.stance, bearish.stance) == (Stance.BULLISH, Stance.BEARISH)
    assert bullish.analyst is kind
    assert not bullish.critical_abort.flag


def test_the_same_request_gets_the_same_answer() -> None:
    answers = _scenario(up=True)[AnalystKind.MARKET]

    assert _analyst(AnalystKind.MARKET, answers) == _analyst(AnalystKind.MARKET, answers)


def test_key_points_quote_the_numbers_read() -> None:
    report = _analyst(AnalystKind.MARKET, _scenario(up=True)[AnalystKind.MARKET])

    points = [p.point for p in report.key_points]
    assert any(p.startswith("RSI 62.0 is above mid-range") for p in points)
    assert any("MACD is above its signal line (histogram +0.5)" in p for p in points)


def test_the_social_analyst_scores_the_crowd_by_reach() -> None:
    posts = _posts(("love it", 0.9, 99), ("hate it", -0.9, 0))

    report = _analyst(AnalystKind.SOCIAL, {"get_social_posts": posts})

    assert isinstance(report, SentimentReport)
    assert report.score == pytest.approx(5 * (1 + 0.9 * 99 / 101), abs=0.05)
    assert report.band is SentimentBand.VERY_POSITIVE


def test_a_capped_tool_answer_is_still_read() -> None:
    closes = [100.0 + i for i in range(400)]
    content = preview(_framed(_ohlcv(closes)), None)

    facts = price_facts(
        payloads_of_results([ToolResult(call_id="c", name="get_ohlcv", content=content)])
    )

    assert len(_framed(_ohlcv(closes))) > MAX_CONTENT_CHARS
    assert facts.last_close == closes[-1] and 0 < facts.bars < len(closes)


def test_an_analyst_without_data_takes_no_view() -> None:
    report = _analyst(AnalystKind.NEWS, {"get_company_news": "no news data for ACME in the window"})

    assert (report.stance, report.confidence) == (Stance.NEUTRAL, 0.1)
    assert "no news data for ACME" in report.report_markdown


@pytest.mark.parametrize(
    ("kind", "answers", "reason"),
    [
        (AnalystKind.MARKET, {"get_ohlcv": _ohlcv([100.0] * 30 + [5.0] * 5)}, "collapsed 95%"),
        (
            AnalystKind.FUNDAMENTALS,
            {"get_balance_sheet": _statements("balance", {"total_equity": -2e9})},
            "negative shareholders' equity of -2.00B",
        ),
        (
            AnalystKind.FUNDAMENTALS,
            {"get_company_news": _news(("Acme files for Chapter 11 protection", -0.9))},
            "reports a bankruptcy",
        ),
    ],
    ids=["crash", "negative_equity", "bankruptcy_news"],
)
def test_catastrophic_data_raises_a_critical_abort_and_the_pm_sells(
    kind: AnalystKind, answers: Answers, reason: str
) -> None:
    report = _analyst(kind, answers)
    reports = AnalystReports.of([report])

    decision = _manager(
        ManagerKind.PORTFOLIO_MANAGER, ManagerInputs(symbol=SYMBOL, reports=reports)
    )

    assert report.critical_abort.flag and reason in (report.critical_abort.reason or "")
    assert report.stance is Stance.BEARISH
    assert (decision.rating, decision.signal) == (Rating.SELL, TradeSignal.SELL)
    assert decision.abort_reason == report.critical_abort.reason


def test_the_news_analyst_weighs_a_bankruptcy_headline_but_cannot_abort() -> None:
    report = _analyst(
        AnalystKind.NEWS, {"get_company_news": _news(("Acme files for bankruptcy", 0.1))}
    )

    assert not report.critical_abort.flag
    assert report.stance is Stance.BEARISH


def test_the_bull_argues_the_bullish_points_and_the_bear_rebuts_it() -> None:
    reports = AnalystReports.of(
        [
            _report(
                AnalystKind.MARKET,
                "m",
                key_points=[
                    KeyPoint(point="UP-TREND", leans=Stance.BULLISH),
                    KeyPoint(point="RICH-VALUATION", leans=Stance.BEARISH),
                ],
            )
        ]
    )

    bull, bear = _debate(Debate.RESEARCH, DebaterInputs(symbol=SYMBOL, reports=reports))

    assert bull.key_points == ["market: UP-TREND"] and bull.rebuttal_of is None
    assert bear.key_points == ["market: RICH-VALUATION"] and bear.rebuttal_of is Speaker.BULL
    assert "UP-TREND" in bear.argument


def test_risk_debaters_size_up_down_and_in_between() -> None:
    aggressive, conservative, neutral = _debate(
        Debate.RISK, DebaterInputs(symbol=SYMBOL, reports=MARKED, proposal=PROPOSAL)
    )

    sizes = [t.position_sizing for t in (aggressive, conservative, neutral)]
    assert sizes == [pytest.approx(0.075), pytest.approx(0.025), pytest.approx(0.05)]
    assert all("Buy (stop loss 96" in t.argument for t in (aggressive, conservative, neutral))


@pytest.mark.parametrize(("action", "sign"), [(Action.BUY, 1), (Action.SELL, -1)])
def test_the_trader_sets_levels_from_the_atr_around_the_last_price(
    action: Action, sign: int
) -> None:
    plan = PLAN.model_copy(update={"recommendation": action})

    proposal = _trader(
        TraderInputs(symbol=SYMBOL, reports=MARKED, research_plan=plan, last_price=50, atr=1.5)
    )

    assert proposal.action is action and proposal.entry_price == 50
    assert proposal.stop_loss == pytest.approx(50 - sign * 3.0)
    assert proposal.take_profit == pytest.approx(50 + sign * 4.5)


def test_the_trader_without_atr_or_volatility_sets_no_levels() -> None:
    proposal = _trader(
        TraderInputs(symbol=SYMBOL, reports=MARKED, research_plan=PLAN, last_price=50)
    )

    assert (proposal.stop_loss, proposal.take_profit) == (None, None)
    assert "no ATR or volatility" in proposal.reasoning


def test_opposite_data_ends_in_opposite_ratings() -> None:
    bullish = _pipeline(_reports(_scenario(up=True)))
    bearish = _pipeline(_reports(_scenario(up=False)))

    assert bullish.signal is TradeSignal.BUY and bullish.rating in {Rating.BUY, Rating.OVERWEIGHT}
    assert bearish.signal is TradeSignal.SELL
    assert bearish.rating in {Rating.SELL, Rating.UNDERWEIGHT}
    assert bullish.abort_reason is None


def test_an_offline_agent_refuses_a_schema_it_does_not_write() -> None:
    request = ChatRequest(
        agent=roles.TRADER,
        messages=[ChatMessage(role="user", content="trade")],
        response_schema="PortfolioDecision",
    )

    with pytest.raises(InvalidInput, match="writes TraderProposal"):
        answer_offline(request, OFFLINE_MODEL)


def test_the_chain_runs_over_the_real_tools_on_the_sim_market() -> None:
    router = DataRouter({"sim": SimVendor()}, {kind: ["sim"] for kind in DataKind})
    symbol = "QBTX"
    inputs = AnalystInputs(symbol=symbol, as_of=AS_OF)
    reports, every_result, market_results = [], [], []
    for kind, agent in ANALYST_AGENTS.items():
        request = ChatRequest(
            agent=agent,
            messages=prompts.analyst_messages(kind, inputs),
            tools=tool_specs(prompts.ANALYST_BRIEFS[kind].tools),
            response_schema=AGENTS[agent].schema_name,
            context=inputs.model_dump(mode="json"),
        )
        calls = answer_offline(request, OFFLINE_MODEL).tool_calls
        results: list[ToolResult] = [
            run_tool(
                ToolRequest(call=call, context={"as_of": AS_OF.isoformat(), "symbol": symbol}),
                lambda: ToolServices(router=router),
            )
            for call in calls
        ]
        every_result += results
        market_results += results if kind is AnalystKind.MARKET else []
        tools = [
            ChatMessage(role="tool", content=r.content, tool_call_id=r.call_id, name=r.name)
            for r in results
        ]
        messages = [*request.messages, ChatMessage(role="assistant", tool_calls=calls), *tools]
        reply = answer_offline(request.model_copy(update={"messages": messages}), OFFLINE_MODEL)
        reports.append(AGENTS[agent].schema.model_validate_json(reply.text))
    facts = price_facts(payloads_of_results(market_results))

    decision = _pipeline(AnalystReports.of(reports), last_price=facts.last_close or 1.0)

    assert every_result and all(result.ok for result in every_result)
    assert facts.last_close and facts.atr and facts.bars == 60
    assert all(len(report.key_points) >= 2 for report in reports)
    assert isinstance(decision, PortfolioDecision) and decision.time_horizon
