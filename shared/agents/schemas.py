"""Structured-output schemas, looked up by name.

A ``ChatRequest`` names its schema (``response_schema="AnalystNote"``) instead
of carrying a class, so requests stay plain data in Temporal's history while the
worker validates the reply against the real pydantic model.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from enum import StrEnum
from typing import Annotated, TypeVar

from pydantic import BaseModel, BeforeValidator, Field

from shared.errors import lookup

T = TypeVar("T")


class Stance(StrEnum):
    """An analyst's overall reading."""

    BULLISH = "bullish"
    BEARISH = "bearish"
    NEUTRAL = "neutral"


def _percent_as_fraction(value: object) -> object:
    """A share written as a percentage (85 for 85%) read as the fraction it means.

    Models do this whatever the schema says, small ones most, and grammar-constrained
    decoding does not stop them: llama.cpp enforces an integer's bounds but not a
    float's (measured: ``maximum: 1`` let 85 through). Above 100 it stays an error.
    """
    if isinstance(value, int | float) and not isinstance(value, bool) and 1 < value <= 100:
        return value / 100
    return value


Fraction = Annotated[
    float,
    Field(ge=0, le=1),
    # after the Field, so the bounds stay in the JSON schema; still runs before them
    BeforeValidator(_percent_as_fraction),
]
"""A share of a whole, 0 to 1 (a percentage is read as one): sizes, reserves, confidences."""
Confidence = Annotated[Fraction, Field(description="0 = a guess, 1 = certain")]
"""How sure an agent is."""


class AnalystNote(BaseModel):
    """The generic analyst answer: a stance with its confidence and reasons."""

    stance: Stance
    confidence: Confidence
    key_points: list[str] = Field(min_length=1, description="the facts behind the stance")
    summary: str = Field(min_length=1)


RESPONSE_SCHEMAS: dict[str, type[BaseModel]] = {"AnalystNote": AnalystNote}


def register_schema(model: type[BaseModel]) -> type[BaseModel]:
    """Make ``model`` available by its class name; usable as a class decorator."""
    RESPONSE_SCHEMAS[model.__name__] = model
    return model


def schema_named(name: str, *, field: str = "response_schema") -> type[BaseModel]:
    """The schema registered as ``name``, or an error listing the known ones."""
    return lookup(RESPONSE_SCHEMAS, name, field=field, what="schema")


def first_of_each(items: Sequence[T], key: Callable[[T], str]) -> list[T]:
    """``items`` without repeats of a ``key``, the first kept: a list a schema says names each
    ticker once is normalised rather than refused (a JSON schema cannot say "unique by ticker",
    and models do repeat themselves)."""
    seen: set[str] = set()
    kept = []
    for item in items:
        if key(item) not in seen:
            seen.add(key(item))
            kept.append(item)
    return kept
