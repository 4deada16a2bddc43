"""Alpaca's published OpenAPI spec, and a checker for the part of JSON Schema it uses.

Tests hold the stand-in's answers to the spec's schemas with it, so the stand-in
cannot drift from what Alpaca documents (jsonschema is not a dependency, and
OpenAPI 3.0's ``nullable`` is not JSON Schema anyway). The spec is kept as Alpaca
published it, beside this module (``PROVENANCE.md`` says where it comes from).

The checker is stricter than the spec in one way: a key the schema does not
list is a problem, so the stand-in sends nothing a client could come to rely on
that Alpaca does not promise.
"""

from __future__ import annotations

import functools
import json
import uuid
from datetime import date, datetime
from decimal import Decimal, InvalidOperation
from pathlib import Path
from typing import Any

SPEC = Path(__file__).with_name("trading-api.json")
Schema = dict[str, Any]


@functools.cache
def load_spec() -> Schema:
    result: Schema = json.loads(SPEC.read_text())
    return result


def schema(name: str) -> Schema:
    """A component schema by name (``Order``, ``legacy_clock``...)."""
    found: Schema = load_spec()["components"]["schemas"][name]
    return found


def problems(instance: Any, schema_name: str) -> list[str]:
    """Where ``instance`` breaks the spec's ``schema_name``, one line each; empty if it conforms."""
    return _check(instance, {"$ref": f"#/components/schemas/{schema_name}"}, "$")


def _resolve(node: Schema) -> Schema:
    while "$ref" in node:
        target: Any = load_spec()
        for part in node["$ref"].removeprefix("#/").split("/"):
            target = target[part]
        node = target
    return node


_TYPES: dict[str, tuple[type, ...]] = {
    "string": (str,),
    "integer": (int,),
    "number": (int, float, Decimal),
    "boolean": (bool,),
    "object": (dict,),
    "array": (list,),
}


def _check(value: Any, node: Schema, where: str) -> list[str]:
    node = _resolve(node)
    if value is None:
        return [] if node.get("nullable") or "type" not in node else [f"{where}: null"]
    for combinator in ("anyOf", "oneOf"):
        if combinator in node:
            branches = [_check(value, branch, where) for branch in node[combinator]]
            if all(branches):
                return [f"{where}: matches no branch of {combinator}"] + branches[0]
            return []
    kind = node.get("type")
    if kind is not None:
        allowed = _TYPES[kind]
        if not isinstance(value, allowed) or (isinstance(value, bool) and bool not in allowed):
            return [f"{where}: {type(value).__name__} is not {kind}"]
    if "enum" in node and value not in node["enum"]:
        return [f"{where}: {value!r} not in {node['enum']}"]
    if isinstance(value, str):
        return _string_problems(value, node, where)
    if isinstance(value, dict):
        return _object_problems(value, node, where)
    if isinstance(value, list):
        items = node.get("items", {})
        return [p for i, item in enumerate(value) for p in _check(item, items, f"{where}[{i}]")]
    return []


def _string_problems(value: str, node: Schema, where: str) -> list[str]:
    found = []
    if len(value) < node.get("minLength", 0):
        found.append(f"{where}: shorter than {node['minLength']}")
    if "maxLength" in node and len(value) > node["maxLength"]:
        found.append(f"{where}: longer than {node['maxLength']}")
    form = node.get("format")
    if form is not None and not _formatted(value, form):
        found.append(f"{where}: {value!r} is not a {form}")
    return found


def _formatted(value: str, form: str) -> bool:
    try:
        if form == "date-time":
            return datetime.fromisoformat(value.replace("Z", "+00:00")).tzinfo is not None
        if form == "date":
            date.fromisoformat(value)
        elif form == "uuid":
            return str(uuid.UUID(value)) == value
        elif form == "decimal":
            Decimal(value)
    except (ValueError, InvalidOperation):
        return False
    return True


def _object_problems(value: dict[str, Any], node: Schema, where: str) -> list[str]:
    properties: Schema = node.get("properties", {})
    found = [f"{where}: missing {key}" for key in node.get("required", []) if key not in value]
    for key, item in value.items():
        if key not in properties:
            found.append(f"{where}: {key} is not in the schema")
        else:
            found += _check(item, properties[key], f"{where}.{key}")
    return found
