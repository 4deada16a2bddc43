"""The POST /v2/orders body, checked the way Alpaca checks it, for simple US-equity orders.

Alpaca takes qty, notional and prices as strings (the spec's type) or JSON numbers;
both are accepted and which one came is kept in ``OrderRequest.wire_types``. The
rest is refused as Alpaca refuses it: a missing or unknown enum value, qty and
notional together or neither, a limit price on a market order, fractional shares
outside market day orders, sub-penny prices, a client_order_id past 48 characters
of ``[A-Za-z0-9-]`` (quantdesk's reading of Alpaca's limit, stricter than the
spec's 128). A field the spec does not list is refused too: Alpaca would ignore
it, but a misspelt field in our client is a bug this should catch. Fields the
spec lists but the stand-in does not simulate (brackets, trailing stops, option
legs, extended hours) answer 501, so no test can pass by relying on them.
"""

from __future__ import annotations

import re
from decimal import Decimal
from typing import Any, TypeVar

from tests.fakes.alpaca.model import OrderRequest, OrderType, Side, TimeInForce
from tests.fakes.alpaca.refusals import invalid, malformed, not_simulated, unprocessable

_E = TypeVar("_E", Side, OrderType, TimeInForce)

CLIENT_ORDER_ID_MAX = 48
CLIENT_ORDER_ID = re.compile(r"[A-Za-z0-9-]+")
QTY_PLACES = 9
POSITION_INTENTS = ("buy_to_open", "buy_to_close", "sell_to_open", "sell_to_close")
NUMERIC_FIELDS = ("qty", "notional", "limit_price", "stop_price")
# In the spec's request schema, but outside what the stand-in simulates.
NOT_SIMULATED = (
    "legs",
    "take_profit",
    "stop_loss",
    "trail_price",
    "trail_percent",
    "advanced_instructions",
)
KNOWN_FIELDS = frozenset(
    {
        "symbol",
        "side",
        "type",
        "time_in_force",
        "client_order_id",
        "extended_hours",
        "order_class",
        "position_intent",
        *NUMERIC_FIELDS,
        *NOT_SIMULATED,
    }
)
_DECIMAL_TEXT = re.compile(r"-?\d+(\.\d+)?")
_WITH_LIMIT = (OrderType.LIMIT, OrderType.STOP_LIMIT)
_WITH_STOP = (OrderType.STOP, OrderType.STOP_LIMIT)


def parse_order_request(body: Any) -> OrderRequest:
    """``body`` (JSON read with ``parse_float=Decimal``) as an order, else Alpaca's Refusal."""
    if not isinstance(body, dict):
        raise malformed()
    _refuse_unknown_or_unsimulated(body)
    if body.get("type") == "trailing_stop":
        raise not_simulated("type trailing_stop")
    side = _enum(body, "side", Side)
    kind = _enum(body, "type", OrderType)
    tif = _enum(body, "time_in_force", TimeInForce)
    wire_types = {name: _wire_type(body[name]) for name in NUMERIC_FIELDS if name in body}
    qty, notional = _decimal(body, "qty"), _decimal(body, "notional")
    limit_price, stop_price = _decimal(body, "limit_price"), _decimal(body, "stop_price")
    _check_amount(qty, notional, kind, tif)
    _check_prices(kind, limit_price, stop_price)
    return OrderRequest(
        symbol=_required(body, "symbol"),
        side=side,
        type=kind,
        time_in_force=tif,
        qty=qty,
        notional=notional,
        limit_price=limit_price,
        stop_price=stop_price,
        client_order_id=_client_order_id(body),
        extended_hours=_extended_hours(body, kind, tif),
        position_intent=_position_intent(body),
        wire_types=wire_types,
    )


def _refuse_unknown_or_unsimulated(body: dict[str, Any]) -> None:
    for name in body:
        if name not in KNOWN_FIELDS:
            raise invalid(f'unknown field "{name}"')
    for name in NOT_SIMULATED:
        if body.get(name) is not None:
            raise not_simulated(f"the order field {name}")
    order_class = _string(body, "order_class")
    if order_class not in (None, "", "simple"):
        if order_class in ("bracket", "oco", "oto", "mleg"):
            raise not_simulated(f"order_class {order_class}")
        raise invalid(f"invalid order_class: {order_class}")


