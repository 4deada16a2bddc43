"""The Portfolio flow's structured outputs, registered by name for ``response_schema``.

The PM's orders are ``shared.portfolio.orders.SellOrder`` / ``BuyOrder``, the
very models the planner sizes, and a decision that buys and sells one ticker,
or names one twice, is refused rather than guessed at (the schema says so). The
reviews only inform the PM, so a ticker they name twice keeps its first entry.
"""

from __future__ import annotations

from collections import Counter
from enum import StrEnum

from pydantic import BaseModel, Field, model_validator

from shared.agents.schemas import Fraction, Stance, first_of_each, register_schema
from shared.portfolio.orders import BuyOrder, OrderTicker, SellOrder


class HoldingAction(StrEnum):
    """What the reviewer would do with a holding."""

    KEEP = "keep"
    ADD = "add"
    TRIM = "trim"
    EXIT = "exit"


class HoldingVerdict(BaseModel):
    """The reviewer's call on one holding."""

    ticker: OrderTicker
    action: HoldingAction
    reason: str = Field(min_length=1, description="the price, P&L, weight or rating it rests on")


@register_schema
class HoldingsReview(BaseModel):
    """The review of every holding, for the PM."""

    verdicts: list[HoldingVerdict] = Field(description="one per holding (a repeat is dropped)")
    summary: str = Field(min_length=1)

    @model_validator(mode="after")
    def _once_each(self) -> HoldingsReview:
        self.verdicts = first_of_each(self.verdicts, lambda verdict: verdict.ticker)
        return self


class MarketStance(StrEnum):
    """How much risk the macro picture invites."""

    RISK_ON = "risk_on"
    NEUTRAL = "neutral"
    RISK_OFF = "risk_off"


@register_schema
class MacroSummary(BaseModel):
    """The market regime in a paragraph, for the PM."""

    stance: MarketStance
    regime: str = Field(min_length=1, description="the cycle and policy in a phrase")
    key_points: list[str] = Field(min_length=1, description="the facts behind the stance")
    summary: str = Field(min_length=1)


class TickerView(BaseModel):
    """The micro view of one holding or candidate."""

    ticker: OrderTicker
    view: Stance
    note: str = Field(min_length=1, description="its Pipeline rating, price against target, P&L")


@register_schema
class MicroSummary(BaseModel):
    """Holdings and candidates one by one, with their Pipeline decisions."""

    views: list[TickerView] = Field(description="one per ticker (a repeat is dropped)")
    summary: str = Field(min_length=1)

    @model_validator(mode="after")
    def _once_each(self) -> MicroSummary:
        self.views = first_of_each(self.views, lambda view: view.ticker)
        return self


@register_schema
class AllocationDecision(BaseModel):
    """The PM's decision for the whole book. Each ticker at most once in sells and once in
    buys, and never in both."""

    sells: list[SellOrder] = Field(
        default_factory=list, description="holdings to sell, shares; each ticker once"
    )
    buys: list[BuyOrder] = Field(
        default_factory=list, description="most wanted first; each ticker once, none sold"
    )
    holds: list[OrderTicker] = Field(default_factory=list, description="holdings kept as they are")
    cash_reserve: Fraction = Field(
        description="fraction of the book to keep in cash and T-bills (>= the floor)"
    )
    portfolio_thesis: str = Field(min_length=1)
    risk_summary: str = Field(min_length=1, description="the risk metrics and what they imply")

    @model_validator(mode="after")
    def _each_ticker_once(self) -> AllocationDecision:
        _check_unique([o.ticker for o in self.sells], "sells")
        _check_unique([o.ticker for o in self.buys], "buys")
        both = sorted({o.ticker for o in self.sells} & {o.ticker for o in self.buys})
        if both:
            raise ValueError(f"a ticker is either bought or sold, not both: {', '.join(both)}")
        return self


def _check_unique(tickers: list[str], field: str) -> None:
    repeated = sorted(t for t, n in Counter(tickers).items() if n > 1)
    if repeated:
        raise ValueError(f"name each ticker once in {field}; repeated: {', '.join(repeated)}")
