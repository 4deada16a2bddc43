"""The facts in the analysts' tool results, read back into the data layer's own records.

A data tool answers ``{"as_of", "vendor", "simulated", "data"}`` (inside a
``{"truncated": true, "preview": ...}`` envelope when it was too long), or a
plain sentence when there was no data. The workflow needs a few of these facts
for later steps (the trader's last price and ATR); the offline analysts need
all of them. Both read them here, so the numbers a prompt quotes and the numbers
a rule uses are the same. Nothing is filled in: a value the tools did not give
stays ``None``.
"""

from __future__ import annotations

import json
import math
import statistics
from collections.abc import Iterable, Mapping
from typing import Any, TypeVar

from pydantic import BaseModel, Field, ValidationError

from shared.llm.contracts import ToolResult
from shared.ta.indicator_names import IndicatorByName

R = TypeVar("R", bound=BaseModel)

Payloads = Mapping[str, Any]
"""Tool name -> what it answered (the frame's ``data``); a tool called twice keeps its last."""

ATR_BARS = 14
"""Wilder's period, used when the indicator tool gave no ATR but the bars are there."""


def unwrap(answer: Any) -> Any:
    """The payload of one tool answer: out of the capping preview, then out of the frame."""
    if isinstance(answer, dict) and answer.get("truncated"):
        answer = answer.get("preview")
    if isinstance(answer, dict) and "data" in answer and "as_of" in answer:
        return answer["data"]
    return answer


def payloads(answers: Iterable[tuple[str, Any]]) -> dict[str, Any]:
    """``(tool name, parsed answer)`` pairs as ``Payloads``."""
    return {name: unwrap(answer) for name, answer in answers}


def _parsed(text: str) -> Any:
    try:
        return json.loads(text)
    except json.JSONDecodeError:
        return text


def payloads_of_results(results: Iterable[ToolResult]) -> dict[str, Any]:
    """The successful results of a tool loop as ``Payloads`` (what a workflow holds)."""
    return payloads((result.name, _parsed(result.content)) for result in results if result.ok)


def records(payload: Any, model: type[R]) -> list[R]:
    """The items of a list answer that are valid ``model`` records (preview markers skipped)."""
    items = payload if isinstance(payload, list) else [payload]
    found = []
    for item in items:
        if isinstance(item, dict):
            try:
                found.append(model.model_validate(item))
            except ValidationError:
                continue
    return found


class PriceFacts(BaseModel):
    """What the market tools said about the price: levels, trend, momentum, volatility."""

    bars: int = Field(0, description="OHLCV rows read")
    first_close: float | None = None
    last_close: float | None = None
    window_high: float | None = Field(None, description="highest high of the rows read")
    drawdown: float | None = Field(None, description="last close below the window high, 0-1")
    volatility: float | None = Field(None, description="stdev of bar-to-bar close returns")
    atr: float | None = Field(None, description="the indicator's ATR, else 14-bar mean range")
    indicators: dict[IndicatorByName, float] = Field(
        default_factory=dict, description="latest value of each indicator given"
    )

    @property
    def window_return(self) -> float | None:
        """Close-to-close change over the rows read, as a fraction."""
        if self.first_close is None or self.last_close is None or self.first_close == 0:
            return None
        return self.last_close / self.first_close - 1


def _rows(payload: Any) -> list[dict[str, float]]:
    """OHLCV rows as dicts by column; preview markers and malformed rows skipped."""
    if not isinstance(payload, dict):
        return []
    columns = payload.get("columns") or ()
    rows = []
    for row in payload.get("rows") or ():
        if isinstance(row, list) and len(row) == len(columns):
            values = dict(zip(columns, row, strict=True))
            if all(isinstance(values.get(c), int | float) for c in ("high", "low", "close")):
                rows.append({c: float(values[c]) for c in ("high", "low", "close")})
    return rows


def _latest_indicators(payload: Any) -> dict[IndicatorByName, float]:
    found: dict[IndicatorByName, float] = {}
    table = payload.get("indicators", {}) if isinstance(payload, dict) else {}
    for name, values in table.items():
        latest = values.get("latest") if isinstance(values, dict) else None
        if name in set(IndicatorByName) and isinstance(latest, int | float):
            found[IndicatorByName(name)] = float(latest)
    return found


def _mean_range(rows: list[dict[str, float]]) -> float | None:
    """The mean true range of the last ``ATR_BARS`` rows (needs one row before them)."""
    if len(rows) < ATR_BARS + 1:
        return None
    ranges = [
        max(now["high"], before["close"]) - min(now["low"], before["close"])
        for before, now in zip(rows[-ATR_BARS - 1 : -1], rows[-ATR_BARS:], strict=True)
    ]
    return statistics.fmean(ranges)


def _volatility(closes: list[float]) -> float | None:
    returns = [b / a - 1 for a, b in zip(closes, closes[1:], strict=False) if a > 0]
    return statistics.stdev(returns) if len(returns) >= 2 else None


def positive(value: float | None) -> float | None:
    """A price fact an agent may use: the typed inputs refuse zero and negatives."""
    return value if value is not None and value > 0 else None


def price_facts(found: Payloads) -> PriceFacts:
    """The price facts in the answers of ``get_ohlcv`` and ``get_indicators``."""
    rows = _rows(found.get("get_ohlcv"))
    indicators = _latest_indicators(found.get("get_indicators"))
    closes = [row["close"] for row in rows]
    high = max((row["high"] for row in rows), default=None)
    last = closes[-1] if closes else None
    drawdown = None
    if high is not None and last is not None and high > 0:
        drawdown = max(0.0, 1 - last / high)
    atr = indicators.get(IndicatorByName.ATR)
    return PriceFacts(
        bars=len(rows),
        first_close=closes[0] if closes else None,
        last_close=last,
        window_high=high,
        drawdown=drawdown,
        volatility=_volatility(closes),
        atr=atr if atr is not None and math.isfinite(atr) else _mean_range(rows),
        indicators=indicators,
    )
