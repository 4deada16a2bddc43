"""A pydantic JSON schema rewritten for strict structured output (OpenAI's ``strict: true``).

Strict mode makes the vendor decode only replies that fit the schema, but it
accepts a subset of JSON Schema (OpenAI's "Supported schemas"): the root is an
object; every object sets ``additionalProperties: false`` and lists every
property in ``required``; ``$ref`` points into the document and stands alone;
``anyOf``, ``enum`` and ``const`` are allowed; of the value constraints only
``pattern`` and a list of ``format``\\ s (strings), ``minimum``/``maximum`` and
their exclusive forms and ``multipleOf`` (numbers), ``minItems``/``maxItems``
(arrays) are; at most 10 levels of nested objects, 5,000 properties and 1,000
enum values. ``allOf``, ``oneOf``, ``not``, ``if``/``then``/``else``, open
objects, ``minLength``/``maxLength``, ``uniqueItems``, ``default`` and the
other keywords are refused with HTTP 400.

The rewrite keeps everything strict mode can enforce and drops the value
constraints it refuses: the worker validates every reply against the pydantic
model anyway, so a dropped ``minLength`` is still enforced, one repair turn
later. An optional property becomes required with its own schema: where that
schema admits null the model may write null (the field's default); where it
does not, the model must write a value, since a null there would fail the
pydantic validation the schema is meant to make pass. What cannot be said in
strict mode at all (a free-form dict, ``not``, a root that is not an object,
the size limits) raises ``NotStrict``; the caller then sends the schema as it
is, with ``strict: false``.
"""

from __future__ import annotations

import copy
from typing import Any

Schema = dict[str, Any]

MAX_OBJECT_DEPTH = 10
MAX_PROPERTIES = 5000
MAX_ENUM_VALUES = 1000

STRICT_STRING_FORMATS = frozenset(
    {"date-time", "time", "date", "duration", "email", "hostname", "ipv4", "ipv6", "uuid"}
)
# Keywords strict mode refuses that only narrow values: dropped, pydantic still checks them.
_DROPPED = frozenset(
    {
        "default",
        "examples",
        "discriminator",
        "minLength",
        "maxLength",
        "contentEncoding",
        "contentMediaType",
        "uniqueItems",
        "contains",
        "minContains",
        "maxContains",
        "minProperties",
        "maxProperties",
        "readOnly",
        "writeOnly",
        "deprecated",
    }
)
# Keywords that change which values are allowed in ways strict mode cannot express.
_INEXPRESSIBLE = frozenset(
    {
        "not",
        "if",
        "then",
        "else",
        "dependentRequired",
        "dependentSchemas",
        "patternProperties",
        "propertyNames",
        "unevaluatedProperties",
        "unevaluatedItems",
        "prefixItems",
    }
)


class NotStrict(ValueError):
    """The schema says something strict mode cannot; send it with ``strict: false``."""


def strict_json_schema(schema: Schema) -> Schema:
    """A copy of ``schema`` that strict mode accepts, or ``NotStrict`` saying why none exists."""
    document = copy.deepcopy(schema)
    rewritten = _Rewriter(document).node(document, path=())
    if rewritten.get("type") != "object":
        raise NotStrict(f"the root is {rewritten.get('type') or 'untyped'}, not an object")
    _check_limits(rewritten)
    return rewritten


# What makes a node say which values it allows; a node with none of them allows anything.
_TYPING_KEYWORDS = frozenset({"type", "anyOf", "$ref", "enum", "const"})


