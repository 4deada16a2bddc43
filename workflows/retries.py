"""Retry by kind of failure: one policy for every activity of every workflow.

Whether another attempt can help depends on what failed, never on which step
failed. An unreachable S3 server, a database restart, a vendor's 5xx or 429, a
timeout or a dropped connection heal by themselves, so every activity is retried
with exponential back-off (1 s doubling to at most 1 min between attempts) for as
long as its retry budget lasts: the step's schedule-to-close timeout, an hour by
default (``QUANTDESK_RETRY_BUDGET_MINUTES`` on the workflows worker). A 45 s
storage outage or a dev-server restart costs a run time, never the run.

A contract error is never retried: bad input, a bad key, an unknown model, a
reply that will not fit its schema, data that is invalid as stored. Activities
raise those as non-retryable failures already (``activities.failures``); the
policy names them again, with Python's programming errors, so that one escaping
that translation fails at once instead of burning the budget on a bug.

Call sites keep their own attempt timeout (how long one try of *that* step may
take, and whether it heartbeats) and take everything else from here:

    run_activity(load_bars, request, **durable(DATA_START_TO_CLOSE))

Import this module under ``workflow.unsafe.imports_passed_through()`` like the other
workflow helpers, so the budget the worker configured is the one workflows read.
"""

from __future__ import annotations

from datetime import timedelta
from typing import TypedDict

from temporalio.common import RetryPolicy

DEFAULT_RETRY_BUDGET = timedelta(hours=1)
FIRST_RETRY_AFTER = timedelta(seconds=1)
LONGEST_RETRY_INTERVAL = timedelta(minutes=1)
HEARTBEAT = timedelta(seconds=30)
"""For steps whose activity beats (``activities.heartbeat``): a dead worker's attempt is
retried after this long instead of after its whole start-to-close timeout."""

CONTRACT_FAILURES: tuple[str, ...] = (
    # quantdesk's own (shared.errors): retrying cannot change the answer.
    "InvalidInput",
    "ConfigError",
    "StructuredOutputError",
    "StorageConfigError",
    "ObjectNotFound",
    "NotConfigured",
    "TradeRefused",
    # Python's programming errors and invalid data: a bug or a bad record, not a fault.
    "TypeError",
    "KeyError",
    "AttributeError",
    "NameError",
    "IndexError",
    "AssertionError",
    "NotImplementedError",
    "ZeroDivisionError",
    "ValidationError",
    # SQL that can never succeed as written (a lost connection is OperationalError: retried).
    "IntegrityError",
    "ProgrammingError",
    "DataError",
)
"""Failure types no attempt can fix. A type listed here is never retried, whatever the
failure's own flag says, so types that are retryable in some cases (``ProviderError``:
429 and 5xx are, 401 is not) stay off the list and decide by their flag."""

_budget: timedelta = DEFAULT_RETRY_BUDGET


class StepOptions(TypedDict):
    """The keyword arguments of an activity call (``run_activity``) this module decides."""

    start_to_close_timeout: timedelta
    schedule_to_close_timeout: timedelta
    heartbeat_timeout: timedelta | None
    retry_policy: RetryPolicy


def set_retry_budget(budget: timedelta) -> None:
    """How long a step may keep retrying transient faults; set once by the workflows worker."""
    global _budget
    if budget <= timedelta(0):
        raise ValueError(f"the retry budget must be positive, not {budget}")
    _budget = budget


def retry_budget() -> timedelta:
    """The budget in force for steps scheduled from now on."""
    return _budget


TRANSIENT_RETRY = RetryPolicy(
    initial_interval=FIRST_RETRY_AFTER,
    backoff_coefficient=2.0,
    maximum_interval=LONGEST_RETRY_INTERVAL,
    maximum_attempts=0,  # unlimited: the schedule-to-close budget ends the retrying
    non_retryable_error_types=list(CONTRACT_FAILURES),
)
"""Back-off on anything transient, until the step's budget is spent."""


def durable(start_to_close: timedelta, *, heartbeat: timedelta | None = None) -> StepOptions:
    """Options for one activity step: ``start_to_close`` per attempt (``heartbeat`` for steps
    long enough that a dead worker must be noticed sooner), retried on transient faults for
    the whole retry budget and never on contract errors."""
    return StepOptions(
        start_to_close_timeout=start_to_close,
        schedule_to_close_timeout=max(_budget, start_to_close),
        heartbeat_timeout=heartbeat,
        retry_policy=TRANSIENT_RETRY,
    )
