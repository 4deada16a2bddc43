"""Structured output through each vendor's own mechanism, and the strict-schema rewrite.

Through the ``chat`` activity and the real SDKs against the fake vendor: OpenAI
gets ``json_schema`` with ``strict: true``, Anthropic a forced answer tool, an
OpenAI-compatible row what its provider row says; each reply comes back
validated. Every registered response schema is rewritten into a strict schema
the fake OpenAI server (which applies the documented strict-mode rules)
accepts.
"""

from __future__ import annotations

import importlib
import json
import pkgutil
from collections.abc import Iterator
from typing import Any

import pytest
from pydantic import BaseModel, Field, ValidationError
from temporalio.testing import ActivityEnvironment

import shared.agents
from activities.llm import LlmActivities
from shared.agents.quantagent import TrendReport
from shared.agents.schemas import RESPONSE_SCHEMAS
from shared.config import Settings, load_settings
from shared.llm.clients import complete
from shared.llm.contracts import ChatMessage, ChatRequest, ChatResponse
from shared.llm.providers import PROVIDERS
from shared.llm.strict_schema import NotStrict, strict_json_schema
from tests.fakes.llm_server import FakeLlmServer
from tests.fakes.vendor_schemas import strict_schema_problem

KEY = "sk-test-structured-3"
TREND = {
    "prediction": "up",
    "price_action": "bounce",
    "confidence": 0.6,
    "analysis": "Price bounced off support.",
}
PROSE = "The chart shows price bouncing off close-based support, so I expect it to rise."
# One row per mechanism and wire: strict json_schema, forced tool, compatible json_schema.
ROWS = ["openai", "anthropic", "ollama"]

# Importing every agent module registers every schema (they register on import).
for _module in pkgutil.walk_packages(shared.agents.__path__, "shared.agents."):
    importlib.import_module(_module.name)


@pytest.fixture
def fake() -> Iterator[FakeLlmServer]:
    with FakeLlmServer() as server:
        yield server


def _settings(fake: FakeLlmServer) -> Settings:
    return load_settings(
        openai={"api_key": KEY, "base_url": fake.base_url_openai},
        anthropic={"api_key": KEY, "base_url": fake.base_url_anthropic},
        ollama={"base_url": fake.base_url_openai},
    )


async def _chat(fake: FakeLlmServer, provider: str, schema: str) -> ChatResponse:
    request = ChatRequest(
        agent="trend_agent",
        provider=provider,
        messages=[ChatMessage(role="user", content="Read the trend of GOOG.")],
        response_schema=schema,
    )
    activities = LlmActivities(_settings(fake), PROVIDERS[provider].task_queue)
    result: ChatResponse = await ActivityEnvironment().run(activities.chat, request)
    return result


def _native_mechanism(body: dict[str, Any], provider: str) -> dict[str, Any]:
    """The part of the request that asks for structured output, per wire."""
    if provider == "anthropic":
        return {"tools": body["tools"], "tool_choice": body["tool_choice"]}
    return {"response_format": body["response_format"]}


@pytest.mark.parametrize("provider", ROWS)
async def test_a_structured_reply_comes_back_validated_through_the_native_mechanism(
    fake: FakeLlmServer, provider: str
) -> None:
    fake.reply_json(TREND)

    response = await _chat(fake, provider, "TrendReport")

    assert response.structured == TrendReport.model_validate(TREND).model_dump(mode="json")
    assert response.tool_calls == []
    schema = TrendReport.model_json_schema()
    strict = {
        "response_format": {
            "type": "json_schema",
            "json_schema": {
                "name": "TrendReport",
                "schema": strict_json_schema(schema),
                "strict": True,
            },
        }
    }
    expected = {
        "openai": strict,
        "ollama": strict,
        "anthropic": {
            "tools": [
                {
                    "name": "TrendReport",
                    "description": "Give your final answer: the complete TrendReport object "
                    "as this tool's input.",
                    "input_schema": schema,
                }
            ],
            "tool_choice": {"type": "tool", "name": "TrendReport"},
        },
    }[provider]
    assert _native_mechanism(fake.last_request.body, provider) == expected
    assert len(fake.requests) == 1


async def test_claude_answering_in_prose_is_made_to_answer_through_the_tool(
    fake: FakeLlmServer,
) -> None:
    fake.reply_text(PROSE)

    response = await _chat(fake, "anthropic", "TrendReport")

    assert response.structured is not None
    assert TrendReport.model_validate(response.structured).analysis == PROSE
    assert len(fake.requests) == 1  # no repair turn was needed


# -- every registered schema -------------------------------------------------------------


