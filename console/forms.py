"""A start form per flow, built from the flow's own input model, and its answers checked by it.

The fields come from the model's JSON schema: a choice becomes a menu, a list of
choices a set of boxes, a list of words (an AutoRun's ``symbols``) one text box of words
separated by spaces or commas, a number a number field, a yes/no a menu, a nested model (the
``llm`` choice, say) its own fields named ``llm.provider`` and so on. Fields that take
structured data (a bar list, decisions) are left to the CLI and ``temporal workflow
start``. What a person typed is checked by the same model the workflow validates with,
and each problem is shown next to its field (``shared.validation_errors`` words it).
"""

from __future__ import annotations

from dataclasses import dataclass, field
from datetime import UTC, datetime
from typing import Any

from pydantic import BaseModel, ValidationError
from starlette.datastructures import FormData

from shared.validation_errors import WHOLE_INPUT, field_name, problem
from shared.watchlists.symbols import split_symbols

NESTING = 1
"""How deep nested models are opened up into fields (``llm.provider``, not deeper)."""


@dataclass
class FormField:
    """One input of a start form."""

    name: str
    kind: str  # text | number | choice | choices | words | yesno | datetime
    label: str
    help: str = ""
    required: bool = False
    default: Any = None
    options: list[str] = field(default_factory=list)


def _resolved(schema: dict[str, Any], defs: dict[str, Any]) -> dict[str, Any]:
    """``schema`` with ``$ref`` followed and an optional (``X | None``) read as ``X``."""
    if "$ref" in schema:
        return _resolved({**defs[schema["$ref"].rsplit("/", 1)[-1]], **_own(schema)}, defs)
    options = [s for s in schema.get("anyOf", []) if s.get("type") != "null"]
    if options:
        numeric = [s for s in options if s.get("type") in ("number", "integer")]
        return _resolved({**(numeric or options)[0], **_own(schema)}, defs)
    return schema


def _own(schema: dict[str, Any]) -> dict[str, Any]:
    return {k: v for k, v in schema.items() if k in ("default", "description", "title")}


def _kind(schema: dict[str, Any], defs: dict[str, Any]) -> tuple[str, list[str]] | None:
    """The input kind and its options, or None for structured data the form leaves out."""
    kind = schema.get("type")
    if "enum" in schema or "const" in schema:
        return "choice", [str(v) for v in schema.get("enum", [schema.get("const")])]
    if kind == "string":
        return ("datetime" if schema.get("format") == "date-time" else "text"), []
    if kind in ("number", "integer"):
        return "number", []
    if kind == "boolean":
        return "yesno", ["yes", "no"]
    if kind == "array":
        items = _resolved(schema.get("items", {}), defs)
        if "enum" in items:
            return "choices", [str(v) for v in items["enum"]]
        if items.get("type") == "string":
            return "words", []
    return None


def form_fields(model: type[BaseModel]) -> list[FormField]:
    """The form of ``model``: one field per input a person can type."""
    root = model.model_json_schema()
    return _fields(root, root.get("$defs", {}), prefix="", depth=0)


def _fields(
    schema: dict[str, Any], defs: dict[str, Any], prefix: str, depth: int
) -> list[FormField]:
    required = set(schema.get("required", []))
    fields: list[FormField] = []
    for name, raw in schema.get("properties", {}).items():
        spec = _resolved(raw, defs)
        path = f"{prefix}{name}"
        if spec.get("type") == "object" and "properties" in spec:
            if depth < NESTING:
                fields += _fields(spec, defs, f"{path}.", depth + 1)
            continue
        kind = _kind(spec, defs)
        if kind is None:
            continue
        fields.append(
            FormField(
                name=path,
                kind=kind[0],
                label=path,
                help=spec.get("description", ""),
                required=name in required and depth == 0,
                default=spec.get("default"),
                options=kind[1],
            )
        )
    return fields


def payload_of(fields: list[FormField], form: FormData) -> dict[str, Any]:
    """The workflow input a filled form stands for: blank fields left out (their defaults hold),
    a time without a zone taken as UTC (as the CLI does)."""
    payload: dict[str, Any] = {}
    declared = {spec.name for spec in fields}
    # A key the form has no box for (a hand-made POST, an old bookmark) goes to the model
    # as given, so it is refused by name like any other unknown field.
    for name in form:
        if name not in declared:
            _put(payload, name, form.get(name))
    for spec in fields:
        if spec.kind == "choices":
            value: Any = [str(v) for v in form.getlist(spec.name)]
            if not value:
                continue
        else:
            value = str(form.get(spec.name) or "").strip()
            if not value:
                continue
            if spec.kind == "words":
                value = split_symbols([value])
            elif spec.kind == "yesno":
                value = value == "yes"
            elif spec.kind == "datetime":
                value = _utc(value)
        _put(payload, spec.name, value)
    return payload


def _put(payload: dict[str, Any], name: str, value: Any) -> None:
    """Set the dotted field ``name`` (``llm.provider``) of ``payload`` to ``value``."""
    *parents, leaf = name.split(".")
    target = payload
    for part in parents:
        if not isinstance(target.get(part), dict):
            target[part] = {}
        target = target[part]
    target[leaf] = value


def _utc(text: str) -> str:
    """An ISO time as given, with UTC added when it names no zone; unreadable text as is (the
    model then says what is wrong with it)."""
    try:
        moment = datetime.fromisoformat(text)
    except ValueError:
        return text
    return (moment if moment.tzinfo else moment.replace(tzinfo=UTC)).isoformat()


def problems_of(model: type[BaseModel], payload: dict[str, Any]) -> dict[str, str]:
    """Each field's problem (by field name; ``(input)`` for the input as a whole), or none."""
    try:
        model.model_validate(payload)
    except ValidationError as error:
        found: dict[str, str] = {}
        for item in error.errors():
            name = field_name(item)
            # A problem inside a list names the list's field: that is where the boxes are.
            name = ".".join(p for p in name.split(".") if not p.isdigit()) or WHOLE_INPUT
            found.setdefault(name, problem(item))
        return found
    return {}
