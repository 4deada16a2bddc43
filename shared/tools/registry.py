"""The tool registry: name → typed function.

A tool is a plain function over a pydantic arguments model, so its JSON schema
for the model comes from the same type that validates the model's arguments
(this is why langchain-core is not needed for tool schemas). The workflow may
fix some arguments through the request's ``context`` (symbol, ``as_of``, a data
key): fixed values override whatever the model asked for, which is how a model
is kept from reading past the analysis time, and they are hidden from the
schema the model sees.
"""

from __future__ import annotations

import json
from collections.abc import Callable, Iterable
from dataclasses import dataclass
from typing import Any

from pydantic import BaseModel, ValidationError

from shared.errors import InvalidInput, ToolError, lookup
from shared.llm.contracts import ToolRequest, ToolResult, ToolSpec


@dataclass(frozen=True)
class Tool:
    """One callable tool: its arguments model and the function that answers."""

    name: str
    description: str
    arguments: type[BaseModel]
    run: Callable[[Any], object]


TOOLS: dict[str, Tool] = {}


def register_tool(tool: Tool) -> Tool:
    """Add ``tool`` to the registry (names are unique)."""
    if tool.name in TOOLS and TOOLS[tool.name] is not tool:
        raise ValueError(f"tool {tool.name!r} is registered twice")
    TOOLS[tool.name] = tool
    return tool


def tool_named(name: str) -> Tool:
    """The registered tool, or an error listing the known ones."""
    return lookup(TOOLS, name, field="tools", what="tool")


def tool_specs(names: Iterable[str], *, fixed: Iterable[str] = ()) -> list[ToolSpec]:
    """The schemas to offer the model, without the arguments the workflow fixes."""
    hidden = set(fixed)
    specs = []
    for name in names:
        tool = tool_named(name)
        schema = tool.arguments.model_json_schema()
        properties = {k: v for k, v in schema.get("properties", {}).items() if k not in hidden}
        required = [k for k in schema.get("required", []) if k not in hidden]
        parameters: dict[str, Any] = {"type": "object", "properties": properties}
        if required:
            parameters["required"] = required
        if "$defs" in schema:
            parameters["$defs"] = schema["$defs"]
        specs.append(ToolSpec(name=name, description=tool.description, parameters=parameters))
    return specs


def _render(value: object) -> str:
    """Tool output as text the model reads: JSON for models, str otherwise."""
    if isinstance(value, BaseModel):
        return value.model_dump_json()
    if isinstance(value, str):
        return value
    return json.dumps(value, default=str)


def run_tool(request: ToolRequest) -> ToolResult:
    """Validate the call's arguments (fixed context wins) and run the tool.

    Bad arguments and ``ToolError`` come back as a failed result the model can
    read and correct; anything else propagates so the activity is retried.
    """
    call = request.call
    try:
        tool = tool_named(call.name)
        field_names = set(tool.arguments.model_fields)
        fixed = {k: v for k, v in request.context.items() if k in field_names}
        arguments = tool.arguments.model_validate({**call.arguments, **fixed})
        content = _render(tool.run(arguments))
    except ValidationError as error:
        problems = "; ".join(f"{'.'.join(map(str, e['loc']))}: {e['msg']}" for e in error.errors())
        return ToolResult(
            call_id=call.id,
            name=call.name,
            ok=False,
            content=f"error: invalid arguments for {call.name}: {problems}",
        )
    except (ToolError, InvalidInput) as error:
        return ToolResult(call_id=call.id, name=call.name, ok=False, content=f"error: {error}")
    return ToolResult(call_id=call.id, name=call.name, content=content)
