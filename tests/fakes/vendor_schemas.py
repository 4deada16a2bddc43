"""What the fake vendors do with a JSON schema: refuse what strict mode refuses, and fill one.

``strict_schema_problem`` applies OpenAI's documented rules for ``strict: true``
("Supported schemas" in the Structured Outputs guide), written here from the
documentation and not from quantdesk's own transformer, so a test passing
against the fake says the transformer meets the documented rules. The message
follows OpenAI's: ``In context=('properties', 'x'), 'minLength' is not permitted.``

``instance_of`` is what a model whose output is constrained by a schema (a
strict ``json_schema``, a forced Anthropic tool) writes: a value of the schema,
carrying the model's prose in its text fields.
"""

from __future__ import annotations

from typing import Any

Schema = dict[str, Any]

# Every keyword strict mode accepts; any other is "not permitted".
STRICT_KEYWORDS = frozenset(
    {
        "type",
        "properties",
        "required",
        "additionalProperties",
        "items",
        "anyOf",
        "enum",
        "const",
        "$ref",
        "$defs",
        "definitions",
        "description",
        "title",
        "pattern",
        "format",
        "minimum",
        "maximum",
        "exclusiveMinimum",
        "exclusiveMaximum",
        "multipleOf",
        "minItems",
        "maxItems",
    }
)
STRICT_FORMATS = frozenset(
    {"date-time", "time", "date", "duration", "email", "hostname", "ipv4", "ipv6", "uuid"}
)
MAX_DEPTH = 10
MAX_PROPERTIES = 5000
MAX_ENUM_VALUES = 1000
# What a constrained model writes in a string field that has a format.
_FORMATTED = {
    "date-time": "2024-01-02T15:04:05Z",
    "time": "15:04:05",
    "date": "2024-01-02",
    "duration": "P1D",
    "email": "analyst@example.com",
    "hostname": "example.com",
    "ipv4": "192.0.2.1",
    "ipv6": "2001:db8::1",
    "uuid": "123e4567-e89b-12d3-a456-426614174000",
}

Context = tuple[str, ...]


def strict_schema_problem(schema: Any) -> str | None:
    """Why strict mode would refuse ``schema`` (the first reason), or None if it accepts it."""
    if not isinstance(schema, dict):
        return "In context=(), schema must be a JSON object."
    if schema.get("type") != "object" or "anyOf" in schema:
        return "In context=(), schema must be a JSON Schema of 'type: \"object\"', got " + (
            f"'type: \"{schema.get('type')}\"'." if "type" in schema else "no type."
        )
    checker = _StrictChecker(schema)
    problem = checker.check(schema, ())
    if problem is not None:
        return problem
    if checker.properties > MAX_PROPERTIES:
        return f"Too many object properties: {checker.properties} (at most {MAX_PROPERTIES})."
    if checker.enum_values > MAX_ENUM_VALUES:
        return f"Too many enum values: {checker.enum_values} (at most {MAX_ENUM_VALUES})."
    depth = _nesting(schema, schema, ())
    if depth > MAX_DEPTH:
        return f"Objects nest {depth} levels deep (at most {MAX_DEPTH})."
    return None


class _StrictChecker:
    """Walks every schema node of one document once, counting what the limits count."""

    def __init__(self, root: Schema) -> None:
        self.root = root
        self.properties = 0
        self.enum_values = 0

    def check(self, node: Any, context: Context) -> str | None:
        at = f"In context={context!r}"
        if not isinstance(node, dict):
            return f"{at}, schema must be a JSON object."
        for key in node:
            if key not in STRICT_KEYWORDS:
                return f"{at}, '{key}' is not permitted."
        if "$ref" in node:
            if len(node) > 1:
                return f"{at}, $ref cannot have keywords {sorted(set(node) - {'$ref'})}."
            if _resolve(self.root, node["$ref"]) is None:
                return f"{at}, reference {node['$ref']!r} can't be resolved."
        elif not {"type", "anyOf", "enum", "const"} & node.keys():
            return f"{at}, schema must have a 'type' key."
        if "format" in node and node["format"] not in STRICT_FORMATS:
            return f"{at}, '{node['format']}' is not a valid format."
        if node.get("type") == "object" or "properties" in node:
            problem = self._object(node, context)
            if problem is not None:
                return problem
        self.enum_values += len(node.get("enum", []))
        return self._children(node, context)

    def _object(self, node: Schema, context: Context) -> str | None:
        at = f"In context={context!r}"
        if node.get("additionalProperties") is not False:
            return f"{at}, 'additionalProperties' is required to be supplied and to be false."
        properties = node.get("properties", {})
        self.properties += len(properties)
        missing = [name for name in properties if name not in node.get("required", [])]
        if missing:
            return (
                f"{at}, 'required' is required to be supplied and to be an array including "
                f"every key in properties. Missing '{missing[0]}'."
            )
        return None

    def _children(self, node: Schema, context: Context) -> str | None:
        children: list[tuple[Any, Context]] = []
        for group in ("properties", "$defs", "definitions"):
            children += [
                (child, (*context, group, name)) for name, child in node.get(group, {}).items()
            ]
        if "items" in node:
            children.append((node["items"], (*context, "items")))
        children += [
            (child, (*context, "anyOf", str(i))) for i, child in enumerate(node.get("anyOf", []))
        ]
        for child, where in children:
            problem = self.check(child, where)
            if problem is not None:
                return problem
        return None


