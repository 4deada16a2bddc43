"""One translation from Alpaca's HTTP failures to ``BrokerError``, retryable or not by type.

Alpaca answers an error with its HTTP status and a body ``{"code": int, "message":
str}``; it calls the status and the code the contract and the message free text,
so this module decides on those two and passes the message on as the broker's
reason. The one exception is the duplicate ``client_order_id``, which shares its
code (40010001, an invalid parameter) with every other bad field and is told apart
by its message. Gateways in front of Alpaca answer 502/503/504 with HTML pages, so
a body that is not JSON is read as text.

What another attempt can fix is retryable (``BrokerUnavailable``,
``BrokerRateLimited``, with the delay the broker asked for); Temporal makes that
attempt, never this client. Every text the broker or the network sends passes
through ``redact`` first: a message ends up in Temporal's history and the UI.
"""

from __future__ import annotations

import json
import re
import time
from dataclasses import dataclass, field
from datetime import timedelta
from typing import TypedDict

import httpx

from shared.config import ALPACA_KEY_ID_ENV, ALPACA_SECRET_KEY_ENV
from shared.errors import (
    BrokerAuthFailed,
    BrokerContractChanged,
    BrokerError,
    BrokerRateLimited,
    BrokerRefused,
    BrokerUnavailable,
    DuplicateClientOrderId,
    OrderRefused,
)
from shared.retry_after import retry_after

# Alpaca's codes are the status and five digits. 403 with this one is the broker refusing
# an order (buying power, shares, a blocked account), not the key; other 403s are the key.
ORDER_FORBIDDEN = 40310000
INVALID_PARAMETER = 40010001
DUPLICATE_MESSAGE = "client_order_id must be unique"
# Alpaca counts requests per minute: a longer wait means a skewed clock, not the broker's wish.
MAX_RETRY_AFTER = timedelta(seconds=60)
URL_SETTING = "QUANTDESK_ALPACA__BASE_URL"
TIMEOUT_SETTING = "QUANTDESK_ALPACA__TIMEOUT_SECONDS"
REDACTED = "***"
_MAX_DETAIL = 300
_TITLE = re.compile(r"<title>(.*?)</title>", re.I | re.S)


@dataclass(frozen=True)
class Call:
    """One request the client makes: what errors name, and whether it places an order."""

    method: str
    path: str
    client_order_id: str | None = None
    """Set on a submission: its errors speak of that order."""

    @property
    def endpoint(self) -> str:
        return f"{self.method} {self.path}"


class _Answered(TypedDict):
    """What every error of an answered call carries."""

    endpoint: str
    status: int
    code: int | None


