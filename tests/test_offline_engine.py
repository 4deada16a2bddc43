"""The offline provider: deterministic, data-dependent, and honest when it has no data."""

from __future__ import annotations

import json

import pytest

from shared.agents.schemas import AnalystNote
from shared.errors import InvalidInput
from shared.llm.contracts import ChatMessage, ChatRequest, ToolSpec
from shared.llm.offline import answer_offline
from shared.llm.providers import OFFLINE_MODEL

TOOL = ToolSpec(
    name="get_price_history",
    description="closes",
    parameters={
        "type": "object",
        "properties": {"symbol": {"type": "string"}, "days": {"type": "integer", "default": 30}},
        "required": ["symbol", "days"],
    },
)


def _request(context: dict[str, object], **fields: object) -> ChatRequest:
    return ChatRequest(
        agent="analyst",
        provider="offline",
        messages=[ChatMessage(role="user", content="Assess.")],
        context=context,
        **fields,
    )


def _note(context: dict[str, object]) -> AnalystNote:
    response = answer_offline(_request(context, response_schema="AnalystNote"), OFFLINE_MODEL)
    return AnalystNote.model_validate_json(response.text)


def test_same_input_gives_the_same_answer() -> None:
    context = {"close": [10, 11, 12.5], "volume": [5, 4, 6]}

    first = answer_offline(_request(context), OFFLINE_MODEL)
    second = answer_offline(_request(context), OFFLINE_MODEL)

    assert first == second


def test_rising_and_falling_prices_give_opposite_stances() -> None:
    assert _note({"close": [10, 11, 12.5]}).stance == "bullish"
    assert _note({"close": [12.5, 11, 10]}).stance == "bearish"
    assert _note({"close": [10, 10.01, 10.02]}).stance == "neutral"


def test_key_points_quote_the_measured_numbers() -> None:
    note = _note({"bars": [{"close": 100.0, "volume": 9}, {"close": 110.0, "volume": 3}]})

    assert note.key_points[0].startswith("bars.close: 100 → 110 (+10.00%)")


def test_no_numbers_means_no_view_rather_than_an_invented_one() -> None:
    note = _note({"symbol": "ACME"})

    assert note.stance == "neutral"
    assert note.confidence <= 0.1
    assert "No numeric data" in note.key_points[0]


def test_offered_tools_are_called_with_arguments_from_context_and_defaults() -> None:
    response = answer_offline(_request({"symbol": "ACME"}, tools=[TOOL]), OFFLINE_MODEL)

    [call] = response.tool_calls
    assert call.name == "get_price_history"
    assert call.arguments == {"symbol": "ACME", "days": 30}


def test_a_tool_whose_required_argument_is_unknown_is_not_called() -> None:
    response = answer_offline(_request({}, tools=[TOOL]), OFFLINE_MODEL)

    assert response.tool_calls == []
    assert response.text


def test_tool_results_are_read_once_the_tools_answered() -> None:
    request = _request({"symbol": "ACME"}, tools=[TOOL], response_schema="AnalystNote")
    request.messages += [
        ChatMessage(role="assistant", tool_calls=answer_offline(request, OFFLINE_MODEL).tool_calls),
        ChatMessage(
            role="tool",
            name="get_price_history",
            tool_call_id="x",
            content=json.dumps({"close": [50, 45, 40]}),
        ),
    ]

    response = answer_offline(request, OFFLINE_MODEL)

    assert AnalystNote.model_validate_json(response.text).stance == "bearish"
    assert response.tool_calls == []


def test_a_schema_without_an_offline_analyst_is_a_clear_error() -> None:
    with pytest.raises(InvalidInput, match="no analyst writing 'TraderProposal'"):
        answer_offline(_request({}, response_schema="TraderProposal"), OFFLINE_MODEL)
