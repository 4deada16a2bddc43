"""The ``run_tool`` activity: every agent tool call, on the ``tools`` queue."""

from __future__ import annotations

from temporalio import activity

from activities.failures import as_temporal_failures
from shared.llm.contracts import ToolRequest, ToolResult
from shared.tools import catalog  # noqa: F401  (registers the product's tools)
from shared.tools.registry import run_tool


@activity.defn(name="run_tool")
def run_tool_activity(request: ToolRequest) -> ToolResult:
    """Run one tool call; bad arguments come back as a failed result for the model."""
    with as_temporal_failures():
        return run_tool(request)
