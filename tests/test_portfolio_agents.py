"""The Portfolio agents' contracts, prompts and offline analysts, which reason from their inputs."""

from __future__ import annotations

from datetime import UTC, datetime
from decimal import Decimal
from typing import Any

import pytest
from pydantic import ValidationError

from activities.services import StoredReport
from shared.agents.pipeline.schemas import SIGNAL_OF_RATING, PortfolioDecision, Rating
from shared.agents.portfolio import book_manager
from shared.agents.portfolio.book_manager import allocate
from shared.agents.portfolio.holdings_reviewer import review_holdings
from shared.agents.portfolio.inputs import (
    SUMMARY_MAX,
    BookFacts,
    CandidateView,
    HoldingView,
    MacroInputs,
    MicroInputs,
    PmInputs,
    ReviewInputs,
    TickerDecision,
)
from shared.agents.portfolio.macro_summarizer import summarize_macro
from shared.agents.portfolio.roles import AGENTS as PORTFOLIO_AGENTS
from shared.agents.portfolio.roles import (
    BOOK_MANAGER,
    HOLDINGS_REVIEWER,
    MACRO_SUMMARIZER,
    MICRO_SUMMARIZER,
)
from shared.agents.portfolio.schemas import (
    AllocationDecision,
    HoldingAction,
    HoldingsReview,
    HoldingVerdict,
    MacroSummary,
    MarketStance,
    MicroSummary,
)
from shared.agents.prompt_text import render_prompt
from shared.agents.scan.schemas import (
    Conviction,
    KeyTheme,
    MacroContext,
    ScanSummary,
    StockToInvestigate,
    ThesisAngle,
)
from shared.agents.schemas import RESPONSE_SCHEMAS
from shared.data.contracts import Sector
from shared.llm.contracts import ChatRequest
from shared.llm.offline.reading import read_request
from shared.portfolio.limits import Limits
from shared.portfolio.market import Quote, QuoteMissing
from shared.portfolio.models import Holding, Portfolio
from shared.portfolio.orders import BuyOrder, SellOrder
from shared.portfolio.prioritize import prioritize
from shared.portfolio.risk import Measured, RiskReport
from shared.portfolio.valuation import value_book
from shared.storage.objects import ObjectRef
from tests.golden_prompts import golden_diff
from workflows.pipeline_contracts import PipelineResult

AS_OF = datetime(2012, 6, 1, tzinfo=UTC)
IT = Sector.INFORMATION_TECHNOLOGY


def _decision(symbol: str, rating: Rating, target: float | None = None) -> TickerDecision:
    return TickerDecision(
        symbol=symbol,
        rating=rating,
        signal=SIGNAL_OF_RATING[rating],
        price_target=target,
        executive_summary=f"{rating.value} {symbol}",
        as_of=AS_OF,
    )


def _quote(symbol: str, price: float) -> Quote:
    return Quote(symbol=symbol, price=Decimal(str(price)), bar_time=AS_OF, vendor="sim")


def _views(held: dict[str, tuple[int, float, float]], decisions: dict[str, TickerDecision]) -> Any:
    """(book facts, holding views) for holdings of (shares, cost, close), with 50,000 cash."""
    book = Portfolio(
        name="t", initial_cash=Decimal(100_000), cash=Decimal(50_000), created_at=AS_OF
    )
    holdings = [
        Holding(symbol=s, shares=n, avg_cost=Decimal(str(cost)), sector=IT, opened_at=AS_OF,
                updated_at=AS_OF)
        for s, (n, cost, _) in held.items()
    ]  # fmt: skip
    quotes = {s: _quote(s, close) for s, (_, _, close) in held.items()}
    valuation = value_book(book, holdings, quotes, AS_OF)
    views = [HoldingView(position=p, decision=decisions.get(p.symbol)) for p in valuation.positions]
    return valuation, BookFacts.of(valuation, Limits()), views


def _risk(volatility: float | None = 0.2) -> RiskReport:
    def metric(value: float | None) -> Measured:
        return Measured.of(value) if value is not None else Measured.missing("too short")

    return RiskReport(
        observations=252,
        daily_returns=[],
        mean_daily_return=metric(0.0005),
        annualised_volatility=metric(volatility),
        sharpe=metric(None),
        sortino=metric(1.2),
        var_95_1d=metric(0.02),
        var_95_1d_amount=metric(2000),
        max_drawdown=metric(0.1),
        beta=metric(1.1),
        benchmark="^GSPC",
        risk_free="SGOV daily returns",
        correlations=[],
        average_correlation=metric(None),
        sector_weights={"Information Technology": 0.3, "cash": 0.5},
        largest_sector="Information Technology",
    )


