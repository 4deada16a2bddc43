"""The test-only tool of the probe workflow (imported outside the workflow sandbox)."""

from __future__ import annotations

from collections import Counter
from typing import Any

from pydantic import BaseModel, Field

from shared.tools.registry import Tool, register_tool

TEST_TOOLS_QUEUE = "test-tools"


class PriceHistoryArgs(BaseModel):
    """Arguments of the test tool."""

    symbol: str = Field(description="ticker")
    closes: list[float] = Field(description="fixed by the workflow")


def _price_history(args: PriceHistoryArgs) -> dict[str, Any]:
    if args.symbol == "BROKEN":
        raise RuntimeError("vendor down")
    return {"symbol": args.symbol, "close": args.closes}


PRICE_HISTORY = register_tool(
    Tool(
        name="get_price_history",
        description="Daily closes of a symbol.",
        arguments=PriceHistoryArgs,
        run=_price_history,
    )
)


CALLS: Counter[str] = Counter()
"""How many times each ``count_and_fail`` call ran, by its ``key``: what a test of the batch's
retries reads (the tools worker runs in the test's process)."""


class CountAndFailArgs(BaseModel):
    """Arguments of the counting tool: a key of the test's own, and how to fail."""

    key: str
    fail_first: int = Field(0, description="attempts that fail (retryably) before one answers")
    failure: str = Field("RuntimeError", description="the Python error those attempts raise")


def _count_and_fail(args: CountAndFailArgs) -> str:
    CALLS[args.key] += 1
    if CALLS[args.key] <= args.fail_first:
        raise {"RuntimeError": RuntimeError, "TypeError": TypeError}[args.failure](
            f"{args.key} failed on attempt {CALLS[args.key]}"
        )
    return f"{args.key} answered on attempt {CALLS[args.key]}"


COUNT_AND_FAIL = register_tool(
    Tool(
        name="count_and_fail",
        description="Answers after failing a given number of times (tests only).",
        arguments=CountAndFailArgs,
        run=_count_and_fail,
    )
)
