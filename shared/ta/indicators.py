"""QuantAgent's five momentum indicators, computed by TA-Lib, with warm-up kept missing.

QuantAgent fills every warm-up value with 0 (``fillna(0)``), so on a short window the
model reads fake zero MACD or RSI readings as real ones. Here a value TA-Lib cannot
compute yet stays NaN in arrays and ``None`` in models and JSON, and a window too short
to give even one value is refused with the number of bars needed, so "not enough
data" is never mistaken for "flat".

The indicators are rows of one table, ``INDICATORS``: TA-Lib function, bar inputs,
output names, a parameters model (QuantAgent's defaults, sane bounds) and the
bars-needed formula. A formula is TA-Lib's lookback (the index of its first
non-NaN value) plus one; the tests check each against ``talib.abstract``.
"""

from __future__ import annotations

from collections.abc import Callable, Iterable, Sequence
from dataclasses import dataclass
from datetime import datetime
from enum import StrEnum
from typing import TYPE_CHECKING, Any

import numpy as np
from numpy.typing import NDArray
from pydantic import BaseModel, ConfigDict, Field, ValidationError, model_validator

from shared.errors import InvalidInput
from shared.market.bars import Bar, bars_to_frame, validate_bars
from shared.validation_errors import problem

if TYPE_CHECKING:
    import pandas as pd


class IndicatorName(StrEnum):
    """The indicators quantdesk computes; the values are the names requests use."""

    MACD = "macd"
    RSI = "rsi"
    ROC = "roc"
    STOCH = "stoch"
    WILLR = "willr"


class _Parameters(BaseModel):
    """Indicator periods: immutable, and unknown names refused so a typo is not ignored."""

    model_config = ConfigDict(frozen=True, extra="forbid")


class MacdParameters(_Parameters):
    """MACD periods; QuantAgent uses 12/26/9."""

    fastperiod: int = Field(12, ge=2, le=100, description="fast EMA period, in bars")
    slowperiod: int = Field(26, ge=3, le=200, description="slow EMA period, in bars; > fast")
    signalperiod: int = Field(9, ge=1, le=100, description="signal-line EMA period, in bars")

    @model_validator(mode="after")
    def _fast_below_slow(self) -> MacdParameters:
        """TA-Lib silently swaps the periods, which would mislabel the reported parameters."""
        if self.fastperiod >= self.slowperiod:
            raise ValueError(
                f"fastperiod ({self.fastperiod}) must be below slowperiod ({self.slowperiod})"
            )
        return self


class RsiParameters(_Parameters):
    """RSI period; QuantAgent uses 14."""

    timeperiod: int = Field(14, ge=2, le=100, description="Wilder smoothing period, in bars")


class RocParameters(_Parameters):
    """Rate-of-change period; QuantAgent uses 10."""

    timeperiod: int = Field(10, ge=1, le=100, description="bars back the close is compared to")


class StochParameters(_Parameters):
    """Slow stochastic periods (SMA smoothing, as QuantAgent); QuantAgent uses 14/3/3."""

    fastk_period: int = Field(14, ge=1, le=100, description="high-low range period, in bars")
    slowk_period: int = Field(3, ge=1, le=50, description="SMA smoothing of %K, in bars")
    slowd_period: int = Field(3, ge=1, le=50, description="SMA of %K giving %D, in bars")


class WillrParameters(_Parameters):
    """Williams %R period; QuantAgent uses 14."""

    timeperiod: int = Field(14, ge=2, le=100, description="high-low range period, in bars")


@dataclass(frozen=True)
class IndicatorSpec:
    """One row of ``INDICATORS``: how to compute an indicator and how many bars it needs."""

    name: IndicatorName
    label: str
    summary: str
    function: str
    inputs: tuple[str, ...]
    outputs: tuple[str, ...]
    parameters: type[_Parameters]
    bars_needed: Callable[[Any], int]


INDICATORS: dict[IndicatorName, IndicatorSpec] = {
    spec.name: spec
    for spec in (
        IndicatorSpec(
            name=IndicatorName.MACD,
            label="MACD",
            summary="trend momentum: fast minus slow EMA of the close, its signal line and "
            "their difference (histogram); crossovers mark momentum shifts",
            function="MACD",
            inputs=("close",),
            outputs=("macd", "macd_signal", "macd_hist"),
            parameters=MacdParameters,
            # TA-Lib starts all three outputs where the signal line starts.
            bars_needed=lambda p: p.slowperiod + p.signalperiod - 1,
        ),
        IndicatorSpec(
            name=IndicatorName.RSI,
            label="RSI",
            summary="relative strength index of the close, 0-100; above 70 overbought, "
            "below 30 oversold",
            function="RSI",
            inputs=("close",),
            outputs=("rsi",),
            parameters=RsiParameters,
            # One extra bar: the first change needs a previous close.
            bars_needed=lambda p: p.timeperiod + 1,
        ),
        IndicatorSpec(
            name=IndicatorName.ROC,
            label="ROC",
            summary="rate of change: percent change of the close over the period",
            function="ROC",
            inputs=("close",),
            outputs=("roc",),
            parameters=RocParameters,
            bars_needed=lambda p: p.timeperiod + 1,
        ),
        IndicatorSpec(
            name=IndicatorName.STOCH,
            label="Stochastic",
            summary="slow stochastic oscillator, 0-100: where the close sits in the recent "
            "high-low range (%K) and its moving average (%D); above 80 overbought, below 20 "
            "oversold",
            function="STOCH",
            inputs=("high", "low", "close"),
            outputs=("stoch_k", "stoch_d"),
            parameters=StochParameters,
            bars_needed=lambda p: p.fastk_period + p.slowk_period + p.slowd_period - 2,
        ),
        IndicatorSpec(
            name=IndicatorName.WILLR,
            label="Williams %R",
            summary="Williams %R, -100 to 0: the close against the recent high-low range; "
            "above -20 overbought, below -80 oversold",
            function="WILLR",
            inputs=("high", "low", "close"),
            outputs=("willr",),
            parameters=WillrParameters,
            bars_needed=lambda p: p.timeperiod,
        ),
    )
}
"""Indicator name -> TA-Lib function, inputs, outputs, default parameters, bars needed."""


