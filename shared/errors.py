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


def _rebuilt(kind: type[QuantdeskError], args: tuple[Any, ...], state: dict[str, Any]) -> Any:
    """An error of ``kind`` with ``args`` and attributes ``state``, its ``__init__`` skipped."""
    error = kind.__new__(kind)
    error.args = args
    error.__dict__.update(state)
    return error


class QuantdeskError(Exception):
    """Base class. ``retryable`` tells Temporal whether another attempt can help."""

    retryable: bool = False

    def __init__(self, message: str, *, fix: str | None = None) -> None:
        self.message = message
        self.fix = fix
        super().__init__(f"{message} {fix}".strip() if fix else message)

    def __reduce__(self) -> tuple[Any, ...]:
        """Pickle by state, not by ``__init__``'s arguments (which subclasses change): an error
        raised in a chart process (``shared.charts.offload``) reaches the worker whole."""
        return (_rebuilt, (type(self), self.args, self.__dict__))

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


class PayloadTampered(QuantdeskError):
    """An encrypted payload failed authentication: its bytes or key id were altered, or it was
    sealed by a different key under the same id. Retrying cannot open it."""

    def __init__(self, key_id: str) -> None:
        self.key_id = key_id
        super().__init__(
            f"an encrypted payload under key id {key_id!r} failed authentication: it was "
            "altered or truncated, or sealed with another key of the same id.",
            fix=f"Check that every host has the same key line for {key_id!r}.",
        )


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


class ChartProcessLost(QuantdeskError):
    """The process drawing charts died mid-chart (killed, out of memory); a new one is started
    for the next attempt."""

    retryable = True


class StorageConfigError(QuantdeskError):
    """The object store answered but refused: credentials or bucket are wrong."""


class NeedsOperator(QuantdeskError):
    """A server quantdesk did not start lacks something quantdesk needs (search attributes on
    the namespace, buckets) and these credentials may not add it: waiting cannot help, someone
    allowed to must run the command the message gives."""


class ObjectNotFound(QuantdeskError):
    """A key that a step depends on does not exist in the object store."""


class ClaimMismatch(QuantdeskError):
    """A claim-checked value read back does not match its claim's digest: the object was
    replaced or damaged in the store. Retrying reads the same bytes."""

    def __init__(self, where: str) -> None:
        super().__init__(
            f"the value stored at {where} does not match the digest of its claim",
            fix="Something other than quantdesk wrote to the payloads bucket; restore it or "
            "restart the run.",
        )


class ToolError(QuantdeskError):
    """A tool could not answer; the message goes back to the model as a tool result."""


class NoData(QuantdeskError):
    """A vendor has nothing for the request in the window: an answer, not a failure."""


class NotConfigured(QuantdeskError):
    """A vendor does not serve this kind, or lacks what it needs (a key, a package, files)."""


class NotCovered(NotConfigured):
    """A vendor serves this kind, but not for this symbol by its nature (a crypto exchange asked
    for a company's bars): the router asks the next vendor without listing this one, since
    saying so on every read would tell the reader nothing."""


class RateLimited(QuantdeskError):
    """A vendor throttled the call; another attempt after ``retry_after`` may succeed."""

    retryable = True

    def __init__(self, message: str, *, retry_after: timedelta | None = None) -> None:
        self.retry_after = retry_after
        super().__init__(message)


class VendorFailure(QuantdeskError):
    """A vendor failed (network, server error, unreadable answer); retrying may help."""

    retryable = True


class BrokerError(QuantdeskError):
    """A broker refused or failed a call: ``endpoint`` (``POST /v2/orders``), and the
    broker's HTTP ``status`` and error ``code`` when it answered at all."""

    def __init__(
        self,
        message: str,
        *,
        endpoint: str,
        fix: str | None = None,
        status: int | None = None,
        code: int | None = None,
        retry_after: timedelta | None = None,
    ) -> None:
        self.endpoint = endpoint
        self.status = status
        self.code = code
        self.retry_after = retry_after
        super().__init__(message, fix=fix)


class BrokerUnavailable(BrokerError):
    """The broker could not be reached, timed out, dropped the connection or failed (5xx).

    Another attempt may succeed. For a submission the outcome is unknown: the order
    may exist, so the next attempt sends the same client order id, or looks it up.
    """

    retryable = True


class BrokerRateLimited(BrokerError):
    """The broker throttled the call (429); another attempt after ``retry_after`` may succeed."""

    retryable = True


class BrokerAuthFailed(BrokerError):
    """The broker refused the key pair; the message names the variables, never their values."""


class BrokerRefused(BrokerError):
    """The broker refused a request as given (a 4xx); sending it again cannot help."""


class OrderRefused(BrokerRefused):
    """The broker would not take an order (buying power, shares held, a field it refuses);
    ``reason`` is the broker's own words. Nothing was placed."""

    def __init__(
        self, message: str, *, reason: str, client_order_id: str, endpoint: str, **broker: Any
    ) -> None:
        self.reason = reason
        self.client_order_id = client_order_id
        super().__init__(message, endpoint=endpoint, **broker)

    @property
    def details(self) -> tuple[Any, ...]:
        """(client order id, the broker's reason): what the book records against the intent."""
        return (self.client_order_id, self.reason)


class DuplicateClientOrderId(BrokerError):
    """The client order id was taken: an earlier attempt placed the order. Look it up by
    that id; never send it under a new one."""

    def __init__(self, message: str, *, client_order_id: str, endpoint: str, **broker: Any) -> None:
        self.client_order_id = client_order_id
        super().__init__(message, endpoint=endpoint, **broker)

    @property
    def details(self) -> tuple[Any, ...]:
        """(client order id,): the order to look up."""
        return (self.client_order_id,)


class BrokerContractChanged(BrokerError):
    """The broker answered in a shape the client does not know: its API changed, or something
    else answered in its place. Retrying cannot help; the client must be updated."""


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


class MissingExtra(QuantdeskError):
    """An optional package is not installed: the extra that brings it names the fix
    (``shared.extras``). Retrying cannot install it."""

    def __init__(self, what: str, module: str, extra: str, command: str) -> None:
        self.module = module
        self.extra = extra
        super().__init__(
            f"{what} needs the package {module!r} from quantdesk's {extra!r} extra, which is "
            "not installed.",
            fix=f"Install it with `{command}`.",
        )


class SpendingLimitReached(QuantdeskError):
    """The next model call could pass a run's or a book's spending limit: the run waits for a
    person to raise it (``quantdesk budget raise``) or to cancel it; retrying cannot help."""