def _string(body: dict[str, Any], name: str) -> str | None:
    value = body.get(name)
    if value is not None and not isinstance(value, str):
        raise invalid(f"{name} must be a string")
    return value


def _required(body: dict[str, Any], name: str) -> str:
    value = _string(body, name)
    if not value:
        raise invalid(f"{name} is required")
    return value


def _enum(body: dict[str, Any], name: str, kind: type[_E]) -> _E:
    value = _required(body, name)
    try:
        return kind(value)
    except ValueError:
        raise invalid(f"invalid {name}: {value}") from None


def _wire_type(value: Any) -> str:
    return "string" if isinstance(value, str) else "number"


def _decimal(body: dict[str, Any], name: str) -> Decimal | None:
    """A string or a JSON number read exactly; anything else is refused."""
    value = body.get(name)
    if value is None:
        return None
    exact = isinstance(value, int | Decimal) and not isinstance(value, bool)
    if not exact and not (isinstance(value, str) and _DECIMAL_TEXT.fullmatch(value)):
        raise invalid(f"{name} must be a decimal number")
    number = Decimal(value)
    if number <= 0:
        raise invalid(f"{name} must be > 0")
    return number


def _places(number: Decimal) -> int:
    exponent = number.normalize().as_tuple().exponent
    return -exponent if isinstance(exponent, int) and exponent < 0 else 0


def _check_amount(
    qty: Decimal | None, notional: Decimal | None, kind: OrderType, tif: TimeInForce
) -> None:
    market_day = kind is OrderType.MARKET and tif is TimeInForce.DAY
    if qty is not None and notional is not None:
        raise invalid("qty and notional cannot both be specified")
    if qty is None and notional is None:
        raise invalid("qty or notional is required")
    if notional is not None and not market_day:
        raise unprocessable("notional orders must be market orders with time_in_force day")
    if qty is not None:
        if _places(qty) > QTY_PLACES:
            raise invalid(f"qty can take up to {QTY_PLACES} decimal places")
        if _places(qty) and not market_day:
            raise unprocessable("fractional orders must be market orders with time_in_force day")


def _check_prices(kind: OrderType, limit_price: Decimal | None, stop_price: Decimal | None) -> None:
    for name, price, needs, what in (
        ("limit_price", limit_price, _WITH_LIMIT, "limit"),
        ("stop_price", stop_price, _WITH_STOP, "stop"),
    ):
        if kind in needs and price is None:
            raise invalid(f"{what} price is required for {what} orders")
        if kind not in needs and price is not None:
            raise invalid(f"{what} price is only valid for {what} orders")
        # Equities trade in cents from $1.00 up, in hundredths of a cent below.
        if price is not None and _places(price) > (2 if price >= 1 else 4):
            raise unprocessable(
                f"invalid {name} {price}. sub-penny increment does not fulfill minimum "
                "pricing criteria"
            )


def _client_order_id(body: dict[str, Any]) -> str | None:
    value = _string(body, "client_order_id")
    if value is None:
        return None
    if len(value) > CLIENT_ORDER_ID_MAX:
        raise invalid(f"client_order_id must be no more than {CLIENT_ORDER_ID_MAX} characters")
    if not CLIENT_ORDER_ID.fullmatch(value):
        raise invalid("client_order_id may contain only letters, digits and '-'")
    return value


def _extended_hours(body: dict[str, Any], kind: OrderType, tif: TimeInForce) -> bool:
    value = body.get("extended_hours")
    if value is None or value is False:
        return False
    if value is not True:
        raise invalid("extended_hours must be a boolean")
    if kind is not OrderType.LIMIT or tif not in (TimeInForce.DAY, TimeInForce.GTC):
        raise unprocessable("extended hours orders must be limit orders, day or gtc")
    raise not_simulated("extended_hours")


def _position_intent(body: dict[str, Any]) -> str | None:
    value = _string(body, "position_intent")
    if value is not None and value not in POSITION_INTENTS:
        raise invalid(f"invalid position_intent: {value}")
    return value
