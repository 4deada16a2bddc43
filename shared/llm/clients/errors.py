"""One translation from SDK failures to ``ProviderError``, for every vendor.

Both SDKs are generated from the same template and fail the same way: a status
error carrying the HTTP response, a timeout, a connection error. So one status
table decides what retrying can fix, and one set of builders writes messages
that name the provider, the model and the setting to change. Every message
passes through one constructor that redacts the API key, because vendors echo
keys back in 401 bodies and messages end up in Temporal's history and the UI.
"""

from __future__ import annotations

import json
from collections.abc import Callable, Iterator, Mapping
from contextlib import contextmanager
from datetime import timedelta
from typing import Protocol, cast

from shared.errors import ProviderError
from shared.llm.clients.common import SdkErrors, Target, key_settings, setting, url_settings
from shared.retry_after import retry_after

# Statuses another attempt can fix; every other 5xx is treated the same way.
RETRYABLE_STATUSES = frozenset({408, 409, 429, 500, 502, 503, 504, 529})
_MAX_DETAIL = 500
REDACTED = "***"


class _Response(Protocol):
    @property
    def headers(self) -> Mapping[str, str]: ...


class _StatusError(Protocol):
    """What both SDKs' ``APIStatusError`` carry."""

    status_code: int
    body: object
    message: str

    @property
    def response(self) -> _Response: ...


def is_retryable(status: int) -> bool:
    """Whether a vendor's HTTP status is worth another attempt."""
    return status in RETRYABLE_STATUSES or status >= 500


# -- messages -----------------------------------------------------------------


def redact(text: str, key: str | None) -> str:
    """``text`` with every occurrence of ``key`` replaced."""
    return text.replace(key, REDACTED) if key else text


def _error(
    target: Target,
    message: str,
    *,
    retryable: bool,
    fix: str | None = None,
    retry_after: timedelta | None = None,
    status: int | None = None,
) -> ProviderError:
    """The only way this module builds an error, so no path can skip redaction."""
    return ProviderError(
        redact(message, target.api_key),
        retryable=retryable,
        fix=redact(fix, target.api_key) if fix else None,
        retry_after=retry_after,
        status=status,
    )


def _vendor_detail(body: object, fallback: str) -> str:
    """The vendor's own explanation: ``error.message`` in both vendors' bodies.

    openai 3.x hands over the inner ``error`` object as the body, anthropic the
    whole envelope, compatible servers either; all are read the same way.
    """
    inner = body.get("error", body) if isinstance(body, dict) else None
    message = inner.get("message") if isinstance(inner, dict) else None
    text = message if isinstance(message, str) and message else (str(body) if body else fallback)
    return text[:_MAX_DETAIL]


def _who(target: Target) -> str:
    return f"{target.spec.name} model {target.model!r}"


def _key_fix(target: Target) -> str:
    return f"Set {' or '.join(key_settings(target.spec))} to a valid key."


def _url_hint(target: Target) -> str:
    return f"{' or '.join(url_settings(target.spec))} (now {target.base_url or 'the SDK default'})"


def _refused_key(target: Target, status: int, detail: str) -> tuple[str, str | None]:
    return f"{target.spec.name} refused the API key (HTTP {status}: {detail}).", _key_fix(target)


def _unknown_model(target: Target, status: int, detail: str) -> tuple[str, str | None]:
    return (
        f"unknown model {target.model!r} for provider {target.spec.name} "
        f"(HTTP {status}: {detail}).",
        f"Set {setting(target.spec, f'{target.role}_model')} to a model {target.spec.name} "
        f"serves, or check {_url_hint(target)}.",
    )


def _bad_request(target: Target, status: int, detail: str) -> tuple[str, str | None]:
    if "image" in detail.lower():
        return (
            f"{_who(target)} does not accept images (HTTP {status}: {detail}).",
            f"Set {setting(target.spec, 'vision_model')} to a model that reads images.",
        )
    return f"{_who(target)} rejected the request (HTTP {status}): {detail}", None


_REFUSALS: dict[int, Callable[[Target, int, str], tuple[str, str | None]]] = {
    401: _refused_key,
    403: _refused_key,
    404: _unknown_model,
    400: _bad_request,
    422: _bad_request,
}


