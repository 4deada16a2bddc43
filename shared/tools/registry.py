"""The tool registry: name → typed function.

A tool is a plain function over a pydantic arguments model, so its JSON schema
for the model comes from the same type that validates the model's arguments
(this is why langchain-core is not needed for tool schemas). The workflow may
fix some arguments through the request's ``context`` (symbol, ``as_of``, a data
key): fixed values override whatever the model asked for, which is how a model
is kept from reading past the analysis time, and they are hidden from the
schema the model sees. A tool's ``context_fields`` (the data tools' ``as_of``)
may come from the context only: they are always hidden, a model's value is
dropped, and a context without them is refused.

Data tools need services (the data router, the object store). The caller of
``run_tool`` hands in a function that builds them, called only when a tool uses
them or an answer is too big to return whole, so a worker whose tools need
neither never connects to a vendor or to S3. An answer over
``capping.MAX_CONTENT_CHARS`` is stored whole in the payloads bucket and the
model reads a preview naming the key; a tool that returns ``ToolOutput`` names
the vendor that answered, which the result records.
"""

from __future__ import annotations

import functools
import json
from collections.abc import Callable, Iterable
from dataclasses import dataclass
from typing import Any

from pydantic import BaseModel, ValidationError

from shared.data.router import DataRouter
from shared.errors import InvalidInput, NoData, NotConfigured, ToolError, lookup
from shared.llm.contracts import ToolRequest, ToolResult, ToolSpec
from shared.storage.claim_check import ClaimCheck
from shared.storage.objects import ObjectRef, ObjectStore
from shared.tools.capping import MAX_CONTENT_CHARS, preview, result_ref

# How much of unparseable arguments an error quotes back to the model.
_MAX_QUOTED = 500


@dataclass(frozen=True)
class ToolServices:
    """What data tools read through and where oversized answers are stored."""

    router: DataRouter
    store: ObjectStore | None = None
    claims: ClaimCheck | None = None
    """Where answers too large to travel inline are stored; None keeps every answer inline."""


ServicesProvider = Callable[[], ToolServices]
"""Builds (or returns the cached) services; called only when a call needs them."""


@dataclass(frozen=True)
class ToolOutput:
    """A tool's answer with the vendor that gave it and those passed over for its time,
    recorded on the ``ToolResult``."""

    value: object
    vendor: str | None = None
    passed_over: tuple[str, ...] = ()


@dataclass(frozen=True)
class Tool:
    """One callable tool: its arguments model and the function that answers.

    ``run(arguments)``, or ``run(arguments, services)`` when ``uses_services``.
    """

    name: str
    description: str
    arguments: type[BaseModel]
    run: Callable[..., object]
    uses_services: bool = False
    context_fields: frozenset[str] = frozenset()


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
    hidden = frozenset(fixed)
    return [_tool_spec(name, hidden) for name in names]


@functools.cache
def _tool_spec(name: str, fixed: frozenset[str]) -> ToolSpec:
    """One tool's spec, built once per process: pydantic builds a JSON schema anew at every
    ``model_json_schema`` call, and every agent turn of every run asks (2 s of a 60-name
    desk's 62 s of GIL, issue 39). Specs are never changed once built."""
    tool = tool_named(name)
    hidden = fixed | tool.context_fields
    schema = tool.arguments.model_json_schema()
    properties = {k: v for k, v in schema.get("properties", {}).items() if k not in hidden}
    required = [k for k in schema.get("required", []) if k not in hidden]
    parameters: dict[str, Any] = {"type": "object", "properties": properties}
    if required:
        parameters["required"] = required
    if "$defs" in schema:
        parameters["$defs"] = schema["$defs"]
    return ToolSpec(name=name, description=tool.description, parameters=parameters)


def _render(value: object) -> str:
    """Tool output as text the model reads: JSON for models, str otherwise."""
    if isinstance(value, BaseModel):
        return value.model_dump_json()
    if isinstance(value, str):
        return value
    return json.dumps(value, default=str)