@pytest.mark.parametrize("name", sorted(RESPONSE_SCHEMAS))
async def test_every_response_schema_goes_out_strict_and_the_vendor_accepts_it(
    fake: FakeLlmServer, name: str
) -> None:
    schema = RESPONSE_SCHEMAS[name].model_json_schema()
    fake.reply_conforming(PROSE)
    spec = PROVIDERS["openai"]

    response = await complete(
        ChatRequest(
            agent="any_agent",
            provider="openai",
            messages=[ChatMessage(role="user", content="Answer in JSON.")],
            response_schema=name,
        ),
        spec=spec,
        model=spec.deep_model,
        api_key=KEY,
        base_url=fake.base_url_openai,
        timeout=5.0,
        images={},
        json_schema=schema,
    )

    sent = fake.last_request.body["response_format"]["json_schema"]
    assert sent["strict"] is True
    assert strict_schema_problem(sent["schema"]) is None
    assert set(json.loads(response.text)) == set(schema["properties"])


# -- the rewrite -------------------------------------------------------------------------


class Flagged(BaseModel):
    """Properties whose names are JSON Schema keywords must survive the keyword pruning."""

    pattern: str = Field(min_length=1)
    default: int = 3
    format: str | None = None


def test_properties_named_like_keywords_are_kept_and_required() -> None:
    strict = strict_json_schema(Flagged.model_json_schema())

    assert list(strict["properties"]) == ["pattern", "default", "format"]
    assert strict["required"] == ["pattern", "default", "format"]
    assert strict["properties"]["pattern"] == {"title": "Pattern", "type": "string"}
    # A default that is not null stays a plain integer: null there would fail validation.
    assert strict["properties"]["default"] == {"title": "Default", "type": "integer"}
    assert {"type": "null"} in strict["properties"]["format"]["anyOf"]


class Node(BaseModel):
    """A recursive model: strict mode takes recursion through $defs."""

    label: str
    children: list[Node] = Field(default_factory=list, description="sub-nodes")


def test_a_recursive_schema_keeps_its_refs_and_is_accepted() -> None:
    strict = strict_json_schema(Node.model_json_schema())

    assert strict_schema_problem(strict) is None
    assert strict["type"] == "object"
    assert strict["properties"]["children"]["items"] == {"$ref": "#/$defs/Node"}


class Limits(BaseModel):
    """A map from names to numbers."""

    by_name: dict[str, float]


class Negated(BaseModel):
    """Not a model pydantic writes; the schema is edited below."""

    value: int


@pytest.mark.parametrize(
    ("schema", "why"),
    [
        (Limits.model_json_schema(), "by_name: an object with free-form keys"),
        (
            {**Negated.model_json_schema(), "properties": {"value": {"not": {"type": "null"}}}},
            "properties/value: not has no strict form",
        ),
        ({"type": "array", "items": {"type": "string"}}, "the root is array, not an object"),
        (
            {**Negated.model_json_schema(), "properties": {"value": {}}},
            "a value of any type has no strict form",
        ),
    ],
    ids=["free-form-map", "not", "array-root", "any-value"],
)
def test_what_strict_mode_cannot_say_is_refused_with_the_reason(
    schema: dict[str, Any], why: str
) -> None:
    with pytest.raises(NotStrict, match=why):
        strict_json_schema(schema)


@pytest.mark.parametrize(
    ("written", "read"), [(0.85, 0.85), (1, 1.0), (85, 0.85), (10, 0.10), (100, 1.0)]
)
def test_a_confidence_written_as_a_percentage_is_read_as_the_fraction(
    written: float, read: float
) -> None:
    report = TrendReport.model_validate(
        {"prediction": "up", "price_action": "bounce", "confidence": written, "analysis": "x"}
    )

    assert report.confidence == pytest.approx(read)


@pytest.mark.parametrize("written", [-0.1, 100.5, 250])
def test_a_confidence_beyond_a_percentage_is_still_refused(written: object) -> None:
    with pytest.raises(ValidationError, match="confidence"):
        TrendReport.model_validate(
            {"prediction": "up", "price_action": "bounce", "confidence": written, "analysis": "x"}
        )


def test_every_share_field_reads_a_percentage_as_the_fraction() -> None:
    from pydantic import TypeAdapter

    from shared.agents.pipeline.schemas import DebateTurn, TraderProposal
    from shared.agents.portfolio.schemas import AllocationDecision

    for model, name in (
        (DebateTurn, "position_sizing"),
        (TraderProposal, "position_sizing"),
        (AllocationDecision, "cash_reserve"),
    ):
        field = model.model_fields[name]
        adapter = TypeAdapter(field.rebuild_annotation())
        assert adapter.validate_python(25) == pytest.approx(0.25), (model, name)
        assert adapter.validate_python(0.05) == pytest.approx(0.05), (model, name)
