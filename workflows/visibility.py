"""What a run shows in the Web UI's list and filters: its flow, ticker, portfolio, as_of.

Each workflow tags itself once it knows these (the as_of of a Pipeline is only
known after it has been resolved from the data), so ``QuantdeskFlow="Pipeline"
AND Symbol="GOOG"`` finds every GOOG analysis however it was started: by the CLI,
``temporal workflow start``, a schedule or a parent run.
"""

from __future__ import annotations

from datetime import datetime
from typing import Any

from temporalio import workflow
from temporalio.common import SearchAttributeKey

with workflow.unsafe.imports_passed_through():
    from shared import search_attributes as names

FLOW = SearchAttributeKey.for_keyword(names.FLOW)
SYMBOL = SearchAttributeKey.for_keyword(names.SYMBOL)
PORTFOLIO = SearchAttributeKey.for_keyword(names.PORTFOLIO)
AS_OF = SearchAttributeKey.for_datetime(names.AS_OF)


def tag_run(
    flow: str,
    *,
    symbol: str | None = None,
    portfolio: str | None = None,
    as_of: datetime | None = None,
) -> None:
    """Set this run's search attributes (those given; the rest stay as they are)."""
    updates: list[Any] = [FLOW.value_set(flow)]
    if symbol is not None:
        updates.append(SYMBOL.value_set(symbol))
    if portfolio is not None:
        updates.append(PORTFOLIO.value_set(portfolio))
    if as_of is not None:
        updates.append(AS_OF.value_set(as_of))
    workflow.upsert_search_attributes(updates)
