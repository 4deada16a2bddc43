"""The paper broker: fills a plan at the as-of closes, each order booked under its own key.

Orders go in the plan's execution order (sells, then buys). Order ``i`` of a
run is booked under ``{run key}/order-{i}``, so a retried activity, a re-run
of the same workflow id or a second worker picking up after a dead one books
nothing twice: orders already booked come back as they were, the rest are
filled. A symbol with no close as of the date is refused with the reason, and
so is a fill the book can no longer pay for; neither stops the others.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from datetime import datetime

from shared.portfolio.costs import Costs, fee, fill_price
from shared.portfolio.market import MarketReader, Quote
from shared.portfolio.models import TradeRequest, from_fields, money
from shared.portfolio.orders import ExecutedOrder, Execution, PlannedOrder, RejectedOrder
from shared.portfolio.store import PortfolioStore, TradeRefused


def trade_key(run_key: str, index: int) -> str:
    """The idempotency key of a run's order ``index``."""
    return f"{run_key}/order-{index}"


class PaperBroker:
    """Books fills in a ``PortfolioStore`` at closes read as of one time."""

    def __init__(self, store: PortfolioStore, market: MarketReader) -> None:
        self.store = store
        self.market = market

    def execute(
        self,
        portfolio: str,
        orders: Sequence[PlannedOrder],
        costs: Costs,
        *,
        run_key: str,
        as_of: datetime,
        on_order: Callable[[int], None] | None = None,
    ) -> Execution:
        """Fill ``orders`` in their order; ``on_order(i)`` runs after each (a heartbeat)."""
        executed: list[ExecutedOrder] = []
        rejected: list[RejectedOrder] = []
        for order in sorted(orders, key=lambda o: o.index):
            outcome = self._fill(portfolio, order, costs, run_key, as_of)
            if isinstance(outcome, RejectedOrder):
                rejected.append(outcome)
            else:
                executed.append(outcome)
            if on_order is not None:
                on_order(order.index)
        return Execution(executed=executed, rejected=rejected, as_of=as_of)

    def _fill(
        self, portfolio: str, order: PlannedOrder, costs: Costs, run_key: str, as_of: datetime
    ) -> ExecutedOrder | RejectedOrder:
        def refuse(reason: str) -> RejectedOrder:
            return from_fields(RejectedOrder, order, reason=reason)

        key = trade_key(run_key, order.index)
        booked = self.store.trade(key)
        if booked is None:
            quote = self.market.quote(order.symbol)
            if not isinstance(quote, Quote):
                return refuse(f"no close as of the date ({quote.reason}); not filled at a guess")
            fill = fill_price(quote.price, order.side, costs)
            fees = fee(money(fill * order.shares), costs)
            request = from_fields(
                TradeRequest,
                order,
                key=key,
                price=fill,
                fees=fees,
                executed_at=as_of,
                source=run_key,
            )
            try:
                outcome = self.store.execute_trade(portfolio, request)
            except TradeRefused as error:
                return refuse(str(error))
            return ExecutedOrder(order=order, trade=outcome.trade, new=outcome.new)
        return ExecutedOrder(order=order, trade=booked, new=False)
