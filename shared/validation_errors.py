"""Pydantic validation errors told as people need them: the field, the value given, the rule.

pydantic's own message says what was expected (``Input should be '1m', '5m', ...``)
but not what was given, and a user who typed ``7x`` into a long command has to
guess which option it was. Every place that turns a ``ValidationError`` into a
message (workflow inputs, CLI options, data files, indicator parameters) goes
through here, so each says ``timeframe '7x' is not one of '1m', '5m', ...``.

Values are shown as ``repr`` shortened to ``MAX_SHOWN`` characters, so a long
text or a whole bar list cannot flood a message. No input model carries a secret
(keys live in the workers' settings; ``tests/test_input_errors.py`` checks every
workflow input model), and a field whose name says it holds one is never echoed.
"""

from __future__ import annotations

import re
from typing import Any

from pydantic import ValidationError
from pydantic_core import ErrorDetails

from shared.errors import InvalidInput
from shared.unknown_fields import UNKNOWN_FIELD

MAX_SHOWN = 80
"""Characters of a given value a message shows; longer ones are cut with an ellipsis."""

SECRET_NAME = re.compile(r"secret|password|passwd|api_?key|access_?key|token$", re.IGNORECASE)
"""Field names whose values are never echoed."""

_CHOICES = {"enum", "literal_error"}
"""Error types whose context lists the accepted values."""


def shown(value: Any, limit: int = MAX_SHOWN) -> str:
    """``value`` as a message shows it: its ``repr``, cut to ``limit`` characters."""
    text = repr(value)
    return text if len(text) <= limit else text[: limit - 1] + "…"


WHOLE_INPUT = "(input)"
"""How a problem of the input as a whole (not of one field) is named."""


def field_name(item: ErrorDetails) -> str:
    """The dotted path of the field an error item is about, e.g. ``llm.provider``."""
    return ".".join(str(part) for part in item["loc"]) or WHOLE_INPUT


def problem(item: ErrorDetails) -> str:
    """What is wrong with one field, the value given included: ``'7x' is not one of ...``."""
    rule = item["msg"].removeprefix("Value error, ")
    if item["type"] == "missing":
        return "missing (required)"
    if item["type"] == UNKNOWN_FIELD:
        return rule  # names the field and the nearest known one
    if not item["loc"] and isinstance(item["input"], dict):
        return rule  # a rule across fields: the value is the whole object
    secret = any(SECRET_NAME.search(str(part)) for part in item["loc"])
    given = "(a value not shown)" if secret else shown(item["input"])
    if item["type"] in _CHOICES:
        return f"{given} is not one of {item.get('ctx', {}).get('expected', rule)}"
    return f"{given} is invalid: {rule}"


def _named(item: ErrorDetails, prefix: str = "") -> str:
    if item["type"] == UNKNOWN_FIELD:
        return problem(item)
    return f"`{prefix}{field_name(item)}` {problem(item)}"


def describe_validation_error(error: ValidationError) -> str:
    """Every problem of ``error``, each after its field in backticks, joined by ``; ``."""
    return "; ".join(_named(item) for item in error.errors())


def invalid_input(error: ValidationError, *, field_prefix: str = "") -> InvalidInput:
    """``error`` as an ``InvalidInput`` on its first field, with every other problem after it."""
    first, *others = error.errors()
    field = field_prefix + field_name(first)
    also = "".join(f"; also {_named(item, field_prefix)}" for item in others)
    return InvalidInput(field, problem(first) + also)
