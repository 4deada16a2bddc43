"""A reply schema as a grammar-compiling server (llama.cpp) gets it.

Such a server decodes only text of the schema, so the schema goes whole: unlike
OpenAI's strict mode it enforces ``minLength``, ``maxLength`` and an integer's
bounds (measured on llama.cpp with llguidance; a float's bounds it does not).
What it cannot do is stop a small model that repeats itself inside a string until
its reply runs out, leaving JSON that never closes (seen: a 135M model's
justification looping for 1,024 tokens). So every free string and every list
without a limit of its own gets one here, on the wire only: the model then has
to close the string and move on. The pydantic model is unchanged and still
validates every reply.
"""

from __future__ import annotations

import copy
from typing import Any

Schema = dict[str, Any]

STRING_CHARS = 600
"""Characters a free string may take: a paragraph, well under a local model's reply."""
LIST_ITEMS = 8
"""Items a list without a limit may take."""
_CONSTRAINED_STRING = ("enum", "const", "format", "pattern", "maxLength")


def capped_for_grammar(schema: Schema) -> Schema:
    """``schema`` with ``maxLength`` on free strings and ``maxItems`` on lists that lack them."""
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
    if node.get("type") == "array" and "maxItems" not in node:
        node["maxItems"] = max(LIST_ITEMS, node.get("minItems", 0))
    for value in node.values():
        _cap(value)
