"""The record of a walk-forward: each step's signal and position, over its schedule.

The workflow fills it step by step; the scoring and chart activities read it
whole. It is small (a close per trading day and a line per step), so it
travels inline.
"""

from __future__ import annotations

from enum import StrEnum

from pydantic import AwareDatetime, BaseModel, Field, model_validator

from shared.backtest.metrics import Performance, buy_and_hold, equity_curve, performance
from shared.backtest.positions import Position
from shared.backtest.schedule import WalkForward
from shared.llm.providers import LlmRole


class Flow(StrEnum):
    """The flows a backtest can walk forward."""

    PIPELINE = "pipeline"
    QUANTAGENT = "quantagent"


FLOW_ROLES: dict[Flow, tuple[LlmRole, ...]] = {
    Flow.PIPELINE: (LlmRole.QUICK, LlmRole.DEEP),
    Flow.QUANTAGENT: (LlmRole.QUICK, LlmRole.VISION, LlmRole.DEEP),
}
"""The model roles each flow's agents use: whose training cutoffs tag its decisions."""


class StepRecord(BaseModel):
    """What one step decided and the position it took."""

    step: int = Field(ge=0, description="0-based step number")
    as_of: AwareDatetime = Field(description="the analysis time the flow ran strictly as of")
    signal: str = Field(description="BUY/SELL/HOLD (Pipeline) or LONG/SHORT (QuantAgent)")
    rating: str | None = Field(None, description="the Pipeline's five-tier rating")
    position: Position
    workflow_id: str = Field(description="the flow's child run")
    recalled_roles: int | None = Field(
        None, description="Pipeline: roles whose prompts carried past lessons"
    )
    lessons_recorded: int | None = Field(
        None, description="lessons the step's reflection added; None: not reflected"
    )


class Book(BaseModel):
    """A walk-forward's schedule and the steps decided so far."""

    symbol: str
    flow: Flow
    allow_short: bool
    schedule: WalkForward
    records: list[StepRecord] = Field(default_factory=list)

    @model_validator(mode="after")
    def _steps_in_order(self) -> Book:
        if [r.step for r in self.records] != list(range(len(self.records))):
            raise ValueError("records must be steps 0, 1, 2, ... in order")
        if len(self.records) > len(self.schedule.steps):
            raise ValueError("more records than scheduled steps")
        return self

    @property
    def closes(self) -> list[float]:
        """Every close of the range, oldest first."""
        return [point.close for point in self.schedule.prices]

    @property
    def positions(self) -> list[Position]:
        """The position each recorded step took."""
        return [record.position for record in self.records]

    def _decided(self) -> tuple[list[float], list[int]]:
        """Closes up to the last decided step's holding end, and the decided steps."""
        steps = self.schedule.steps[: len(self.records)]
        if not steps:
            raise ValueError("no step has been decided yet")
        if len(steps) == len(self.schedule.steps):
            return self.closes, steps
        # While later steps are pending, the last decided step is marked up to its own close.
        return self.closes[: steps[-1] + 1], steps

    def equity(self) -> list[float]:
        """The strategy's equity at each close so far (all of them once every step is decided)."""
        closes, steps = self._decided()
        return equity_curve(closes, steps, self.positions)

    def buy_and_hold_equity(self) -> list[float]:
        """Buy-and-hold's equity over the same closes as ``equity``."""
        closes, steps = self._decided()
        return [close / closes[steps[0]] for close in closes[steps[0] :]]

    def scores(self) -> tuple[Performance, Performance]:
        """The strategy's and buy-and-hold's performance over every scheduled step."""
        if len(self.records) != len(self.schedule.steps):
            raise ValueError(
                f"{len(self.records)} of {len(self.schedule.steps)} steps decided: "
                "score a finished walk-forward"
            )
        steps = self.schedule.steps
        return performance(self.closes, steps, self.positions), buy_and_hold(self.closes, steps)
