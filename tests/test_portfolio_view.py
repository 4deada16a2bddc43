"""The Portfolio's candidates at desk scale: a bounded view for the agents, every candidate's
fate in the report.

A desk of N watched names (Pipeline summaries at their full 1,500-character clip,
ratings and sectors spread over the lot) is ranked by the real prioritizer, cut by
``ViewSize``, read by the offline micro summarizer and rendered into the real
prompts: the PM's prompt costs about the same at 100 or 500 candidates as at 20.
"""

from __future__ import annotations

from itertools import cycle, islice

import pytest

from shared.agents.pipeline.schemas import Rating
from shared.agents.portfolio import book_manager, micro_summarizer
from shared.agents.portfolio.fates import Fate, candidate_fates
from shared.agents.portfolio.inputs import (
    CandidateSlate,
    MicroInputs,
    PmInputs,
    TickerDecision,
)
from shared.agents.portfolio.micro_summarizer import summarize_micro
from shared.agents.portfolio.prompts import micro_prompt, pm_prompt
from shared.agents.portfolio.schemas import (
    HoldingsReview,
    MacroSummary,
    MarketStance,
)
from shared.agents.portfolio.view import ViewSize
from shared.data.contracts import Sector
from shared.llm.prompt_budget import estimated_tokens
from shared.portfolio.constraints import size_orders
from shared.portfolio.costs import Costs
from shared.portfolio.limits import Limits
from shared.portfolio.market import Quote, QuoteMissing
from shared.portfolio.models import Side
from shared.portfolio.prioritize import WatchedName, prioritize
from shared.portfolio.risk import RiskReport
from tests.test_portfolio_agents import _decision, _quote, _risk, _views

RATINGS = [Rating.BUY, Rating.HOLD, Rating.OVERWEIGHT, Rating.SELL, Rating.UNDERWEIGHT]
SECTORS = [s for s in Sector]
SUMMARY = "Revenue grew 12% on cloud demand while margins held; " * 40
HOLDINGS = {f"H{i:02d}": (100, 50.0, 48.0 + i) for i in range(12)}
"""A book of twelve holdings: the fixed part of the prompt a full book brings."""


class Desk:
    """N watched names, ranked, with the book they would join."""

    def __init__(self, n: int) -> None:
        symbols = [f"W{i:03d}" for i in range(n)]
        self.decisions: dict[str, TickerDecision] = {}
        for symbol, rating in zip(symbols, islice(cycle(RATINGS), n), strict=True):
            decision = _decision(symbol, rating, 120.0 if rating is Rating.BUY else None)
            self.decisions[symbol] = decision.model_copy(
                update={"executive_summary": SUMMARY[:1_500]}
            )
        self.valuation, self.book, self.holdings = _views(HOLDINGS, self.decisions)
        sectors = dict(zip(symbols, cycle(SECTORS), strict=False))
        ideas = [
            WatchedName.of_rating(s, d.rating, d.executive_summary)
            for s, d in self.decisions.items()
        ]
        self.ranked = prioritize(ideas, self.valuation, sectors, Limits())
        self.quotes: dict[str, Quote | QuoteMissing] = {s: _quote(s, 100.0) for s in symbols}

    def slate(self, size: ViewSize) -> CandidateSlate:
        return CandidateSlate.of(self.ranked.ranked, self.quotes, self.decisions, size)

    def micro(self, size: ViewSize) -> MicroInputs:
        return MicroInputs(
            portfolio="t", holdings=self.holdings, candidates=self.slate(size).detail
        )

    def pm(self, size: ViewSize, risk: RiskReport | None = None) -> PmInputs:
        slate = self.slate(size)
        micro = summarize_micro(self.micro(size))
        return PmInputs(
            book=self.book,
            holdings=self.holdings,
            candidates=slate.detail,
            bench=slate.bench,
            beyond=slate.beyond,
            risk=risk or _risk(),
            review=HoldingsReview(verdicts=[], summary="12 holdings reviewed: 12 keep."),
            macro=MacroSummary(
                stance=MarketStance.NEUTRAL, regime="mid-cycle", key_points=["p"], summary="s"
            ),
            micro=micro,
        )


