"""The cash sweep: cash above the floor goes into the T-bill ETF, within every limit.

Run on a sized plan, the sweep is the one place the T-bill ETF is traded, in
whichever direction the plan needs:

1. cash below the floor (the buys counted on redeeming T-bills): sell just
   enough T-bill shares to restore it;
2. a T-bill position above the position limit: sell it down to the limit;
3. otherwise buy T-bills with the cash above the floor, as far as the position
   limit and a free slot allow.

It belongs to no sector, so it never crowds out a stock; an all-cash book ends
with the position limit in T-bills and the rest in cash. A sweep smaller than
``MIN_SWEEP`` of the book is skipped: the fee would eat what the T-bill earns.
"""

from __future__ import annotations

import math
from collections.abc import Mapping
from decimal import Decimal

from shared.data.contracts import TBILL_ETF, Sector
from shared.portfolio.constraints import (
    Ledger,
    Quotes,
    cost_rate,
    in_execution_order,
    planned,
)
from shared.portfolio.costs import affordable_shares, fill_price, shares_to_raise
from shared.portfolio.market import Quote
from shared.portfolio.models import Side, money
from shared.portfolio.orders import OrderPlan, Origin, PlannedOrder
from shared.portfolio.valuation import Valuation

MIN_SWEEP = Decimal("0.005")
"""Half a percent of the book: below it, a sweep trade is not worth its fee."""


def sweep_cash(
    plan: OrderPlan,
    valuation: Valuation,
    quotes: Quotes,
    sectors: Mapping[str, Sector | None],
) -> OrderPlan:
    """``plan`` with the T-bill order it needs, if any, and the book it then leaves."""
    ledger = Ledger(valuation, sectors)
    for done in plan.orders:
        ledger.apply(done)
    limits = plan.limits
    quote = quotes.get(TBILL_ETF)
    notes = list(plan.notes)
    order: PlannedOrder | None = None
    floor = money(Decimal(str(limits.min_cash_weight)) * ledger.total)
    held = ledger.held(TBILL_ETF)
    if not isinstance(quote, Quote):
        why = quote.reason if quote is not None else "not quoted"
        notes.append(f"no sweep: no close for {TBILL_ETF} as of the date ({why})")
    else:
        settle = _redeem if ledger.cash < floor else _invest
        order, note = settle(ledger, quote, floor, held, plan)
        if note:
            notes.append(note)
    orders = list(plan.orders)
    if order is not None:
        ledger.apply(order)
        orders.append(order)
    return plan.model_copy(
        update={
            "orders": in_execution_order(orders),
            "notes": notes,
            "projected": ledger.projection(),
        }
    )


def _redeem(
    ledger: Ledger, quote: Quote, floor: Decimal, held: int, plan: OrderPlan
) -> tuple[PlannedOrder | None, str | None]:
    """Sell the T-bill shares that bring cash back to the floor."""
    needed = floor - ledger.cash
    if not held:
        return None, f"cash is {needed:,.2f} below the floor and there are no T-bills to redeem"
    fill = fill_price(quote.price, Side.SELL, plan.costs)
    shares = shares_to_raise(needed, fill, plan.costs, held)
    rationale = f"redeem T-bills: cash needs {needed:,.2f} to stay at the floor ({floor:,.2f})"
    return _sweep_order(Side.SELL, shares, quote, plan, rationale), None


def _invest(
    ledger: Ledger, quote: Quote, floor: Decimal, held: int, plan: OrderPlan
) -> tuple[PlannedOrder | None, str | None]:
    """Buy T-bills with the excess cash, or trim them to the position limit."""
    limits, costs = plan.limits, plan.costs
    excess = ledger.cash - floor
    # A lower bound of the total once this order's own cost is paid.
    base = ledger.total - cost_rate(costs) * excess - costs.fee_min
    cap = money(Decimal(str(limits.max_position_weight)) * base)
    in_tbills = ledger.values.get(TBILL_ETF, Decimal(0))
    if in_tbills > cap:
        shares = min(held, math.ceil((in_tbills - cap) / quote.price))
        rationale = f"trim T-bills to the {limits.max_position_weight:.0%} position limit"
        return _sweep_order(Side.SELL, shares, quote, plan, rationale), None
    if not held and ledger.positions >= limits.max_positions:
        return None, f"no sweep: the book already holds {limits.max_positions} positions"
    fill = fill_price(quote.price, Side.BUY, costs)
    room = max(0, math.floor((cap - in_tbills) / quote.price))
    shares = min(affordable_shares(excess, fill, costs), room)
    if shares <= 0 or shares * quote.price < MIN_SWEEP * ledger.total:
        return None, (
            f"no sweep: {excess:,.2f} above the cash floor buys at most {shares} {TBILL_ETF} "
            f"shares, under {MIN_SWEEP:.1%} of the book"
        )
    bound = "the position limit" if shares == room else "the cash above the floor"
    rationale = (
        f"sweep {excess:,.2f} of cash above the {limits.min_cash_weight:.0%} floor into "
        f"T-bills, as far as {bound} allows"
    )
    return _sweep_order(Side.BUY, shares, quote, plan, rationale), None


def _sweep_order(
    side: Side, shares: int, quote: Quote, plan: OrderPlan, rationale: str
) -> PlannedOrder:
    return planned(
        TBILL_ETF,
        side,
        shares,
        shares,
        quote,
        plan.costs,
        rationale=rationale,
        sector=None,
        origin=Origin.SWEEP,
    )
