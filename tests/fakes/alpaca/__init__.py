"""A strict stand-in for Alpaca's Trading API v2 (US equities, one paper cash account), for tests.

It honours Alpaca's published OpenAPI spec (``shared/reference/alpaca/trading-api.json``
beside the repository) for the endpoints a broker client uses: account, orders,
positions, FILL activities, clock and calendar. The broker client is written from
the same spec by someone else, so the stand-in refuses what Alpaca refuses (see
``order_request``, ``book``), answers in Alpaca's shapes (``wire``), and lets the
test control everything that is non-deterministic on the real service: the clock
(``server.clock.set/advance``, sessions from exchange-calendars' XNYS), prices
(``set_price``), how fills arrive (``fill_plan``, ``step``), the rate limit, and
the faults that lose an answer after the order is saved (``arm_fault``).

    with AlpacaStandIn(key_id="k", secret="s", cash=Decimal("100000")) as server:
        server.set_price("AAPL", Decimal("187.20"))
        ...  # point the client at server.base_url
        server.step()
        assert server.order_counts() == {"intent-1": 1}

Run ``python -m tests.fakes.alpaca --port 8765`` to poke at one by hand.
"""

from tests.fakes.alpaca.faults import FaultKind
from tests.fakes.alpaca.model import Fill, OrderStatus, StoredOrder
from tests.fakes.alpaca.server import AlpacaStandIn, ControlledClock, FiredFault, RecordedRequest

__all__ = [
    "AlpacaStandIn",
    "ControlledClock",
    "FaultKind",
    "FiredFault",
    "Fill",
    "OrderStatus",
    "RecordedRequest",
    "StoredOrder",
]