def test_a_ticker_decision_is_built_compact_from_a_pipeline_result() -> None:
    result = PipelineResult(
        workflow_id="pipeline-QBTX-1",
        run_id="r1",
        symbol="QBTX",
        as_of=AS_OF,
        analysts=["market"],
        debate_rounds=1,
        risk_rounds=1,
        llm={},
        decision=PortfolioDecision(
            rating=Rating.OVERWEIGHT,
            executive_summary="x" * 5_000,
            investment_thesis="grows",
            price_target=180.0,
            time_horizon="3 months",
        ),
        report=StoredReport(
            report=ObjectRef(bucket="reports", key="pipeline/q/report.md"), url="u", size_bytes=1
        ),
    )

    decision = TickerDecision.of(result)

    assert (decision.symbol, decision.rating.value, decision.signal.value) == (
        "QBTX",
        "Overweight",
        "BUY",
    )
    assert len(decision.executive_summary) == SUMMARY_MAX and decision.executive_summary[-1] == "…"
    assert decision.report is not None and decision.report.key == "pipeline/q/report.md"
    assert decision.workflow_id == "pipeline-QBTX-1"


def test_a_decision_cannot_buy_and_sell_one_ticker_or_set_a_stop_above_the_target() -> None:
    with pytest.raises(ValidationError, match="either bought or sold, not both: QBTX"):
        AllocationDecision(
            sells=[SellOrder(ticker="QBTX", shares=1, rationale="x")],
            buys=[BuyOrder(ticker="qbtx", shares=1, stop_loss=9, take_profit=12, rationale="x")],
            cash_reserve=0.05,
            portfolio_thesis="t",
            risk_summary="r",
        )
    with pytest.raises(ValidationError, match="stop_loss"):
        BuyOrder(ticker="QBTX", shares=1, stop_loss=12, take_profit=11, rationale="x")


def test_the_reviewer_reads_pnl_weight_and_the_pipeline_decision() -> None:
    decisions = {
        "SELLME": _decision("SELLME", Rating.SELL),
        "ADDME": _decision("ADDME", Rating.BUY, target=60.0),
        "HOLDME": _decision("HOLDME", Rating.HOLD),
    }
    held = {
        "SELLME": (100, 50.0, 55.0),  # up, but rated Sell
        "LOSER": (100, 50.0, 40.0),  # -20% with no Buy behind it
        "BIG": (400, 40.0, 50.0),  # 20,000 of ~100,000: above 15%
        "ADDME": (50, 50.0, 50.0),  # Buy, target 60, small
        "HOLDME": (100, 30.0, 45.0),  # +50% on a Hold
    }
    _, book, views = _views(held, decisions)

    review = review_holdings(ReviewInputs(book=book, holdings=views))

    actions = {v.ticker: v.action for v in review.verdicts}
    assert actions == {
        "SELLME": HoldingAction.EXIT,
        "LOSER": HoldingAction.EXIT,
        "BIG": HoldingAction.TRIM,
        "ADDME": HoldingAction.ADD,
        "HOLDME": HoldingAction.TRIM,
    }
    reasons = {v.ticker: v.reason for v in review.verdicts}
    assert "-20.0% against cost 50.00" in reasons["LOSER"]
    assert "target 60.00, +20.0% above the close 50.00" in reasons["ADDME"]


def _scan(cycle: str, bank: str, risks: list[str]) -> ScanSummary:
    return ScanSummary(
        timeframe="1-3 months",
        executive_summary="summary",
        macro_context=MacroContext(
            economic_cycle=cycle, central_bank_stance=bank, geopolitical_risks=risks
        ),
        key_themes=[
            KeyTheme(theme="t", description="d", conviction=Conviction.LOW, timeframe="1m")
        ],
        stocks_to_investigate=[
            StockToInvestigate(
                ticker="QBTX",
                name="Q",
                sector=IT,
                rationale="r",
                thesis_angle=ThesisAngle.GROWTH,
                conviction=Conviction.HIGH,
            )
        ],  # fmt: skip
        risk_factors=["credit"],
    )


def test_the_macro_stance_follows_the_scans_cycle_policy_and_risks() -> None:
    gloomy = _scan("contraction, recession risk rising", "tightening, hikes ahead", ["a", "b", "c"])
    sunny = _scan("early expansion, recovery", "easing", [])

    assert summarize_macro(MacroInputs(portfolio="t", as_of=AS_OF, scan=gloomy)).stance is (
        MarketStance.RISK_OFF
    )
    assert summarize_macro(MacroInputs(portfolio="t", as_of=AS_OF, scan=sunny)).stance is (
        MarketStance.RISK_ON
    )
    blind = summarize_macro(MacroInputs(portfolio="t", as_of=AS_OF))
    assert blind.stance is MarketStance.NEUTRAL and "no Scan" in blind.regime


