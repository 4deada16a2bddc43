"""Bad input names the field and echoes the value given: every workflow input model, the CLI.

The models are found the way the workflows take them (the ``RunInput`` each workflow's
``run`` is typed with), so a new workflow without a case here fails the first test.
"""

from __future__ import annotations

import os
import re
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest
from pydantic import BaseModel, ValidationError
from temporalio.exceptions import ApplicationError

from shared.validation_errors import MAX_SHOWN, SECRET_NAME, describe_validation_error
from workflows.autorun import AutoRunInput
from workflows.backtest import BacktestInput
from workflows.broker_orders import BrokerOrdersInput
from workflows.catalog import WORKFLOWS
from workflows.debate_contracts import DebateInput, RiskInput
from workflows.evaluate import EvaluateInput
from workflows.inputs import parse_input, run_input_model
from workflows.notify import NotifyInput
from workflows.pipeline_batch import PipelineBatchInput
from workflows.pipeline_contracts import PipelineInput
from workflows.portfolio import PortfolioInput
from workflows.quantagent import QuantAgentInput
from workflows.reconcile import ReconcileInput
from workflows.record_social import RecordSocialInput
from workflows.reflect import ReflectInput
from workflows.scan import ScanInput
from workflows.watch import WatchInput

ROOT = Path(__file__).resolve().parent.parent
AS_OF = "2024-06-03T00:00:00Z"
PROPOSAL = {"action": "Buy", "reasoning": "trend", "position_sizing": 0.05}
PLAN = {"recommendation": "Buy", "rationale": "trend", "strategic_actions": ["buy"]}
REFLECT = {
    "source": {"workflow_id": "pipeline-GOOG", "run_id": "r1"},
    "symbol": "GOOG",
    "as_of": AS_OF,
    "situation": "GOOG near its highs",
    "decisions": {"trader": "Buy"},
}

BATCH_PLAN = {
    "autorun_id": "ar-1",
    "as_of": "2012-06-01T00:00:00Z",
    "analysts": ["market"],
    "debate_rounds": 1,
    "risk_rounds": 1,
    "llm": {},
}
BAD_INPUTS: dict[type[BaseModel], tuple[dict[str, Any], str, str]] = {
    QuantAgentInput: ({"symbol": "GOOG", "timeframe": "7x"}, "timeframe", "'7x'"),
    PipelineInput: ({"symbol": "GOOG", "debate_rounds": 99}, "debate_rounds", "99"),
    DebateInput: ({"symbol": "GOOG", "as_of": "yesterday", "reports": {}}, "as_of", "'yesterday'"),
    RiskInput: (
        {
            "symbol": "GOOG",
            "as_of": AS_OF,
            "reports": {},
            "proposal": PROPOSAL,
            "research_plan": {**PLAN, "recommendation": "Moon"},
        },
        "research_plan.recommendation",
        "'Moon'",
    ),
    ReflectInput: ({**REFLECT, "horizon_bars": -3}, "horizon_bars", "-3"),
    BacktestInput: (
        {"symbol": "GOOG", "start": "2020-01-02", "end": "2020-13-40"},
        "end",
        "'2020-13-40'",
    ),
    EvaluateInput: (
        {"windows": {"kind": "cut", "symbols": ["GOOG"], "timeframe": "7x", "count": 1}},
        "windows.cut.timeframe",
        "'7x'",
    ),
    ScanInput: ({"max_tickers": 500}, "max_tickers", "500"),
    AutoRunInput: ({"min_conviction": "extreme"}, "min_conviction", "'extreme'"),
    PortfolioInput: (
        {"portfolio": "demo", "as_of": AS_OF, "approval": "maybe"},
        "approval",
        "'maybe'",
    ),
    BrokerOrdersInput: (
        {"portfolio": "desk", "decided_by": "p-1", "orders": [], "policy": {"poll_seconds": 0}},
        "policy.poll_seconds",
        "0",
    ),
    ReconcileInput: ({"portfolio": ""}, "portfolio", "''"),
    PipelineBatchInput: (
        {"plan": BATCH_PLAN, "symbols": ["QBTX"], "concurrency": 0},
        "concurrency",
        "0",
    ),
    RecordSocialInput: ({"symbols": ["AAPL"], "days": 99}, "days", "99"),
    NotifyInput: (
        {"notice": {"kind": "gossip", "run": "r", "title": "t", "body": "b"}},
        "notice.kind",
        "'gossip'",
    ),
    WatchInput: ({"window_minutes": 0}, "window_minutes", "0"),
}
"""Each workflow input model: a payload valid but for one field, that field, its value as echoed."""