@dataclass(frozen=True)
class AlpacaErrors:
    """Builds the errors of one client: its URL for messages, its keys to redact."""

    base_url: str
    secrets: tuple[str, ...] = field(repr=False)

    def redact(self, text: str) -> str:
        """``text`` without any of the keys, should the broker or a proxy echo one."""
        for secret in self.secrets:
            text = text.replace(secret, REDACTED)
        return text

    def _detail(self, text: str) -> str:
        return self.redact(" ".join(text.split()))[:_MAX_DETAIL]

    def said(self, response: httpx.Response) -> tuple[int | None, str]:
        """The broker's error code and message; a gateway page's title; else the start of
        the body."""
        try:
            body = json.loads(response.content)
        except ValueError:
            title = _TITLE.search(response.text)
            return None, self._detail(title.group(1) if title else response.text or "no body")
        if isinstance(body, dict) and isinstance(body.get("message"), str):
            code = body.get("code")
            return (code if isinstance(code, int) else None), self._detail(body["message"])
        return None, self._detail(response.text)

    # -- an answer with an error status ------------------------------------------

    def status_error(self, call: Call, response: httpx.Response) -> BrokerError:
        """The error for a non-2xx answer: retryable by status, else named and explained."""
        status = response.status_code
        code, detail = self.said(response)
        where = f"Alpaca {call.endpoint} answered HTTP {status}"
        broker = _Answered(endpoint=call.endpoint, status=status, code=code)
        if status == 429:
            return BrokerRateLimited(
                f"{where}: {detail}.",
                fix="Alpaca allows about 200 requests a minute per account; an attempt after "
                "the delay it asked for may pass.",
                retry_after=rate_limit_delay(response.headers),
                **broker,
            )
        if status == 408 or status >= 500:
            return BrokerUnavailable(
                f"{where}: {detail}.",
                fix=self._unknown_outcome(call),
                retry_after=_capped(retry_after(response.headers)),
                **broker,
            )
        if status < 400:
            return self.contract_error(
                call,
                f"HTTP {status} (Location: {response.headers.get('location', 'none')})",
                fix=f"Check {URL_SETTING} (now {self.base_url}).",
            )
        if status == 401 or (status == 403 and code != ORDER_FORBIDDEN):
            return BrokerAuthFailed(
                f"Alpaca at {self.base_url} refused the key pair ({where}: {detail}).",
                fix=f"Set {ALPACA_KEY_ID_ENV} and {ALPACA_SECRET_KEY_ENV} to a key pair of "
                "this account: paper keys work only with paper-api.alpaca.markets, live keys "
                f"only with api.alpaca.markets ({URL_SETTING}, QUANTDESK_ALPACA__LIVE).",
                **broker,
            )
        if call.client_order_id is None:
            return BrokerRefused(f"{where}: {detail}.", **broker)
        if status == 422 and code == INVALID_PARAMETER and DUPLICATE_MESSAGE in detail:
            return DuplicateClientOrderId(
                f"Alpaca already has an order with client_order_id {call.client_order_id!r} "
                f"({where}: {detail}).",
                fix="An earlier attempt placed it: look it up by that id and do not send it "
                "again under another.",
                client_order_id=call.client_order_id,
                **broker,
            )
        return OrderRefused(
            f"Alpaca refused order {call.client_order_id!r} ({where}: {detail}).",
            reason=detail,
            client_order_id=call.client_order_id,
            **broker,
        )

    # -- no answer ------------------------------------------------------------------

    def timeout_error(self, call: Call, seconds: float) -> BrokerUnavailable:
        """The broker did not answer in time; a submission may still have been placed."""
        return BrokerUnavailable(
            f"Alpaca {call.endpoint} did not answer within {seconds:g} s.",
            endpoint=call.endpoint,
            fix=self._unknown_outcome(call)
            or f"Raise {TIMEOUT_SETTING} if Alpaca is slow rather than down.",
        )

    def connection_error(self, call: Call, error: httpx.TransportError) -> BrokerUnavailable:
        """The connection failed or was dropped before the answer came."""
        cause = self._detail(f"{type(error).__name__}: {error}")
        return BrokerUnavailable(
            f"Alpaca {call.endpoint} at {self.base_url} failed without an answer ({cause}).",
            endpoint=call.endpoint,
            fix=self._unknown_outcome(call) or f"Check the network and {URL_SETTING}.",
        )

    def contract_error(
        self, call: Call, problem: str, *, fix: str | None = None
    ) -> BrokerContractChanged:
        """A 2xx (or a redirect) the client cannot read: Alpaca's API is not what it knows."""
        placed = (
            f" The order was accepted: find it by client_order_id {call.client_order_id!r}."
            if call.client_order_id is not None
            else ""
        )
        return BrokerContractChanged(
            f"Alpaca {call.endpoint} answered in a shape this client does not know: "
            f"{self._detail(problem)}.{placed}",
            endpoint=call.endpoint,
            fix=fix or "Update shared/broker/alpaca_wire.py to the API Alpaca now speaks.",
        )

    @staticmethod
    def _unknown_outcome(call: Call) -> str | None:
        if call.client_order_id is None:
            return None
        return (
            f"The order may have been placed: send it again with the same client_order_id "
            f"{call.client_order_id!r} (a DuplicateClientOrderId then means it was), or look "
            "it up by that id."
        )


def _capped(delay: timedelta | None) -> timedelta | None:
    return None if delay is None else min(max(delay, timedelta(0)), MAX_RETRY_AFTER)


def rate_limit_delay(headers: httpx.Headers) -> timedelta | None:
    """The wait a 429 asks for: ``Retry-After``, else ``X-RateLimit-Reset`` (unix seconds)
    less now; at most ``MAX_RETRY_AFTER``."""
    asked = retry_after(headers)
    reset = headers.get("x-ratelimit-reset")
    if asked is None and reset is not None:
        try:
            asked = timedelta(seconds=float(reset) - time.time())
        except (ValueError, OverflowError):
            asked = None
    return _capped(asked)