def _resolve(root: Schema, ref: str) -> Schema | None:
    if not ref.startswith("#/"):
        return None
    target: Any = root
    for part in ref[2:].split("/"):
        if not isinstance(target, dict) or part not in target:
            return None
        target = target[part]
    return target if isinstance(target, dict) else None


def _nesting(node: Any, root: Schema, refs: tuple[str, ...]) -> int:
    """Levels of objects from ``node`` down, through refs; recursion counts once."""
    if not isinstance(node, dict):
        return 0
    if "$ref" in node:
        ref = node["$ref"]
        return 0 if ref in refs else _nesting(_resolve(root, ref), root, (*refs, ref))
    children = [*node.get("properties", {}).values(), *node.get("anyOf", []), node.get("items")]
    below = max((_nesting(child, root, refs) for child in children), default=0)
    return below + (1 if node.get("type") == "object" else 0)


# -- filling a schema ------------------------------------------------------------


def instance_of(schema: Schema, text: str, root: Schema | None = None) -> Any:
    """A value of ``schema`` a constrained model would write, with ``text`` in its prose fields.

    Every property is filled (strict schemas require them all; a model filling a tool
    writes them too), enums and unions take their first non-null choice, numbers the
    middle of their bounds, arrays their fewest items (at least one).
    """
    root = schema if root is None else root
    if "$ref" in schema:
        return instance_of(_resolve(root, schema["$ref"]) or {}, text, root)
    if "const" in schema:
        return schema["const"]
    if "enum" in schema:
        return schema["enum"][0]
    if "anyOf" in schema:
        branches = [b for b in schema["anyOf"] if b.get("type") != "null"] or schema["anyOf"]
        return instance_of(branches[0], text, root)
    kind = schema.get("type", "object")
    if isinstance(kind, list):
        kind = next((k for k in kind if k != "null"), "null")
    return _FILL[kind](schema, text, root)


def _string(schema: Schema, text: str, root: Schema) -> str:
    if schema.get("format") in _FORMATTED:
        return _FORMATTED[schema["format"]]
    value = "X" if "pattern" in schema else (text or "conforming answer")
    value = value.ljust(schema.get("minLength", 0), ".")
    return value[: schema.get("maxLength", len(value))]


def _number(schema: Schema, text: str, root: Schema) -> float:
    low = schema.get("minimum", schema.get("exclusiveMinimum"))
    high = schema.get("maximum", schema.get("exclusiveMaximum"))
    if low is not None and high is not None:
        return (low + high) / 2
    if low is not None:
        return low + 1
    return high - 1 if high is not None else 1.0


def _integer(schema: Schema, text: str, root: Schema) -> int:
    low = schema.get("minimum", schema.get("exclusiveMinimum", 0) + 1)
    high = schema.get("maximum", schema.get("exclusiveMaximum", low + 2) - 1)
    return (low + high) // 2


def _array(schema: Schema, text: str, root: Schema) -> list[Any]:
    fewest = max(schema.get("minItems", 1), 1)
    count = min(fewest, schema.get("maxItems", fewest))
    return [instance_of(schema.get("items", {"type": "string"}), text, root) for _ in range(count)]


def _object(schema: Schema, text: str, root: Schema) -> dict[str, Any]:
    return {
        name: instance_of(sub, text, root) for name, sub in schema.get("properties", {}).items()
    }


_FILL = {
    "string": _string,
    "number": _number,
    "integer": _integer,
    "boolean": lambda schema, text, root: False,
    "null": lambda schema, text, root: None,
    "array": _array,
    "object": _object,
}