def _arguments(tool: Tool, request: ToolRequest) -> BaseModel:
    """The model's arguments with the context's fixed values on top, validated.

    Only these validation errors are the model's to fix; one raised inside a tool
    is a bug and propagates.
    """
    raw = request.call.unparsed_arguments
    if raw is not None:
        raise ToolError(
            f"the arguments of {tool.name} are not a JSON object: {raw[:_MAX_QUOTED]!r}.",
            fix=f"Call {tool.name} again with its arguments as one JSON object.",
        )
    missing = sorted(tool.context_fields - set(request.context))
    if missing:
        raise InvalidInput(
            missing[0],
            f"tool {tool.name} takes it from the workflow's context, which has none",
            fix="Put it in the tool context of the step that offers this tool.",
        )
    field_names = set(tool.arguments.model_fields)
    asked = {k: v for k, v in request.call.arguments.items() if k not in tool.context_fields}
    fixed = {k: v for k, v in request.context.items() if k in field_names}
    try:
        return tool.arguments.model_validate({**asked, **fixed})
    except ValidationError as error:
        problems = "; ".join(f"{'.'.join(map(str, e['loc']))}: {e['msg']}" for e in error.errors())
        raise ToolError(f"invalid arguments for {tool.name}: {problems}") from None


def _services(tool: Tool, services: ServicesProvider | None) -> ToolServices:
    if services is None:
        raise NotConfigured(f"tool {tool.name} reads data, but this worker has no data services.")
    return services()


def _capped(
    content: str,
    request: ToolRequest,
    arguments: BaseModel,
    services: ServicesProvider | None,
) -> tuple[str, ObjectRef | None]:
    """``content``, or its preview once the whole is stored; and the stored ref, if any."""
    if len(content) <= MAX_CONTENT_CHARS:
        return content, None
    store = services().store if services is not None else None
    if store is None:
        return preview(content, None), None
    ref = result_ref(
        request.call.name,
        arguments.model_dump(mode="json"),
        request.context.get("result_key_prefix"),
    )
    store.put_bytes(ref, content.encode())
    return preview(content, ref), ref


def run_tool(request: ToolRequest, services: ServicesProvider | None = None) -> ToolResult:
    """Validate the call's arguments (fixed context wins) and run the tool.

    Bad arguments, ``ToolError`` and ``NotConfigured`` come back as a failed result
    the model can read; ``NoData`` comes back as an ordinary answer saying so;
    anything else (``RateLimited``, ``VendorFailure``, a tool's own bug) propagates
    so the activity is retried.
    """
    call = request.call
    try:
        tool = tool_named(call.name)
        arguments = _arguments(tool, request)
        if tool.uses_services:
            answer = tool.run(arguments, _services(tool, services))
        else:
            answer = tool.run(arguments)
    except NoData as error:
        return ToolResult(call_id=call.id, name=call.name, content=str(error))
    except (ToolError, InvalidInput, NotConfigured) as error:
        return ToolResult(call_id=call.id, name=call.name, ok=False, content=f"error: {error}")
    output = answer if isinstance(answer, ToolOutput) else ToolOutput(answer)
    content, ref = _capped(_render(output.value), request, arguments, services)
    return ToolResult(
        call_id=call.id,
        name=call.name,
        content=content,
        vendor=output.vendor,
        passed_over=list(output.passed_over),
        full_result=ref,
    )


def claim_checked(
    result: ToolResult, request: ToolRequest, services: ServicesProvider, *, inline_max: int
) -> ToolResult:
    """``result`` with its content stored when it is larger than ``inline_max`` bytes: the
    claim goes with it, and the content too only when the workflow reads it
    (``request.inline``). A small answer never builds the services: a tool that reads no
    store must not need one."""
    if len(result.content.encode()) <= inline_max:
        return result
    claims = services().claims
    claim = claims.claim(result.content) if claims is not None else None
    if claim is None:
        return result
    content = result.content if request.inline else ""
    return result.model_copy(update={"stored": claim, "content": content})
