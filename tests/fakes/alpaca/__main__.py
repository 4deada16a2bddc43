"""Run a stand-in by hand: ``python -m tests.fakes.alpaca --port 8765 --price AAPL=187.20``.

Tests move the clock themselves; here it follows the wall clock (from ``--now``,
by default the real time), one fill round per ``--tick`` seconds, so orders
placed with curl fill as they would on paper trading.
"""

from __future__ import annotations

import argparse
import time
from datetime import UTC, datetime, timedelta
from decimal import Decimal

from tests.fakes.alpaca.server import AlpacaStandIn


def _price(text: str) -> tuple[str, Decimal]:
    symbol, _, price = text.partition("=")
    if not symbol or not price:
        raise argparse.ArgumentTypeError(f"expected SYMBOL=PRICE, got {text!r}")
    return symbol, Decimal(price)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--host", default="127.0.0.1")
    parser.add_argument("--port", type=int, default=8765)
    parser.add_argument("--key-id", default="PKSTANDIN0000000000")
    parser.add_argument("--secret", default="stand-in-secret")
    parser.add_argument("--cash", type=Decimal, default=Decimal("100000"))
    parser.add_argument("--price", type=_price, action="append", default=[], metavar="SYM=PRICE")
    parser.add_argument("--fill-plan", default="1", help="fractions, comma-separated: 0.4,0.6")
    parser.add_argument("--now", type=datetime.fromisoformat, default=datetime.now(UTC))
    parser.add_argument("--tick", type=float, default=1.0, help="seconds between fill rounds")
    args = parser.parse_args()
    server = AlpacaStandIn(
        key_id=args.key_id,
        secret=args.secret,
        cash=args.cash,
        prices=dict(args.price),
        now=args.now,
        fill_plan=args.fill_plan.split(","),
        host=args.host,
        port=args.port,
    )
    with server:
        print(f"Alpaca stand-in on http://{args.host}:{server.port}", flush=True)
        print(f"APCA-API-KEY-ID={args.key_id} APCA-API-SECRET-KEY={args.secret}", flush=True)
        try:
            while True:
                time.sleep(args.tick)
                server.clock.advance(timedelta(seconds=args.tick))
        except KeyboardInterrupt:
            pass


if __name__ == "__main__":
    main()