def status_error(target: Target, error: _StatusError) -> ProviderError:
    """A vendor's HTTP error: retryable by the status table, else named and explained."""
    detail = _vendor_detail(error.body, error.message)
    return http_error(target, error.status_code, detail, error.response.headers)


def http_error(
    target: Target, status: int, detail: str, headers: Mapping[str, str]
) -> ProviderError:
    """An HTTP status and the vendor's explanation of it, as ``status_error`` reads them from
    an SDK's exception (and the LangChain adapter from whatever an integration raised)."""
    if is_retryable(status):
        return _error(
            target,
            f"{_who(target)} failed with HTTP {status}: {detail}",
            retryable=True,
            retry_after=retry_after(headers),
            status=status,
        )
    message, fix = _REFUSALS.get(status, _bad_request)(target, status, detail[:_MAX_DETAIL])
    return _error(target, message, retryable=False, fix=fix, status=status)


def context_overflow(target: Target, detail: str) -> ProviderError:
    """A prompt longer than the model's context window: another attempt sends the same prompt,
    so it is not retried; a window set for the model makes the worker cut prompts to fit."""
    return _error(
        target,
        f"{_who(target)} refused a prompt longer than its context window: {detail[:_MAX_DETAIL]}",
        retryable=False,
        fix=f"Set {setting(target.spec, 'context_tokens')} to the model's context window on the "
        f"{target.spec.task_queue} worker (prompts are then cut to fit it), restart it, then "
        "resume the run.",
        status=400,
    )


def unclassified(target: Target, error: Exception) -> ProviderError:
    """A failure the integration did not classify: retried, within the run's retry budget,
    since nothing says another attempt cannot succeed."""
    return _error(
        target,
        f"{_who(target)} failed ({type(error).__name__}: {str(error)[:_MAX_DETAIL]})",
        retryable=True,
    )


def refusal(target: Target, error: Exception) -> ProviderError:
    """The model declined to answer (a safety refusal): asking again the same way rarely helps."""
    return _error(
        target,
        f"{_who(target)} declined to answer: {str(error)[:_MAX_DETAIL]}",
        retryable=False,
        fix="Resume the run to ask again, or choose another model for this role.",
    )


def timeout_error(target: Target) -> ProviderError:
    return _error(
        target,
        f"{_who(target)} did not answer within {target.timeout:g} s.",
        retryable=True,
        fix=f"Raise {setting(target.spec, 'timeout_seconds')} if the model needs longer.",
    )


def connection_error(target: Target, error: Exception) -> ProviderError:
    cause = error.__cause__ or error
    return _error(
        target,
        f"{target.spec.name} is unreachable ({type(cause).__name__}: {cause}).",
        retryable=True,
        fix=f"Check that the server is up and {_url_hint(target)}.",
    )


def malformed_reply(target: Target, error: Exception) -> ProviderError:
    """A 200 whose body is not a chat reply: proxies and overloaded gateways send these."""
    return _error(
        target,
        f"{_who(target)} sent a reply that is not a chat reply "
        f"({type(error).__name__}: {str(error)[:_MAX_DETAIL]}).",
        retryable=True,
    )


@contextmanager
def translated(target: Target, sdk: SdkErrors) -> Iterator[None]:
    """Raise every SDK failure in the block as a ``ProviderError``, without the SDK's chain.

    The chain is dropped (``from None``) because the SDK exception holds the
    request, whose headers carry the key.
    """
    try:
        yield
    except sdk.status as error:
        raise status_error(target, cast(_StatusError, error)) from None
    except sdk.timeout:
        raise timeout_error(target) from None
    except sdk.connection as error:
        raise connection_error(target, error) from None
    except json.JSONDecodeError as error:  # both SDKs let a non-JSON 200 body escape raw
        raise malformed_reply(target, error) from None


@contextmanager
def reading_reply(target: Target) -> Iterator[None]:
    """Turn a reply of the wrong shape into a retryable error while reading it.

    Neither SDK validates replies: ``{}`` becomes a reply object whose fields are
    ``None`` and a JSON string becomes a ``str``, so a wrong shape only shows as
    these exceptions when the fields are read.
    """
    try:
        yield
    except (AttributeError, TypeError, IndexError, KeyError, ValueError) as error:
        raise malformed_reply(target, error) from None