def _pm_prompt_tokens(n: int, size: ViewSize) -> int:
    return estimated_tokens(pm_prompt(book_manager.SPEC, Desk(n).pm(size)))


def _micro_prompt_tokens(n: int, size: ViewSize) -> int:
    return estimated_tokens(micro_prompt(micro_summarizer.SPEC, Desk(n).micro(size)))


LARGE = ViewSize.for_window(None)
SMALL_WINDOW = 4_096


def test_the_view_follows_the_context_window_within_its_caps() -> None:
    small, medium = ViewSize.for_window(SMALL_WINDOW), ViewSize.for_window(8_192)

    assert (small.detail, small.bench) == (3, 13)
    assert small.detail < medium.detail < LARGE.detail == 20
    assert ViewSize.for_window(1_000_000) == LARGE
    assert ViewSize.for_provider("llamacpp") == small and ViewSize.for_provider("offline") == LARGE


def test_the_pm_prompt_stops_growing_once_the_bench_is_full() -> None:
    at_20, at_100, at_500 = (_pm_prompt_tokens(n, LARGE) for n in (20, 100, 500))

    assert at_100 <= 1.4 * at_20
    assert at_500 <= 1.02 * at_100
    assert at_500 < 32_768 - 1_024


@pytest.mark.parametrize("n", [12, 100, 500])
def test_a_small_models_prompts_fit_its_window_at_any_count(n: int) -> None:
    size = ViewSize.for_provider("llamacpp")
    room = SMALL_WINDOW - 1_024  # the reply's reserve

    assert _pm_prompt_tokens(n, size) <= room
    assert _micro_prompt_tokens(n, size) <= room


def test_the_pm_prompt_lists_the_bench_one_line_each_and_counts_the_rest() -> None:
    desk = Desk(100)
    prompt = pm_prompt(book_manager.SPEC, desk.pm(LARGE))[1].content
    slate = desk.slate(LARGE)

    assert [v.candidate.ticker for v in slate.detail] == [
        c.ticker for c in desk.ranked.ranked[: LARGE.detail]
    ]
    assert all(f"| {b.rank} | {b.ticker} |" in prompt for b in slate.bench)
    assert slate.beyond is not None
    assert f"And {slate.beyond.count} more, ranked {slate.beyond.first_rank} to" in prompt
    assert LARGE.detail + LARGE.bench + slate.beyond.count == len(desk.ranked.ranked)


def test_a_small_run_has_no_bench() -> None:
    prompt = pm_prompt(book_manager.SPEC, Desk(12).pm(LARGE))[1].content

    assert "Below the cut" not in prompt


def test_every_candidate_gets_a_fate_and_each_left_out_one_its_reason() -> None:
    desk = Desk(100)
    pm = desk.pm(LARGE)
    decision = book_manager.allocate(pm)
    plan = size_orders(
        desk.valuation,
        decision.sells,
        decision.buys,
        desk.quotes,
        {},
        Limits(),
        Costs(),
        cash_reserve=decision.cash_reserve,
    )

    fates = candidate_fates(desk.ranked, desk.decisions, desk.quotes, LARGE, decision, plan)

    assert sorted(f.ticker for f in fates) == sorted(desk.decisions)
    planned = {f.ticker for f in fates if f.fate is Fate.PLANNED}
    assert planned == {o.symbol for o in plan.orders if o.side is Side.BUY} and planned
    reasons = {f.ticker: f.reason for f in fates}
    assert reasons[desk.ranked.ranked[56].ticker].startswith(
        "ranked 57th of 91; below the top-20 cut the PM reads in full (counted only)"
    )
    assert "(in one line)" in reasons[desk.ranked.ranked[20].ticker]
    refused = [r for r in plan.rejected if r.symbol in reasons]
    assert refused and all(r.reason in reasons[r.symbol] for r in refused)
    assert all("scored 0" in reasons[c.ticker] for c in desk.ranked.dropped)