class _Rewriter:
    """Rewrites the nodes of one document, whose root resolves every ``$ref``."""

    def __init__(self, root: Schema) -> None:
        self.root = root
        self.inlining: tuple[str, ...] = ()

    def node(self, node: Any, path: tuple[str, ...]) -> Schema:
        """``node`` in strict form (a new dict; ``node`` is left alone)."""
        if not isinstance(node, dict):
            raise NotStrict(f"at {_where(path)}: {node!r} is not a schema object")
        found = sorted(_INEXPRESSIBLE & node.keys())
        if found:
            raise NotStrict(f"at {_where(path)}: {', '.join(found)} has no strict form")
        node = {key: value for key, value in node.items() if key not in _DROPPED}
        if "$ref" in node and len(node) > 1:
            return self._inlined(node, path)
        if "oneOf" in node:  # pydantic's tagged unions: anyOf allows what oneOf does, and more
            node["anyOf"] = node.pop("oneOf")
        if "allOf" in node:
            node = self._unwrapped(node, path)
        if not _TYPING_KEYWORDS & node.keys():
            raise NotStrict(f"at {_where(path)}: a value of any type has no strict form")
        if node.get("format") not in (None, *STRICT_STRING_FORMATS):
            del node["format"]
        for key in ("$defs", "definitions", "properties"):
            if key in node:
                node[key] = self._map(node[key], (*path, key))
        if "items" in node:
            node["items"] = self.node(node["items"], (*path, "items"))
        if "anyOf" in node:
            node["anyOf"] = [
                self.node(branch, (*path, "anyOf", str(i)))
                for i, branch in enumerate(_listed(node["anyOf"], path))
            ]
        if node.get("type") == "object" or "properties" in node:
            _close(node, path)
        return node

    def _inlined(self, node: Schema, path: tuple[str, ...]) -> Schema:
        """``{"$ref": r, "description": ...}``: strict mode wants a ``$ref`` alone, so the
        target is copied in with the siblings on top (the root's ``$defs`` stay)."""
        ref = node["$ref"]
        if ref in self.inlining:
            raise NotStrict(f"at {_where(path)}: {ref} refers to itself and has sibling keywords")
        siblings = {key: value for key, value in node.items() if key != "$ref"}
        self.inlining = (*self.inlining, ref)
        try:
            return self.node({**_resolve(self.root, ref), **siblings}, path)
        finally:
            self.inlining = self.inlining[:-1]

    def _unwrapped(self, node: Schema, path: tuple[str, ...]) -> Schema:
        """pydantic's ``allOf: [{"$ref": ...}]`` wrapper, unwrapped; a real intersection refused."""
        parts = _listed(node.pop("allOf"), path)
        if len(parts) != 1:
            raise NotStrict(f"at {_where(path)}: allOf of {len(parts)} schemas has no strict form")
        return {**parts[0], **node}

    def _map(self, schemas: Any, path: tuple[str, ...]) -> dict[str, Schema]:
        if not isinstance(schemas, dict):
            raise NotStrict(f"at {_where(path)}: expected a map of schemas")
        return {name: self.node(schema, (*path, name)) for name, schema in schemas.items()}


def _listed(value: Any, path: tuple[str, ...]) -> list[Any]:
    if not isinstance(value, list):
        raise NotStrict(f"at {_where(path)}: expected a list of schemas")
    return value


def _close(node: Schema, path: tuple[str, ...]) -> None:
    """Every property required, nothing else allowed; an open object has no strict form."""
    if node.get("additionalProperties", False) is not False:
        raise NotStrict(f"at {_where(path)}: an object with free-form keys has no strict form")
    node["properties"] = node.get("properties", {})
    node["required"] = list(node["properties"])
    node["additionalProperties"] = False


def _resolve(root: Schema, ref: str) -> Schema:
    if not ref.startswith("#/"):
        raise NotStrict(f"$ref {ref!r} does not point into the schema")
    target: Any = root
    for part in ref[2:].split("/"):
        if not isinstance(target, dict) or part not in target:
            raise NotStrict(f"$ref {ref!r} points nowhere")
        target = target[part]
    if not isinstance(target, dict):
        raise NotStrict(f"$ref {ref!r} is not a schema")
    return target


def _check_limits(root: Schema) -> None:
    """The size limits: properties and enum values over the whole document, depth from the root."""
    properties, enums = _sizes(root)
    if properties > MAX_PROPERTIES:
        raise NotStrict(f"{properties} properties (strict mode allows {MAX_PROPERTIES})")
    if enums > MAX_ENUM_VALUES:
        raise NotStrict(f"{enums} enum values (strict mode allows {MAX_ENUM_VALUES})")
    depth = _depth(root, root, refs=())
    if depth > MAX_OBJECT_DEPTH:
        raise NotStrict(f"objects nest {depth} deep (strict mode allows {MAX_OBJECT_DEPTH})")


def _children(node: Schema) -> list[Any]:
    """The schemas directly inside ``node`` (not its ``$defs``)."""
    items = node.get("items")
    return [
        *node.get("properties", {}).values(),
        *node.get("anyOf", []),
        *([items] if isinstance(items, dict) else []),
    ]


def _sizes(node: Schema) -> tuple[int, int]:
    """(properties, enum values) written in ``node`` and everything inside it."""
    properties, enums = len(node.get("properties", {})), len(node.get("enum", []))
    for child in [*_children(node), *node.get("$defs", {}).values()]:
        more_properties, more_enums = _sizes(child)
        properties, enums = properties + more_properties, enums + more_enums
    return properties, enums


def _depth(node: Schema, root: Schema, refs: tuple[str, ...]) -> int:
    """How deep objects nest from ``node`` down, through refs; a recursive ref ends the count."""
    if "$ref" in node:
        ref = node["$ref"]
        return 0 if ref in refs else _depth(_resolve(root, ref), root, (*refs, ref))
    below = max((_depth(child, root, refs) for child in _children(node)), default=0)
    return below + (1 if node.get("type") == "object" else 0)


def _where(path: tuple[str, ...]) -> str:
    return "/".join(path) or "the root"