def parse_input_models() -> set[type[BaseModel]]:
    """The models the workflows take their input as, read from their ``run`` methods."""
    found: set[type[BaseModel]] = set()
    for workflow_class in WORKFLOWS:
        model = run_input_model(workflow_class.run)
        assert model is not None, f"{workflow_class.__name__}.run takes no RunInput"
        found.add(model)
    return found


def test_every_workflow_input_model_has_a_bad_value_case() -> None:
    assert parse_input_models() == set(BAD_INPUTS)


@pytest.mark.parametrize("model", list(BAD_INPUTS), ids=lambda model: model.__name__)
def test_the_error_names_the_field_and_echoes_the_value_given(model: type[BaseModel]) -> None:
    payload, field, given = BAD_INPUTS[model]

    with pytest.raises(ApplicationError) as caught:
        parse_input(model, payload)

    message = str(caught.value)
    assert f"`{field}` {given} is " in message
    assert message.count("`") == 2, message  # the rest of the payload is valid
    assert caught.value.non_retryable and caught.value.type == "InvalidInput"


def test_an_unknown_timeframe_lists_the_accepted_ones_after_the_value() -> None:
    with pytest.raises(ApplicationError) as caught:
        parse_input(QuantAgentInput, {"symbol": "GOOG", "timeframe": "7x"})

    assert caught.value.message == (
        "invalid input for QuantAgentInput: `timeframe` '7x' is not one of "
        "'1m', '5m', '15m', '30m', '1h', '4h', '1d', '1wk' or '1mo'."
    )


def test_a_long_value_is_shortened() -> None:
    with pytest.raises(ApplicationError) as caught:
        parse_input(QuantAgentInput, {"symbol": "G" * 5000, "timeframe": "1d"})

    echoed = re.search(r"`symbol` ('G+…)", str(caught.value))
    assert echoed is not None and len(echoed[1]) == MAX_SHOWN


def test_a_field_named_for_a_secret_is_never_echoed() -> None:
    class Login(BaseModel):
        api_key: int

    with pytest.raises(ValidationError) as caught:
        Login.model_validate({"api_key": "sk-live-123"})

    described = describe_validation_error(caught.value)
    assert "sk-live-123" not in described
    assert described.startswith("`api_key` (a value not shown) is invalid")


def _field_names(schema: dict[str, Any]) -> set[str]:
    names = set(schema.get("properties", {}))
    for definition in schema.get("$defs", {}).values():
        names |= set(definition.get("properties", {}))
    return names


@pytest.mark.parametrize("model", list(BAD_INPUTS), ids=lambda model: model.__name__)
def test_no_workflow_input_model_carries_a_secret(model: type[BaseModel]) -> None:
    names = _field_names(model.model_json_schema())

    assert names and not [name for name in names if SECRET_NAME.search(name)]


def test_the_cli_echoes_a_bad_option_before_starting_anything(tmp_path: Path) -> None:
    env = {
        **os.environ,
        "QUANTDESK_DATA_DIR": str(tmp_path),
        "QUANTDESK_TEMPORAL__ADDRESS": "127.0.0.1:9",  # nothing listens: nothing may connect
        "COLUMNS": "200",
    }
    command = [sys.executable, "-m", "cli.main", "run", "quantagent", "GOOG", "--timeframe", "7x"]

    done = subprocess.run(command, cwd=ROOT, env=env, capture_output=True, text=True, timeout=120)

    assert done.returncode == 1
    assert "invalid input `timeframe`: '7x' is not one of '1m', '5m'" in done.stderr
    assert "started" not in done.stdout


def test_a_rule_across_fields_fails_like_a_bad_field() -> None:
    payload = {
        "symbol": "GOOG",
        "macro_context": "x",
        "macro_context_key": {"bucket": "b", "key": "k"},
    }

    with pytest.raises(ApplicationError) as caught:
        parse_input(PipelineInput, payload)

    assert caught.value.type == "InvalidInput" and caught.value.non_retryable
    assert "`(input)` give macro_context or macro_context_key, not both" in caught.value.message


def test_portfolio_decisions_come_inline_or_by_key_not_both() -> None:
    payload = {
        "portfolio": "demo",
        "as_of": "2012-06-01T00:00:00Z",
        "decisions": [
            {
                "symbol": "GOOG",
                "rating": "Buy",
                "signal": "BUY",
                "executive_summary": "Buy GOOG",
                "as_of": "2012-06-01T00:00:00Z",
            }
        ],
        "decisions_key": {"bucket": "b", "key": "k"},
    }

    with pytest.raises(ApplicationError) as caught:
        parse_input(PortfolioInput, payload)

    assert "give decisions or decisions_key, not both" in caught.value.message
