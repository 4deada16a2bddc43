"""A reply schema as a grammar-compiling server (llama.cpp) gets it.

Such a server decodes only text of the schema, so the schema goes whole: unlike
OpenAI's strict mode it enforces ``minLength``, ``maxLength``, enums and an
integer's bounds (measured on llama.cpp with llguidance). Two things it does not
do, both seen from a 135M model, are fixed here on the wire only:

- a float's bounds are not enforced (confidence 85, then -0.4, got through), so a
  number bounded on both sides becomes a choice from ``GRID_STEPS`` + 1 evenly
  spaced values, which the grammar does enforce;
- nothing stops a model repeating itself inside a string until its reply runs out,
  leaving JSON that never closes (a justification looping for 1,024 tokens), so
  every free string and every list without a limit of its own gets one.

The pydantic model is unchanged and still validates every reply.
"""

from __future__ import annotations

import copy
from typing import Any

Schema = dict[str, Any]

STRING_CHARS = 600
"""Characters a free string may take: a paragraph, well under a local model's reply."""
LIST_ITEMS = 8
"""Items a list without a limit may take."""
GRID_STEPS = 20
"""A bounded number's choices on the wire: 0, 0.05, ... 1 for a confidence."""
_CONSTRAINED_STRING = ("enum", "const", "format", "pattern", "maxLength")


def capped_for_grammar(schema: Schema) -> Schema:
    """``schema`` with ``maxLength`` on free strings and ``maxItems`` on lists that lack them,
    and each number bounded on both sides as a grid of values between its bounds."""
    capped = copy.deepcopy(schema)
    _cap(capped)
    return capped


def _cap(node: Any) -> None:
    if isinstance(node, list):
        for item in node:
            _cap(item)
        return
    if not isinstance(node, dict):
        return
    if node.get("type") == "string" and not any(key in node for key in _CONSTRAINED_STRING):
        node["maxLength"] = STRING_CHARS
    if node.get("type") == "number" and "enum" not in node and {"minimum", "maximum"} <= set(node):
        low, high = node["minimum"], node["maximum"]
        node["enum"] = [
            round(low + (high - low) * step / GRID_STEPS, 6) for step in range(GRID_STEPS + 1)
        ]
    if node.get("type") == "array" and "maxItems" not in node:
        node["maxItems"] = max(LIST_ITEMS, node.get("minItems", 0))
    for value in node.values():
        _cap(value)
