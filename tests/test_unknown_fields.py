"""A field an input does not know is refused by name, with the nearest known one, on every door.

The doors: a start payload (``temporal workflow start --input``, a parent, a schedule's
action) fails the run; ``quantdesk run``, ``quantdesk schedule create`` and the console's
forms validate with the same model before anything starts. A replay of a run that began
before unknown fields were refused still decodes its input (``tests/test_replay.py``).
"""

from __future__ import annotations

import uuid
from typing import Any

import pytest
from pydantic import BaseModel, ValidationError
from temporalio import workflow
from temporalio.client import WorkflowFailureError
from temporalio.contrib.pydantic import pydantic_data_converter
from temporalio.exceptions import ApplicationError
from temporalio.testing import WorkflowEnvironment
from temporalio.worker import Replayer

with workflow.unsafe.imports_passed_through():
    from client.schedules import ScheduleRequest, _checked
    from shared.agents.pipeline.inputs import AnalystReports
    from shared.errors import InvalidInput
    from shared.unknown_fields import unknown_fields
    from shared.validation_errors import describe_validation_error
    from tests.servers import running_workers
    from tests.test_input_errors import BAD_INPUTS
    from workers.main import WorkerPlan
    from workflows.autorun import AutoRunInput, AutoRunWorkflow
    from workflows.inputs import CheckRunInput, RunInput, parse_input
    from workflows.quantagent import QuantAgentInput


def _misspelt(model: type[BaseModel]) -> tuple[str, str]:
    """A field of ``model`` and that name with its last letter doubled."""
    name = next(iter(model.model_fields))
    return name, name + name[-1]


@pytest.mark.parametrize("model", list(BAD_INPUTS), ids=lambda model: model.__name__)
def test_every_workflow_input_refuses_a_misspelt_field_naming_the_one_meant(
    model: type[BaseModel],
) -> None:
    payload, bad_field, _ = BAD_INPUTS[model]
    meant, typo = _misspelt(model)

    with pytest.raises(ApplicationError) as caught:
        parse_input(model, {**payload, typo: payload.get(meant)})  # type: ignore[type-var]

    assert caught.value.type == "InvalidInput" and caught.value.non_retryable
    assert f"unknown field {typo!r} (did you mean {meant!r}?)" in caught.value.message


def test_the_issue_s_typo_reads_as_promised() -> None:
    with pytest.raises(ApplicationError) as caught:
        parse_input(AutoRunInput, {"max_ticker": 2})

    assert caught.value.message == (
        "invalid input for AutoRunInput: unknown field 'max_ticker' (did you mean 'max_tickers'?)."
    )


def test_a_field_with_no_near_name_lists_the_fields_there_are() -> None:
    with pytest.raises(ApplicationError) as caught:
        parse_input(AutoRunInput, {"exchange": "nyse"})

    assert "unknown field 'exchange' (the fields are: portfolio, initial_cash," in (
        caught.value.message
    )


def test_a_misspelt_field_of_a_nested_model_is_named_by_its_path() -> None:
    payload = {"symbol": "GOOG", "timeframe": "1d", "llm": {"provider": "offline", "modle": "x"}}

    with pytest.raises(ApplicationError) as caught:
        parse_input(QuantAgentInput, payload)

    assert "unknown field 'llm.modle' (did you mean 'llm.model'?)" in caught.value.message


def test_a_misspelt_field_inside_a_list_is_named_with_its_index() -> None:
    bar = {"time": "2012-06-01T00:00:00Z", "open": 1, "high": 2, "low": 1, "close": 2}
    payload = {"symbol": "X", "timeframe": "1d", "bars": [bar, {**bar, "volumes": 3}]}

    found = unknown_fields(QuantAgentInput, payload)

    assert [item.path for item in found] == ["bars.1.volumes"]
    assert "did you mean 'bars.1.volume'?" in found[0].message()


def test_a_model_that_reads_its_own_raw_shape_is_taken_at_its_word() -> None:
    # AnalystReports takes its reports flat, keyed by analyst kind, not by field name.
    payload = {"symbol": "GOOG", "as_of": "2024-06-03T00:00:00Z", "reports": {"market": None}}

    assert unknown_fields(AnalystReports, payload["reports"]) == []


def test_a_model_built_in_code_refuses_an_unknown_keyword_too() -> None:
    with pytest.raises(ValidationError) as caught:
        AutoRunInput.model_validate({"max_ticker": 2})

    assert describe_validation_error(caught.value) == (
        "unknown field 'max_ticker' (did you mean 'max_tickers'?)"
    )


def test_a_schedule_with_a_misspelt_field_is_refused_before_it_is_created() -> None:
    request = ScheduleRequest(
        name="close",
        flow="autorun",
        cron="30 15 * * 1-5",
        tz="UTC",
        workflow_input={"max_ticker": 2},
    )

    with pytest.raises(InvalidInput) as caught:
        _checked(request)

    assert "unknown field 'max_ticker' (did you mean 'max_tickers'?)" in str(caught.value)


async def test_a_run_started_with_a_misspelt_field_fails_saying_so(
    ts_env: WorkflowEnvironment,
) -> None:
    queue = f"unknown-fields-{uuid.uuid4()}"
    plans = [WorkerPlan(queue=queue, workflows=[AutoRunWorkflow])]
    payload: dict[str, Any] = {"max_ticker": 2}

    async with running_workers(ts_env.client, plans):
        with pytest.raises(WorkflowFailureError) as caught:
            await ts_env.client.execute_workflow(
                "AutoRun", payload, id=f"typo-{uuid.uuid4()}", task_queue=queue
            )

    cause = caught.value.cause
    assert isinstance(cause, ApplicationError) and cause.type == "InvalidInput"
    assert "unknown field 'max_ticker' (did you mean 'max_tickers'?)" in cause.message


class GreetInput(RunInput):
    """A one-field input."""

    name: str = "desk"


@workflow.defn(name="Greet")
class Greet:
    """Echoes its input: enough to record a history whose start payload has a typo."""

    @workflow.run
    async def run(self, args: GreetInput) -> str:
        return f"hello {args.name}"


async def test_a_run_started_before_unknown_fields_were_refused_still_replays(
    ts_env: WorkflowEnvironment, monkeypatch: pytest.MonkeyPatch
) -> None:
    queue = f"greet-{uuid.uuid4()}"
    with monkeypatch.context() as before:  # the code as it was: unknown keys ignored
        before.setattr(RunInput, "unknown_fields_failure", lambda self: None)
        async with running_workers(ts_env.client, [WorkerPlan(queue=queue, workflows=[Greet])]):
            handle = await ts_env.client.start_workflow(
                "Greet",
                {"name": "ann", "nmae": "typo"},
                id=f"greet-{uuid.uuid4()}",
                task_queue=queue,
            )
            assert await handle.result() == "hello ann"
    history = await handle.fetch_history()

    replayer = Replayer(
        workflows=[Greet], data_converter=pydantic_data_converter, interceptors=[CheckRunInput()]
    )
    replayed = await replayer.replay_workflow(history, raise_on_replay_failure=False)
    with monkeypatch.context() as fresh_start:  # the check, were it not told a replay apart
        fresh_start.setattr(workflow.unsafe, "is_replaying", lambda: False)
        unguarded = await replayer.replay_workflow(history, raise_on_replay_failure=False)
    with pytest.raises(ApplicationError) as fresh:
        parse_input(GreetInput, {"name": "ann", "nmae": "typo"})

    assert replayed.replay_failure is None
    assert unguarded.replay_failure is not None
    assert "unknown field 'nmae' (did you mean 'name'?)" in fresh.value.message
