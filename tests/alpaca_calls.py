"""The Alpaca client tests' key pair, their settings for a base URL and their market order, for
the tests against the stand-in and those without one."""

from __future__ import annotations

from decimal import Decimal
from typing import Any

from shared.broker.alpaca_wire import OrderRequest
from shared.config import AlpacaSettings

KEY, SECRET = "PKCLIENTTESTKEY", "client-secret-do-not-show"


def settings_for(
    base_url: str, *, secret: str = SECRET, timeout: float = 2.0, **fields: Any
) -> AlpacaSettings:
    return AlpacaSettings(
        base_url=base_url, key_id=KEY, secret_key=secret, timeout_seconds=timeout, **fields
    )


def order(client_order_id: str = "intent-1", **fields: Any) -> OrderRequest:
    """A market buy of 10 AAPL for the day, with ``fields`` changed."""
    values: dict[str, Any] = {
        "symbol": "AAPL",
        "qty": Decimal("10"),
        "side": "buy",
        "type": "market",
        "time_in_force": "day",
        "client_order_id": client_order_id,
    }
    return OrderRequest.model_validate(values | fields)
