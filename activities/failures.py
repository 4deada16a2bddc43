"""The one place where quantdesk errors become Temporal failures.

The error's type decides: ``retryable`` errors are retried by Temporal (with a
vendor's ``Retry-After`` as the next delay), everything else fails at once so a
bad key or a bad field does not burn every attempt.
"""

from __future__ import annotations

from collections.abc import Iterator
from contextlib import contextmanager

from temporalio.exceptions import ApplicationError

from shared.errors import BrokerError, ProviderError, QuantdeskError, RateLimited


def application_error(error: QuantdeskError) -> ApplicationError:
    """The Temporal failure for ``error``: same message, typed, retryable or not, with the
    error's ``details`` for a workflow to read."""
    delay = (
        error.retry_after if isinstance(error, ProviderError | RateLimited | BrokerError) else None
    )
    return ApplicationError(
        str(error),
        *error.details,
        type=error.type_name,
        non_retryable=not error.retryable,
        next_retry_delay=delay,
    )


@contextmanager
def as_temporal_failures() -> Iterator[None]:
    """Run a block, re-raising its quantdesk errors as Temporal failures."""
    try:
        yield
    except QuantdeskError as error:
        raise application_error(error) from None
