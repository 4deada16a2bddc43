"""The stand-in's state as Alpaca's JSON: the spec's Order, Position, Account, activity and
clock/calendar objects, numbers as strings and times as RFC 3339, as Alpaca sends them."""

from __future__ import annotations

from datetime import UTC, datetime
from decimal import Decimal
from typing import Any

from tests.fakes.alpaca.book import Brokerage, decimal_text
from tests.fakes.alpaca.model import Fill, Position, Side, StoredOrder, asset_id
from tests.fakes.alpaca.sessions import NEW_YORK, NyseCalendar, Session

ACCOUNT_ID = "5f3c0b3e-6a1d-4b7e-9a52-1c0d2a7e4f10"
ACCOUNT_NUMBER = "PA3STANDIN1"
EXCHANGE = "NASDAQ"  # every symbol is listed on one exchange: the stand-in knows no listings


def rfc3339(when: datetime) -> str:
    """UTC with microseconds and a Z, the form of Alpaca's order and activity times."""
    return when.astimezone(UTC).strftime("%Y-%m-%dT%H:%M:%S.%fZ")


def _maybe_time(when: datetime | None) -> str | None:
    return rfc3339(when) if when is not None else None


def _maybe_number(value: Decimal | None) -> str | None:
    return decimal_text(value) if value is not None else None


def order_json(order: StoredOrder) -> dict[str, Any]:
    """The spec's Order for a simple US-equity order."""
    request = order.request
    return {
        "id": order.id,
        "client_order_id": order.client_order_id,
        "created_at": rfc3339(order.created_at),
        "updated_at": rfc3339(order.updated_at),
        "submitted_at": rfc3339(order.created_at),
        "filled_at": _maybe_time(order.filled_at),
        "expired_at": _maybe_time(order.expired_at),
        "canceled_at": _maybe_time(order.canceled_at),
        "failed_at": None,
        "replaced_at": None,
        "replaced_by": None,
        "replaces": None,
        "asset_id": asset_id(order.symbol),
        "symbol": order.symbol,
        "asset_class": "us_equity",
        "notional": _maybe_number(request.notional),
        "qty": _maybe_number(request.qty),
        "filled_qty": decimal_text(order.filled_qty),
        "filled_avg_price": _maybe_number(order.filled_avg_price),
        "order_class": "",
        "order_type": str(request.type),
        "type": str(request.type),
        "side": str(request.side),
        "position_intent": request.position_intent
        or ("buy_to_open" if request.side is Side.BUY else "sell_to_close"),
        "time_in_force": str(request.time_in_force),
        "limit_price": _maybe_number(request.limit_price),
        "stop_price": _maybe_number(request.stop_price),
        "status": str(order.status),
        "extended_hours": request.extended_hours,
        "legs": None,
        "trail_percent": None,
        "trail_price": None,
        "hwm": None,
    }


def position_json(book: Brokerage, position: Position) -> dict[str, Any]:
    """The spec's Position for a long US-equity holding."""
    price = book.prices[position.symbol]
    lastday_price = book.last_close[position.symbol]
    market_value = position.qty * price
    unrealized = market_value - position.cost_basis
    intraday = (price - lastday_price) * position.qty
    lastday_value = lastday_price * position.qty
    return {
        "asset_id": asset_id(position.symbol),
        "symbol": position.symbol,
        "exchange": EXCHANGE,
        "asset_class": "us_equity",
        "asset_marginable": False,
        "qty": decimal_text(position.qty),
        "qty_available": decimal_text(book.qty_available(position.symbol)),
        "avg_entry_price": decimal_text(position.avg_entry_price),
        "side": "long",
        "market_value": decimal_text(market_value),
        "cost_basis": decimal_text(position.cost_basis),
        "unrealized_pl": decimal_text(unrealized),
        "unrealized_plpc": decimal_text(unrealized / position.cost_basis),
        "unrealized_intraday_pl": decimal_text(intraday),
        "unrealized_intraday_plpc": decimal_text(intraday / lastday_value),
        "current_price": decimal_text(price),
        "lastday_price": decimal_text(lastday_price),
        "change_today": decimal_text((price - lastday_price) / lastday_price),
    }


def account_json(book: Brokerage) -> dict[str, Any]:
    """The spec's Account for an active cash account (multiplier 1: buying power is cash)."""
    buying_power = decimal_text(book.buying_power())
    equity = decimal_text(book.equity())
    zero = "0"
    return {
        "id": ACCOUNT_ID,
        "account_number": ACCOUNT_NUMBER,
        "status": "ACTIVE",
        "currency": "USD",
        "cash": decimal_text(book.cash),
        "buying_power": buying_power,
        "regt_buying_power": buying_power,
        "non_marginable_buying_power": buying_power,
        "daytrading_buying_power": zero,
        "options_buying_power": zero,
        "equity": equity,
        "portfolio_value": equity,
        "last_equity": decimal_text(book.last_equity),
        "long_market_value": decimal_text(book.long_market_value()),
        "short_market_value": zero,
        "initial_margin": zero,
        "maintenance_margin": zero,
        "last_maintenance_margin": zero,
        "sma": zero,
        "multiplier": "1",
        "accrued_fees": zero,
        "pending_reg_taf_fees": zero,
        "pending_transfer_in": zero,
        "pending_transfer_out": zero,
        "intraday_adjustments": zero,
        "daytrade_count": 0,
        "options_approved_level": 0,
        "options_trading_level": 0,
        "pattern_day_trader": False,
        "shorting_enabled": False,
        "trading_blocked": False,
        "transfers_blocked": False,
        "account_blocked": False,
        "trade_suspended_by_user": False,
        "created_at": rfc3339(book.opened_at),
        "balance_asof": book.now.astimezone(NEW_YORK).date().isoformat(),
    }


def fill_json(fill: Fill) -> dict[str, Any]:
    """The spec's TradingActivities entry for one execution."""
    return {
        "id": fill.id,
        "activity_type": "FILL",
        "transaction_time": rfc3339(fill.transaction_time),
        "type": fill.type,
        "price": decimal_text(fill.price),
        "qty": decimal_text(fill.qty),
        "side": str(fill.side),
        "symbol": fill.symbol,
        "leaves_qty": decimal_text(fill.leaves_qty),
        "order_id": fill.order_id,
        "cum_qty": decimal_text(fill.cum_qty),
        "order_status": str(fill.order_status),
    }


def _new_york(when: datetime) -> str:
    """New York time with its offset, the form of the legacy clock (``...T09:30:00-04:00``)."""
    return when.astimezone(NEW_YORK).isoformat(timespec="seconds")


def clock_json(calendar: NyseCalendar, now: datetime) -> dict[str, Any]:
    """The spec's legacy_clock (GET /v2/clock)."""
    return {
        "timestamp": _new_york(now),
        "is_open": calendar.open_at(now) is not None,
        "next_open": _new_york(calendar.next_open(now)),
        "next_close": _new_york(calendar.current_or_next(now).close),
    }


def calendar_day_json(calendar: NyseCalendar, session: Session) -> dict[str, Any]:
    """The spec's legacy_calendar_day: core hours HH:MM, extended hours HHMM, T+1 settlement."""
    return {
        "date": session.day.isoformat(),
        "open": f"{session.open.astimezone(NEW_YORK):%H:%M}",
        "close": f"{session.close.astimezone(NEW_YORK):%H:%M}",
        "session_open": "0400",
        "session_close": "2000",
        "settlement_date": calendar.settlement_day(session).isoformat(),
    }