def _pm_inputs(stance: MarketStance, volatility: float | None = 0.2) -> PmInputs:
    decisions = {
        "HOT": _decision("HOT", Rating.BUY, 120.0),
        "MEH": _decision("MEH", Rating.HOLD),
        "OUT": _decision("OUT", Rating.SELL),
    }
    valuation, book, holdings = _views({"OUT": (100, 50.0, 45.0)}, decisions)
    stocks = [
        StockToInvestigate(ticker=t, name=t, sector=IT, rationale="r",
                           thesis_angle=ThesisAngle.GROWTH, conviction=Conviction.HIGH)
        for t in ("HOT", "MEH", "NODATA", "NOPRICE")
    ]  # fmt: skip
    ranked = prioritize(stocks, valuation, {}, Limits()).ranked
    quotes: dict[str, Quote | QuoteMissing] = {
        t: _quote(t, 100.0) for t in ("HOT", "MEH", "NODATA")
    }
    quotes["NOPRICE"] = QuoteMissing(symbol="NOPRICE", reason="delisted")
    decisions["NOPRICE"] = _decision("NOPRICE", Rating.BUY)
    candidates = [
        CandidateView(candidate=c, quote=quotes[c.ticker], decision=decisions.get(c.ticker))
        for c in ranked
    ]
    review = review_holdings(ReviewInputs(book=book, holdings=holdings))
    return PmInputs(
        book=book,
        holdings=holdings,
        candidates=candidates,
        risk=_risk(volatility),
        review=review,
        macro=MacroSummary(stance=stance, regime="r", key_points=["p"], summary="s"),
        micro=MicroSummary(views=[], summary="s"),
    )


def test_the_pm_buys_only_what_its_pipeline_rates_buy_sized_by_conviction_and_regime() -> None:
    neutral = allocate(_pm_inputs(MarketStance.NEUTRAL))
    cautious = allocate(_pm_inputs(MarketStance.RISK_OFF))
    shaky = allocate(_pm_inputs(MarketStance.NEUTRAL, volatility=0.45))

    [buy] = neutral.buys
    total = 50_000 + 100 * 45  # cash plus OUT at its close
    assert buy.ticker == "HOT" and buy.shares == int(0.10 * total / 100)
    assert buy.stop_loss == pytest.approx(92.0) and buy.take_profit == pytest.approx(120.0)
    assert [s.ticker for s in neutral.sells] == ["OUT"] and neutral.sells[0].shares == 100
    assert "MEH (Hold)" in neutral.portfolio_thesis and "NODATA (no Pipeline decision)" in (
        neutral.portfolio_thesis
    )
    assert "NOPRICE (no close)" in neutral.portfolio_thesis
    assert cautious.buys[0].shares == int(0.05 * total / 100)
    assert cautious.cash_reserve == pytest.approx(0.15)
    assert shaky.buys[0].shares == int(0.075 * total / 100)
    assert "volatility 45.0%" in shaky.risk_summary and "Sharpe not measured: too short" in (
        shaky.risk_summary
    )


def test_the_pm_prompt_shows_every_close_the_risk_and_the_limits() -> None:
    inputs = _pm_inputs(MarketStance.NEUTRAL)
    inputs.review = HoldingsReview(
        verdicts=[HoldingVerdict(ticker="OUT", action=HoldingAction.EXIT, reason="rated Sell")],
        summary="one exit",
    )

    [system, user] = book_manager.SPEC.messages(inputs)

    assert "never invent a price" in system.content
    text = user.content
    assert "| OUT | 100 | 50.00 | 45.00 | 4,500.00 |" in text
    assert "| HOT | Information Technology | 100.00 |" in text
    assert "| NOPRICE | Information Technology | none |" in text
    assert "- Sharpe: not measured (too short)" in text
    assert "- annualised volatility: 20.0%" in text
    assert "at most 15% of the total value in one position" in text
    assert "cash 50,000.00 (91.7%)" in text


def _sample_inputs() -> dict[str, Any]:
    """Each Portfolio agent's inputs, from one book: what the parity test feeds each spec."""
    pm = _pm_inputs(MarketStance.NEUTRAL)
    portfolio = pm.book.portfolio
    return {
        HOLDINGS_REVIEWER: ReviewInputs(book=pm.book, holdings=pm.holdings),
        MACRO_SUMMARIZER: MacroInputs(
            portfolio=portfolio, as_of=AS_OF, scan=_scan("expansion", "easing", ["tariffs"])
        ),
        MICRO_SUMMARIZER: MicroInputs(
            portfolio=portfolio, holdings=pm.holdings, candidates=pm.candidates
        ),
        BOOK_MANAGER: pm,
    }


@pytest.mark.parametrize("name", list(PORTFOLIO_AGENTS))
def test_every_portfolio_spec_makes_a_working_agent(name: str) -> None:
    spec = PORTFOLIO_AGENTS[name]
    inputs = _sample_inputs()[name]

    [system, user] = spec.messages(inputs)
    answer = spec.answer_offline(inputs, read_request(ChatRequest(agent=name, messages=[])))

    assert spec.title in system.content and "## Task" in user.content
    assert RESPONSE_SCHEMAS[spec.schema_name] is spec.output and isinstance(answer, spec.output)
    assert spec.as_text(answer).strip()


@pytest.mark.parametrize("name", list(PORTFOLIO_AGENTS))
def test_the_prompt_matches_its_golden_copy(name: str) -> None:
    note = "inputs: a sample book (test_portfolio_agents._sample_inputs)"
    shown = render_prompt(PORTFOLIO_AGENTS[name], _sample_inputs()[name], [note])

    diff = golden_diff(name, shown)

    assert not diff, diff
