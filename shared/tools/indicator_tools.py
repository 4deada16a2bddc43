"""The indicator tools: one per row of ``shared.ta.indicators.INDICATORS``.

The model chooses only the periods; the bars are the analysis window, fixed by the
workflow through the request context (``tool_specs(..., fixed=["bars"])`` hides
them), so the model can neither invent prices nor read past the analysis time.

Each answer holds the last ``VALUES_SHOWN`` values of every output, not the whole
window: a tool message stays around 1-2 KB, and a model reads crossovers and
trends off the recent values anyway. Values are rounded to ``SIGNIFICANT_DIGITS``
significant digits (the full series is ``compute_indicator``'s), and warm-up values
are ``null``, never 0.

Errors: a window too short or out-of-bounds periods raise ``InvalidInput``, which
``run_tool`` returns to the model as an error result naming the field and, for a
short window, the bars needed and given.
"""

from __future__ import annotations

from datetime import datetime
from typing import Annotated

from pydantic import BaseModel, Field, WithJsonSchema, create_model

from shared.market.bars import Bar
from shared.ta.indicators import INDICATORS, IndicatorName, IndicatorSpec, compute_indicator
from shared.tools.registry import Tool, register_tool

VALUES_SHOWN = 30
"""How many of the most recent values of each output a tool answer holds."""

SIGNIFICANT_DIGITS = 6
"""Precision of the values a tool answer holds; more only costs the model tokens."""


class IndicatorToolOutput(BaseModel):
    """What an indicator tool tells the model."""

    indicator: IndicatorName
    parameters: dict[str, int] = Field(description="the periods used, defaults filled in")
    bars_given: int = Field(description="bars in the analysis window")
    bars_needed: int = Field(description="the fewest bars that give a first value")
    values_shown: int = Field(description="how many of the most recent values each list holds")
    times: list[datetime] = Field(description="times of the values shown, oldest first")
    values: dict[str, list[float | None]] = Field(
        description="output -> its last values; null where there are too few bars yet"
    )
    latest: dict[str, float | None] = Field(description="output -> its value at the last bar")


class _FixedBars(BaseModel):
    """The argument every indicator tool shares, fixed by the workflow and hidden from the model."""

    # A plain schema, because a reference to Bar would put Bar's schema into the $defs of
    # every spec the model sees, though the field itself is hidden from it.
    bars: Annotated[list[Bar], WithJsonSchema({"type": "array", "items": {"type": "object"}})] = (
        Field(description="the analysis window, oldest first; fixed by the workflow")
    )


def _rounded(value: float | None) -> float | None:
    """``value`` to ``SIGNIFICANT_DIGITS`` significant digits, so small FX values keep theirs."""
    return None if value is None else float(f"{value:.{SIGNIFICANT_DIGITS}g}")


def _answer(spec: IndicatorSpec, arguments: _FixedBars) -> IndicatorToolOutput:
    """Compute the indicator over the fixed bars and keep the tail the model reads."""
    bars = arguments.bars
    series = compute_indicator(spec.name, bars, **arguments.model_dump(exclude={"bars"}))
    shown = min(VALUES_SHOWN, len(series.times))
    return IndicatorToolOutput(
        indicator=spec.name,
        parameters=series.parameters,
        bars_given=len(bars),
        bars_needed=series.bars_needed,
        values_shown=shown,
        times=series.times[-shown:],
        values={k: [_rounded(v) for v in vs[-shown:]] for k, vs in series.values.items()},
        latest={k: _rounded(v) for k, v in series.latest.items()},
    )


def _register(spec: IndicatorSpec) -> Tool:
    """The tool of one table row: its periods model plus the fixed ``bars`` field."""
    arguments = create_model(
        f"Compute{spec.name.capitalize()}Arguments",
        __base__=(spec.parameters, _FixedBars),
        __doc__=f"Arguments of compute_{spec.name}: periods chosen by the model, bars fixed.",
    )
    description = (
        f"Compute {spec.label} ({spec.summary}) over the analysis window's bars. "
        f"Returns the last {VALUES_SHOWN} values of {', '.join(spec.outputs)} and the latest; "
        "null means too few bars for a value yet."
    )
    return register_tool(
        Tool(
            name=f"compute_{spec.name}",
            description=description,
            arguments=arguments,
            run=lambda args: _answer(spec, args),
        )
    )


INDICATOR_TOOLS: tuple[Tool, ...] = tuple(_register(spec) for spec in INDICATORS.values())
INDICATOR_TOOL_NAMES: tuple[str, ...] = tuple(tool.name for tool in INDICATOR_TOOLS)
"""The names to offer an indicator agent: ``compute_macd``, ``compute_rsi``, ..."""
