"""Every error quantdesk raises on purpose, in one place.

Each error says what failed, the offending value and what to do about it, and
knows whether retrying can help. Activities turn these into Temporal
``ApplicationError`` in one function (``activities.failures``), so the
retryable/non-retryable decision is made here, by type, and never by parsing
messages.
"""

from __future__ import annotations

from collections.abc import Mapping
from datetime import timedelta
from typing import Any, TypeVar

T = TypeVar("T")


class QuantdeskError(Exception):
    """Base class. ``retryable`` tells Temporal whether another attempt can help."""

    retryable: bool = False

    def __init__(self, message: str, *, fix: str | None = None) -> None:
        self.message = message
        self.fix = fix
        super().__init__(f"{message} {fix}".strip() if fix else message)

    @property
    def type_name(self) -> str:
        """The stable name Temporal records as the failure type."""
        return type(self).__name__

    @property
    def details(self) -> tuple[Any, ...]:
        """Values a workflow reads from the failure without parsing its message (none here)."""
        return ()


class InvalidInput(QuantdeskError):
    """A field of a request can never be valid as given; retrying cannot fix it."""

    def __init__(self, field: str, problem: str, *, fix: str | None = None) -> None:
        self.field = field
        super().__init__(f"invalid input `{field}`: {problem}.", fix=fix)


class ConfigError(QuantdeskError):
    """A setting is missing or wrong; names the variable to set."""

    def __init__(self, setting: str, problem: str, *, fix: str | None = None) -> None:
        self.setting = setting
        super().__init__(f"configuration `{setting}`: {problem}.", fix=fix)


class ProviderError(QuantdeskError):
    """An LLM vendor refused or failed a call."""

    def __init__(
        self,
        message: str,
        *,
        retryable: bool,
        fix: str | None = None,
        retry_after: timedelta | None = None,
        status: int | None = None,
    ) -> None:
        self.retryable = retryable
        self.retry_after = retry_after
        self.status = status
        super().__init__(message, fix=fix)


class StructuredOutputError(QuantdeskError):
    """The model's reply did not fit the schema, even after the repair turns."""

    def __init__(
        self,
        schema: str,
        problem: str,
        *,
        raw_reply_key: str | None = None,
        fix: str | None = None,
    ) -> None:
        self.schema = schema
        self.problem = problem
        self.raw_reply_key = raw_reply_key
        where = f" The raw reply is stored at `{raw_reply_key}`." if raw_reply_key else ""
        super().__init__(f"reply does not match schema `{schema}`: {problem}.{where}", fix=fix)

    @property
    def details(self) -> tuple[Any, ...]:
        """(schema, problem, raw reply key): what a run records when it goes on without it."""
        return (self.schema, self.problem, self.raw_reply_key)


class StorageUnavailable(QuantdeskError):
    """The object store could not be reached; a later attempt may succeed."""

    retryable = True


class StorageConfigError(QuantdeskError):
    """The object store answered but refused: credentials or bucket are wrong."""


class ObjectNotFound(QuantdeskError):
    """A key that a step depends on does not exist in the object store."""


class ToolError(QuantdeskError):
    """A tool could not answer; the message goes back to the model as a tool result."""


class NoData(QuantdeskError):
    """A vendor has nothing for the request in the window: an answer, not a failure."""


class NotConfigured(QuantdeskError):
    """A vendor does not serve this kind, or lacks what it needs (a key, a package, files)."""


class RateLimited(QuantdeskError):
    """A vendor throttled the call; another attempt after ``retry_after`` may succeed."""

    retryable = True

    def __init__(self, message: str, *, retry_after: timedelta | None = None) -> None:
        self.retry_after = retry_after
        super().__init__(message)


class VendorFailure(QuantdeskError):
    """A vendor failed (network, server error, unreadable answer); retrying may help."""

    retryable = True


class ModelInstallError(QuantdeskError):
    """A model file could not be fetched, or was not the file its catalogue row names;
    nothing was installed."""


def lookup(table: Mapping[str, T], name: str, *, field: str, what: str) -> T:
    """``table[name]``, or an ``InvalidInput`` on ``field`` listing the known names."""
    try:
        return table[name]
    except KeyError:
        known = ", ".join(sorted(table))
        raise InvalidInput(field, f"unknown {what} {name!r}", fix=f"Use one of: {known}.") from None
