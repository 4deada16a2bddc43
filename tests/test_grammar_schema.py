"""Reply schemas for grammar-compiling servers: free strings and lists capped on the wire,
everything else kept, the pydantic model untouched."""

from __future__ import annotations

from shared.agents.pipeline.schemas import AnalystReport
from shared.agents.quantagent import QuantDecision, TrendReport
from shared.llm.grammar_schema import LIST_ITEMS, STRING_CHARS, capped_for_grammar


def test_free_strings_and_lists_get_caps_and_constrained_ones_keep_theirs() -> None:
    schema = {
        "type": "object",
        "properties": {
            "free": {"type": "string", "minLength": 20},
            "choice": {"type": "string", "enum": ["LONG", "SHORT"]},
            "when": {"type": "string", "format": "date-time"},
            "short": {"type": "string", "maxLength": 40},
            "points": {"type": "array", "items": {"type": "string"}, "minItems": 1},
            "many": {"type": "array", "items": {"type": "integer"}, "minItems": 12},
            "ratio": {"type": "number", "minimum": 1.2, "maximum": 1.8},
        },
    }

    capped = capped_for_grammar(schema)["properties"]

    assert capped["free"] == {"type": "string", "minLength": 20, "maxLength": STRING_CHARS}
    assert capped["choice"] == schema["properties"]["choice"]
    assert capped["when"] == schema["properties"]["when"]
    assert capped["short"] == schema["properties"]["short"]
    assert capped["points"]["maxItems"] == LIST_ITEMS
    assert capped["points"]["items"]["maxLength"] == STRING_CHARS
    assert capped["many"]["maxItems"] == 12  # never below the schema's own minimum
    assert capped["ratio"]["enum"][:3] == [1.2, 1.23, 1.26]
    assert capped["ratio"]["enum"][-1] == 1.8 and len(capped["ratio"]["enum"]) == 21
    assert "maxLength" not in schema["properties"]["free"]  # the input is not changed


def test_the_agents_schemas_keep_their_required_fields_and_definitions() -> None:
    for model in (QuantDecision, AnalystReport):
        schema = model.model_json_schema()
        capped = capped_for_grammar(schema)
        assert capped["required"] == schema["required"]
        assert capped.get("$defs", {}).keys() == schema.get("$defs", {}).keys()
        assert (
            capped["properties"]["justification" if model is QuantDecision else "report_markdown"][
                "maxLength"
            ]
            == STRING_CHARS
        )


def test_a_confidence_on_the_wire_is_a_grid_every_value_of_which_validates() -> None:
    wire = capped_for_grammar(TrendReport.model_json_schema())["properties"]["confidence"]

    assert wire["enum"][:3] == [0, 0.05, 0.1] and wire["enum"][-1] == 1
    for value in wire["enum"]:
        report = {"prediction": "up", "price_action": "bounce", "confidence": value}
        assert TrendReport.model_validate({**report, "analysis": "x"}).confidence == value
