"""The test-only tool of the probe workflow (imported outside the workflow sandbox)."""

from __future__ import annotations

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
