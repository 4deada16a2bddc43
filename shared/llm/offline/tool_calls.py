"""How the offline engine uses tools: call each offered tool once, arguments from context.

This is what lets tool loops run, and be tested, without a network: the engine
asks for every tool it is offered (as a careful analyst would gather all the
data first), fills required arguments from the context or the schema's
defaults, and skips a tool it cannot fill rather than inventing a value.
"""

from __future__ import annotations

from typing import Any

from shared.llm.contracts import ToolCall, ToolSpec

_MISSING = object()


def _argument(name: str, schema: dict[str, Any], context: dict[str, Any]) -> Any:
    if name in context:
        return context[name]
    if "default" in schema:
        return schema["default"]
    if schema.get("enum"):
        return schema["enum"][0]
    return _MISSING


def plan_tool_calls(tools: list[ToolSpec], context: dict[str, Any]) -> list[ToolCall]:
    """One call per offered tool whose required arguments can be filled."""
    calls = []
    for index, tool in enumerate(tools):
        properties = tool.parameters.get("properties", {})
        arguments: dict[str, Any] = {}
        for name in tool.parameters.get("required", []):
            value = _argument(name, properties.get(name, {}), context)
            if value is _MISSING:
                break
            arguments[name] = value
        else:
            calls.append(
                ToolCall(id=f"offline_{index}_{tool.name}", name=tool.name, arguments=arguments)
            )
    return calls
