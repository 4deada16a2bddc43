"""The broker activities as plain functions, against the strict Alpaca stand-in.

No Temporal here: each call is one attempt of an activity, and the test decides when the
stand-in runs a fill round, so the moments between two looks at the broker are exact.
"""

from __future__ import annotations

from collections.abc import Iterator
from decimal import Decimal
from pathlib import Path

import pytest

from activities.broker import (
    BrokerActivities,
    CancelRequest,
    FollowRequest,
    OrderRef,
    PrepareRequest,
)
from shared.broker.models import IntentStatus
from shared.config import load_settings
from shared.portfolio.models import BrokerKind, Side
from tests.fakes.alpaca.server import AlpacaStandIn
from tests.planned_orders import planned_order

KEY, SECRET = "PKTESTACTIVITIES0000", "test-activities-secret"
PRICE = Decimal("190.00")


@pytest.fixture
def broker() -> Iterator[AlpacaStandIn]:
    """The stand-in, market open, filling each order in three rounds the test runs."""
    with AlpacaStandIn(
        key_id=KEY, secret=SECRET, prices={"AAPL": PRICE}, fill_plan=(0.3, 0.3, 0.4)
    ) as server:
        yield server


@pytest.fixture
def activities(broker: AlpacaStandIn, tmp_path: Path) -> BrokerActivities:
    settings = load_settings(
        _env_file=None,
        data_dir=tmp_path,
        database_url=f"sqlite:///{tmp_path / 'quantdesk.db'}",
        alpaca={"base_url": broker.base_url, "key_id": KEY, "secret_key": SECRET},
    )
    acts = BrokerActivities(settings)
    acts.books.create("book", Decimal(100_000), broker=BrokerKind.ALPACA)
    return acts


def _sent(acts: BrokerActivities, shares: int) -> str:
    """One buy of AAPL prepared and sent; its client order id."""
    order = planned_order(0, "AAPL", Side.BUY, shares, PRICE)
    prepared = acts.prepare_orders(
        PrepareRequest(portfolio="book", workflow_id="wf", orders=[order])
    )
    [intent] = prepared.intents
    acts.submit_order(OrderRef(client_order_id=intent.client_order_id))
    return intent.client_order_id


def test_a_fill_after_the_last_look_is_booked_when_the_order_is_canceled_before_the_next(
    activities: BrokerActivities, broker: AlpacaStandIn
) -> None:
    coid = _sent(activities, 10)
    broker.step()  # 3 shares
    first = activities.follow_orders(FollowRequest(portfolio="book", client_order_ids=[coid]))
    broker.step()  # 3 more, after that look

    activities.cancel_orders(CancelRequest(client_order_ids=[coid], reason="the close"))
    reported = [b.trade.key for b in first.booked]
    followed = activities.follow_orders(
        FollowRequest(portfolio="book", client_order_ids=[coid], reported=reported)
    )

    [intent] = followed.intents
    assert intent.status is IntentStatus.CANCELED and intent.filled_qty == 6
    assert [b.trade.shares for b in followed.booked] == [3]
    assert {h.symbol: h.shares for h in activities.books.holdings("book")} == {"AAPL": 6}
    assert activities.books.fill_ids("book") == {fill.id for fill in broker.fills}


def test_trades_a_lost_attempt_booked_are_reported_by_the_next_look(
    activities: BrokerActivities, broker: AlpacaStandIn
) -> None:
    coid = _sent(activities, 10)
    for _ in range(3):
        broker.step()  # filled
    look = FollowRequest(portfolio="book", client_order_ids=[coid])
    activities.follow_orders(look)  # booked every fill; its answer lost with its worker

    again = activities.follow_orders(look)

    assert sorted(b.trade.shares for b in again.booked) == [3, 3, 4]
    reported = [b.trade.key for b in again.booked]
    assert activities.follow_orders(look.model_copy(update={"reported": reported})).booked == []