class IndicatorSeries(BaseModel):
    """An indicator over a window of bars: one value per bar and output, None during warm-up."""

    name: IndicatorName
    parameters: dict[str, int] = Field(description="the periods used, defaults filled in")
    times: list[datetime] = Field(description="the bars' times (period starts, UTC), oldest first")
    values: dict[str, list[float | None]] = Field(
        description="output name -> one value per time; None where TA-Lib has no value yet"
    )
    latest: dict[str, float | None] = Field(description="output name -> its value at the last bar")
    bars_needed: int = Field(description="the fewest bars that give at least one value")


def indicator_spec(name: IndicatorName | str) -> IndicatorSpec:
    """The table row of ``name``, or an error listing the known indicators."""
    try:
        return INDICATORS[IndicatorName(name)]
    except ValueError:
        raise InvalidInput(
            "indicator",
            f"unknown indicator {name!r}",
            fix=f"Use one of: {', '.join(IndicatorName)}.",
        ) from None


def compute_indicator(
    name: IndicatorName | str, bars: Sequence[Bar], **parameters: int
) -> IndicatorSeries:
    """``name`` over ``bars`` (oldest first), with ``parameters`` overriding the defaults.

    Raises ``InvalidInput`` on ``indicator`` (unknown name), on the parameter's name
    (unknown or out of bounds) or on ``bars`` (fewer than the parameters need, or
    bars ``validate_bars`` rejects).
    """
    spec = indicator_spec(name)
    chosen = _parameters(spec, parameters)
    needed = spec.bars_needed(chosen)
    _check_window(spec, chosen, needed, len(bars))
    frame = bars_to_frame(bars)
    validate_bars(frame)
    inputs = talib_inputs(frame, spec.inputs)
    import talib  # with pandas, 0.3 s: loaded by the first computation, not by every importer

    raw = getattr(talib, spec.function)(*inputs, **chosen.model_dump())
    arrays: tuple[NDArray[np.float64], ...] = raw if isinstance(raw, tuple) else (raw,)
    values = {
        output: missing_as_none(array) for output, array in zip(spec.outputs, arrays, strict=True)
    }
    return IndicatorSeries(
        name=spec.name,
        parameters=chosen.model_dump(),
        times=[bar.time for bar in bars],
        values=values,
        latest={output: series[-1] for output, series in values.items()},
        bars_needed=needed,
    )


def latest_indicator_values(
    bars: Sequence[Bar], names: Iterable[IndicatorName | str] = tuple(IndicatorName)
) -> dict[str, float | None]:
    """Output name -> value at the last bar, for each of ``names`` with default parameters.

    The compact record a result keeps (e.g. ``{"macd": ..., "rsi": ...}``); output
    names are unique across ``INDICATORS``, so one flat mapping holds them all.
    """
    latest: dict[str, float | None] = {}
    for name in names:
        latest.update(compute_indicator(name, bars).latest)
    return latest


def _parameters(spec: IndicatorSpec, given: dict[str, int]) -> _Parameters:
    """The validated parameters, with pydantic's error turned into one naming the field."""
    try:
        return spec.parameters.model_validate(given)
    except ValidationError as error:
        first = error.errors()[0]
        field = ".".join(map(str, first["loc"])) or "parameters"
        raise InvalidInput(field, f"{spec.label}: {problem(first)}") from None


def _check_window(spec: IndicatorSpec, chosen: _Parameters, needed: int, given: int) -> None:
    """Refuse a window that would give no value at all rather than an all-None series."""
    if given < needed:
        periods = ", ".join(str(value) for value in chosen.model_dump().values())
        raise InvalidInput(
            "bars",
            f"{spec.label}({periods}) needs at least {needed} bars for its first value "
            f"but {given} were given",
            fix="Use a longer window (lookback) or shorter periods.",
        )


def talib_inputs(frame: pd.DataFrame, columns: Iterable[str]) -> list[NDArray[np.float64]]:
    """Bar-frame columns as the contiguous float arrays TA-Lib takes, oldest first."""
    return [np.ascontiguousarray(frame[column].to_numpy(np.float64)) for column in columns]


def missing_as_none(array: NDArray[np.float64]) -> list[float | None]:
    """The array as a list, NaN (TA-Lib's "not computable yet") and infinities (a division
    by zero volume) as None, never as 0."""
    return [float(value) if np.isfinite(value) else None for value in array]
