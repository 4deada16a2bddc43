"""Workflow input that fails the run, never the workflow task.

Every workflow's ``run`` takes one typed input model (``async def run(self, args:
PipelineInput)``), a ``RunInput``. The SDK decodes the start payload into it before
the run begins, and a decoding error would fail the *workflow task*, which
Temporal retries forever while the run looks alive. So a ``RunInput`` decoded from
JSON (a start payload: ``temporal workflow start --input``, a parent, a schedule)
raises a non-retryable ``ApplicationError`` of type ``InvalidInput`` instead, whose
message names each bad field and the value given; the SDK lets a failure of that
kind through decoding and fails the run with it. Built in code (``PipelineInput(
symbol=...)``), a model raises pydantic's ``ValidationError`` as usual.

A key the model does not know (``{"max_ticker": 2}``) is refused the same way, naming
it and the nearest known field (``shared.unknown_fields``), on every door: a start
payload fails the run, and the CLI, schedules and the console's forms validate with the
same model. Decoding only notes such keys; ``CheckRunInput`` fails a fresh run for them
inside the workflow, where a replay can be told apart (decoding cannot), so a run that
started before this rule replays as it ran.

A start without any input (``temporal workflow start --type Scan``) counts as
``{}``: ``CheckRunInput`` hands ``run`` its model validated from nothing, so a
model with defaults for everything runs and one with required fields fails the run
naming them.
"""

from __future__ import annotations

import typing
from collections.abc import Callable, Sequence
from datetime import datetime
from typing import Annotated, Any, TypeVar

from pydantic import (
    AfterValidator,
    BaseModel,
    Field,
    GetCoreSchemaHandler,
    PrivateAttr,
    ValidationError,
    ValidationInfo,
)
from pydantic_core import core_schema, to_json
from temporalio import workflow
from temporalio.common import SearchAttributeKey
from temporalio.exceptions import ApplicationError
from temporalio.worker import (
    ExecuteWorkflowInput,
    Interceptor,
    StartChildWorkflowInput,
    WorkflowInboundInterceptor,
    WorkflowInterceptorClassInput,
    WorkflowOutboundInterceptor,
)

from shared.config import LANGUAGE_MAX, LANGUAGE_PATTERN
from shared.portfolio.models import NAME_PATTERN
from shared.unknown_fields import unknown_fields, unknown_fields_error
from shared.validation_errors import describe_validation_error
from workflows.run_terms import enter_terms, passed_down

SCHEDULED_START_TIME = SearchAttributeKey.for_datetime("TemporalScheduledStartTime")
"""Set by the server on every run a Schedule starts."""


def invalid_run_input(
    model: type[BaseModel], error: ValidationError | None, unknown: Sequence[str] = ()
) -> ApplicationError:
    """The failure of a run whose input is not a valid ``model``: every unknown field with the
    nearest known one, then every bad field with the value given, e.g. ``timeframe '7x' is
    not one of '1m', '5m', ...``."""
    problems = [*unknown, *([describe_validation_error(error)] if error else [])]
    return ApplicationError(
        f"invalid input for {model.__name__}: {'; '.join(problems)}.",
        type="InvalidInput",
        non_retryable=True,
    )


