"""What a lesson is, and what recalling one gives back.

A lesson is only knowable once its outcome is: ``learned_at`` (when the outcome
was measured) can never precede ``as_of`` plus the horizon, so a backtest that
recalls strictly as of a date cannot be shown a lesson from its own future.
"""

from __future__ import annotations

from datetime import UTC, datetime, timedelta
from enum import StrEnum
from typing import Any

from pydantic import (
    AwareDatetime,
    BaseModel,
    ConfigDict,
    Field,
    ValidationInfo,
    field_validator,
    model_validator,
)

# Longest ticker kept: exchange-qualified symbols such as "BRK.B" or "7203.T" fit easily.
SYMBOL_MAX_LENGTH = 32
# Temporal's default limit on workflow and run id length.
RUN_ID_MAX_LENGTH = 1000


class MemoryRole(StrEnum):
    """The agents that keep a memory of their own: one BM25 index each."""

    BULL = "bull"
    BEAR = "bear"
    TRADER = "trader"
    RESEARCH_MANAGER = "research_manager"
    PORTFOLIO_MANAGER = "portfolio_manager"
    AGGRESSIVE = "aggressive"
    CONSERVATIVE = "conservative"
    NEUTRAL = "neutral"


class Outcome(BaseModel):
    """What the decision earned once its horizon had passed."""

    model_config = ConfigDict(frozen=True, extra="forbid", allow_inf_nan=False)

    realised_return: float = Field(
        description="return of the position the decision took, as a fraction: 0.042 = +4.2%"
    )
    alpha: float = Field(description="realised_return minus the benchmark's over the same days")
    horizon_days: int = Field(ge=1, description="calendar days from the decision to the measure")


class SourceRun(BaseModel):
    """The workflow run whose decision the lesson is about: one lesson per role per run."""

    model_config = ConfigDict(frozen=True, extra="forbid")

    workflow_id: str = Field(min_length=1, max_length=RUN_ID_MAX_LENGTH)
    run_id: str = Field(min_length=1, max_length=RUN_ID_MAX_LENGTH)


class _Memory(BaseModel):
    """Fields a stored lesson and a recalled one share; times are kept in UTC."""

    model_config = ConfigDict(frozen=True, extra="forbid")

    symbol: str = Field(min_length=1, max_length=SYMBOL_MAX_LENGTH)
    as_of: AwareDatetime = Field(description="when the decision was made")
    situation: str = Field(min_length=1, description="the market as the agent saw it")
    decision: str = Field(min_length=1, description="what the agent decided, in short")
    outcome: Outcome
    lesson: str = Field(min_length=1, description="what to do differently, in a sentence or two")
    source: SourceRun
    # Declared after as_of and outcome so that its default can be derived from them.
    learned_at: AwareDatetime = Field(
        None,
        validate_default=True,
        description="when the outcome became known; default as_of + horizon_days",
    )

    @field_validator("symbol")
    @classmethod
    def _canonical_symbol(cls, value: str) -> str:
        return value.strip().upper()

    @field_validator("learned_at", mode="before")
    @classmethod
    def _default_learned_at(cls, value: Any, info: ValidationInfo) -> Any:
        as_of, outcome = info.data.get("as_of"), info.data.get("outcome")
        if value is None and as_of is not None and outcome is not None:
            return as_of + timedelta(days=outcome.horizon_days)
        return value

    @field_validator("as_of", "learned_at")
    @classmethod
    def _in_utc(cls, value: datetime) -> datetime:
        return value.astimezone(UTC)

    @model_validator(mode="after")
    def _known_only_after_horizon(self) -> _Memory:
        earliest = self.as_of + timedelta(days=self.outcome.horizon_days)
        if self.learned_at < earliest:
            raise ValueError(
                f"learned_at {self.learned_at.isoformat()} is before as_of + horizon "
                f"({earliest.isoformat()}): the outcome could not be known yet"
            )
        return self


class Lesson(_Memory):
    """A reflection to remember: written once per (source run, role)."""

    role: MemoryRole


class Recollection(_Memory):
    """A past lesson recalled for a new situation, with how closely it matches."""

    score: float = Field(ge=0.0, le=1.0, description="BM25 relative to the query's own, in [0, 1]")
