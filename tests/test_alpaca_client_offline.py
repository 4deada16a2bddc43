"""The Alpaca client where no stand-in is needed: its settings, the order requests it will not
build, the rate-limit headers it reads, and the typed errors of a broker that cannot be reached
or answers in another shape (the calls against the stand-in are test_alpaca_client.py)."""

from __future__ import annotations

import socket
import threading
import time
from collections.abc import Iterator
from contextlib import contextmanager
from datetime import timedelta
from decimal import Decimal
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any

import httpx
import pytest
from pydantic import ValidationError

from shared.broker.alpaca_client import AlpacaClient
from shared.broker.alpaca_errors import rate_limit_delay
from shared.config import ALPACA_LIVE_URL, ALPACA_PAPER_URL, AlpacaSettings, load_settings
from shared.errors import (
    BrokerAuthFailed,
    BrokerContractChanged,
    BrokerError,
    BrokerRateLimited,
    BrokerRefused,
    BrokerUnavailable,
    ConfigError,
    DuplicateClientOrderId,
    OrderRefused,
)
from tests.alpaca_calls import KEY, SECRET, order, settings_for

# -- settings -------------------------------------------------------------------------


def test_the_keys_come_from_alpacas_variables_and_never_show(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    monkeypatch.setenv("APCA_API_KEY_ID", KEY)
    monkeypatch.setenv("APCA_API_SECRET_KEY", SECRET)
    monkeypatch.setenv("QUANTDESK_ALPACA__TIMEOUT_SECONDS", "3.5")

    settings = load_settings().alpaca

    assert settings.keys() == (KEY, SECRET)
    assert settings.timeout_seconds == 3.5
    assert settings.url == ALPACA_PAPER_URL
    assert SECRET not in repr(settings) and SECRET not in settings.model_dump_json()


def test_live_replaces_only_the_paper_default() -> None:
    assert AlpacaSettings(live=True).url == ALPACA_LIVE_URL
    assert AlpacaSettings(live=True, base_url="http://127.0.0.1:9/").url == "http://127.0.0.1:9"


def test_a_base_url_without_its_scheme_is_a_config_error(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("QUANTDESK_ALPACA__BASE_URL", "paper-api.alpaca.markets")

    with pytest.raises(ConfigError, match="QUANTDESK_ALPACA__BASE_URL: .*with its scheme"):
        load_settings()


# -- requests it will not build ------------------------------------------------------------


@pytest.mark.parametrize(
    "fields",
    [
        {"qty": Decimal("1.5")},
        {"qty": Decimal(0)},
        {"type": "limit"},
        {"limit_price": Decimal("180")},
        {"type": "stop"},
        {"client_order_id": "intent:1"},
        {"client_order_id": "x" * 49},
    ],
    ids=["fractional", "zero", "limit without price", "price on market", "stop", "colon", "49"],
)
def test_order_requests_alpaca_would_refuse_are_not_built(fields: dict[str, Any]) -> None:
    with pytest.raises(ValidationError):
        order(**fields)


# -- the rate limit's headers --------------------------------------------------------------


@pytest.mark.parametrize(
    ("headers", "low", "high"),
    [
        ({"Retry-After": "7"}, 7, 7),
        ({"X-RateLimit-Reset": "{in_5_s}"}, 3, 6),
        ({"Retry-After": "3600"}, 60, 60),
        ({"X-RateLimit-Reset": "{an_hour_ago}"}, 0, 0),
    ],
    ids=["retry-after", "reset", "capped", "reset past"],
)
def test_the_rate_limit_delay_comes_from_either_header(
    headers: dict[str, str], low: int, high: int
) -> None:
    now = int(time.time())
    filled = {
        name: value.format(in_5_s=now + 5, an_hour_ago=now - 3600)
        for name, value in headers.items()
    }

    delay = rate_limit_delay(httpx.Headers(filled))

    assert delay is not None
    assert timedelta(seconds=low) <= delay <= timedelta(seconds=high)


# -- faults --------------------------------------------------------------------------------


def test_an_unreachable_broker_is_retryable() -> None:
    with socket.socket() as probe:  # a port nobody listens on once closed
        probe.bind(("127.0.0.1", 0))
        port = probe.getsockname()[1]

    with (
        AlpacaClient(settings_for(f"http://127.0.0.1:{port}")) as client,
        pytest.raises(BrokerUnavailable) as caught,
    ):
        client.account()

    assert "ConnectError" in str(caught.value)


# -- answers of another shape --------------------------------------------------------------


class _OneAnswer(BaseHTTPRequestHandler):
    """Answers every request 200 with the server's ``body``: something that is not Alpaca."""

    server: _NotAlpaca

    def do_GET(self) -> None:
        self.send_response(200)
        self.send_header("Content-Type", "application/json")
        self.send_header("Content-Length", str(len(self.server.body)))
        self.end_headers()
        self.wfile.write(self.server.body)

    def log_message(self, format: str, *args: Any) -> None:
        """Silent."""


class _NotAlpaca(ThreadingHTTPServer):
    def __init__(self, body: bytes) -> None:
        self.body = body
        super().__init__(("127.0.0.1", 0), _OneAnswer)


@contextmanager
def not_alpaca(body: bytes) -> Iterator[str]:
    """The base URL of a server that answers ``body`` to everything, for as long as the block."""
    with _NotAlpaca(body) as other:
        threading.Thread(target=other.serve_forever, args=(0.02,), daemon=True).start()
        try:
            yield f"http://127.0.0.1:{other.server_address[1]}"
        finally:
            other.shutdown()


@pytest.mark.parametrize(
    ("body", "said"),
    [
        (b"<html>captive portal</html>", "not JSON"),
        (b'{"cash": "100"}', "id: Field required"),
        (
            b'{"id": "a", "status": "ACTIVE", "currency": "USD", "cash": "lots", '
            b'"buying_power": "1", "equity": "1"}',
            "cash: Input should be a valid decimal",
        ),
    ],
    ids=["html", "missing fields", "not a number"],
)
def test_an_answer_of_another_shape_is_a_contract_change(body: bytes, said: str) -> None:
    with (
        not_alpaca(body) as base_url,
        AlpacaClient(settings_for(base_url)) as client,
        pytest.raises(BrokerContractChanged) as caught,
    ):
        client.account()

    assert caught.value.retryable is False
    assert "GET /v2/account" in str(caught.value) and said in str(caught.value)


def test_every_broker_error_is_typed_for_temporal() -> None:
    retryable = {cls.__name__ for cls in (BrokerUnavailable, BrokerRateLimited)}
    final = (BrokerAuthFailed, BrokerRefused, OrderRefused, BrokerContractChanged)

    assert all(issubclass(cls, BrokerError) for cls in final)
    assert {c.__name__ for c in BrokerError.__subclasses__() if c.retryable} == retryable
    assert not any(cls.retryable for cls in (*final, DuplicateClientOrderId))