class RunInput(BaseModel):
    """The base of every workflow's input model: decoded from a start payload, a bad field
    fails the run with ``invalid_run_input`` (see the module docstring)."""

    budget_usd: float | None = Field(
        None,
        gt=0,
        le=1_000_000,
        description="spending limit of this run and the runs it starts, in USD; it waits "
        "when the next model call could pass it (`quantdesk budget raise`)",
    )
    budget_tokens: int | None = Field(
        None,
        ge=1,
        description="tokens this run and the runs it starts may spend: the limit for "
        "models without a price",
    )
    language: str | None = Field(
        None,
        max_length=LANGUAGE_MAX,
        pattern=LANGUAGE_PATTERN,
        description="the language of everything written for people, e.g. German (default: "
        "the desk's QUANTDESK_LANGUAGE, else English); enums, tickers and numbers stay as they are",
    )
    book: str | None = Field(
        None,
        pattern=NAME_PATTERN,
        description="the book whose daily spending limit this run counts against (default: "
        "its own portfolio; the runs it starts inherit it)",
    )

    _unknown: tuple[str, ...] = PrivateAttr(default=())
    """What decoding found that the model does not know, one message each: a fresh run is
    refused for it (``CheckRunInput``), a replay of an older one is not."""

    @classmethod
    def __get_pydantic_core_schema__(
        cls, source: type[BaseModel], handler: GetCoreSchemaHandler
    ) -> core_schema.CoreSchema:
        # Around the whole model schema, its own validators included: a model validator
        # (mode "wrap") would run inside a subclass's "after" validators and miss their errors.
        def fail_the_run(
            data: Any, validate: core_schema.ValidatorFunctionWrapHandler, info: ValidationInfo
        ) -> Any:
            if info.mode == "json" and data is None:
                data = {}
            unknown = unknown_fields(source, data)
            if unknown and info.mode != "json":
                raise unknown_fields_error(source, unknown)
            messages = tuple(item.message() for item in unknown)
            try:
                value = validate(data)
            except ValidationError as error:
                if info.mode != "json":
                    raise
                raise invalid_run_input(source, error, messages) from None
            if messages:
                value._unknown = messages
            return value

        return core_schema.with_info_wrap_validator_function(fail_the_run, handler(source))

    def unknown_fields_failure(self) -> ApplicationError | None:
        """The failure of a fresh run whose start payload named fields the model does not know."""
        return invalid_run_input(type(self), None, self._unknown) if self._unknown else None


M = TypeVar("M", bound=RunInput)


def _has_timezone(value: datetime) -> datetime:
    if value.tzinfo is None:
        raise ValueError("give a timezone, e.g. 2012-06-01T00:00:00Z")
    return value


ZonedTime = Annotated[datetime, AfterValidator(_has_timezone)]
"""A time an input must give with its zone: a naive time would be read as the workers'
local time, a different moment on each machine."""


def parse_input(model: type[M], raw: Any) -> M:
    """``raw`` (a JSON value; None: no input) decoded as ``model`` the way the SDK decodes a
    start payload and checked as a fresh run checks it: a bad or unknown field raises
    ``invalid_run_input``'s failure."""
    value = model.model_validate_json(to_json(raw))
    failure = value.unknown_fields_failure()
    if failure is not None:
        raise failure
    return value


def run_input_model(run: Callable[..., Any]) -> type[RunInput] | None:
    """The ``RunInput`` a workflow's ``run`` takes, if it takes one."""
    hints = typing.get_type_hints(run)
    hints.pop("return", None)
    model = next(iter(hints.values()), None)
    return model if isinstance(model, type) and issubclass(model, RunInput) else None


class _PassTermsDown(WorkflowOutboundInterceptor):
    def start_child_workflow(self, input: StartChildWorkflowInput) -> Any:
        input.args = [passed_down(arg) for arg in input.args]
        return super().start_child_workflow(input)


class _CheckRunInputInbound(WorkflowInboundInterceptor):
    def init(self, outbound: WorkflowOutboundInterceptor) -> None:
        super().init(_PassTermsDown(outbound))

    async def execute_workflow(self, input: ExecuteWorkflowInput) -> Any:
        model = run_input_model(input.run_fn)
        if not input.args and model is not None:
            input.args = [parse_input(model, None)]
        given = input.args[0] if input.args else None
        # Decoding cannot tell a replay from a fresh start; the workflow can.
        if isinstance(given, RunInput) and not workflow.unsafe.is_replaying():
            failure = given.unknown_fields_failure()
            if failure is not None:
                raise failure
        if isinstance(given, RunInput):
            enter_terms(given)
        return await super().execute_workflow(input)


class CheckRunInput(Interceptor):
    """Every worker that runs workflows has this interceptor: a run started without input
    gets its model validated from ``{}``, and a fresh run whose start payload named an
    unknown field fails saying so (a replay of a run that began before that rule goes on).
    It also keeps the run's terms (``workflows.run_terms``) and passes them to its children."""

    def workflow_interceptor_class(
        self, input: WorkflowInterceptorClassInput
    ) -> type[WorkflowInboundInterceptor]:
        return _CheckRunInputInbound


def scheduled_time() -> datetime | None:
    """The time a Temporal Schedule meant this run to start, if a Schedule started it.

    A run without ``as_of`` reads "the latest data"; a scheduled one reads the latest
    data *at its scheduled time*, so a run that starts late (a worker was down, a
    catch-up after an outage) never sees what happened after the moment it stands for.
    """
    return workflow.info().typed_search_attributes.get(SCHEDULED_START_TIME)
