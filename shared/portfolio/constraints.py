"""Size the PM's orders to the limits: scale each one down until it fits, and say why.

Sells come first (they free cash and slots), clamped to the shares held. Each
buy, in the PM's order, gets the most shares that keep every limit:

- a new symbol needs a free slot (``max_positions``, counting the T-bill ETF);
- the position, at the as-of close, stays within ``max_position_weight``;
- its sector bucket (``limits.sector_bucket``) within ``max_sector_weight``;
- cash after the fill, fees and slippage included, stays above the floor:
  ``max(min_cash_weight, the PM's cash reserve)`` of the book, counting the
  T-bill ETF as cash the sweep can redeem.

Weights are checked against a lower bound of the final total (today's total
less every cost the remaining fills could add) and the cash floor against an
upper bound (the total after the sells), so a plan that fits on paper still
fits once filled. The T-bill ETF itself is only ever traded by the cash sweep
(``shared.portfolio.sweep``), which settles any redemption the buys rely on.
"""

from __future__ import annotations

import math
from collections.abc import Iterable, Mapping, Sequence
from decimal import Decimal

from shared.data.contracts import TBILL_ETF, Sector
from shared.portfolio.costs import BPS, Costs, buy_cost, fee, fill_price, sell_proceeds
from shared.portfolio.costs import affordable_shares as affordable
from shared.portfolio.limits import CASH_EQUIVALENTS, Limits, sector_bucket
from shared.portfolio.market import Quote, QuoteMissing
from shared.portfolio.models import Side, money, price
from shared.portfolio.orders import (
    BuyOrder,
    OrderPlan,
    Origin,
    PlannedOrder,
    Projection,
    RejectedOrder,
    SellOrder,
)
from shared.portfolio.valuation import Valuation

STOP_BAND = (Decimal("0.85"), Decimal("0.95"))
"""A stop loss sits 5-15% below the close."""
TAKE_BAND = (Decimal("1.10"), Decimal("1.30"))
"""A take profit sits 10-30% above the close."""

Quotes = Mapping[str, Quote | QuoteMissing]


class Ledger:
    """The book as the planned orders move it, every holding at its as-of close."""

    def __init__(self, valuation: Valuation, sectors: Mapping[str, Sector | None]) -> None:
        self.cash = valuation.cash
        self.shares = {p.symbol: p.shares for p in valuation.positions}
        self.values = {p.symbol: p.value for p in valuation.positions}
        self.sectors: dict[str, Sector | None] = {p.symbol: p.sector for p in valuation.positions}
        self.sectors.update({s: v for s, v in sectors.items() if s not in self.sectors})

    @property
    def total(self) -> Decimal:
        """Cash plus the holdings at their closes."""
        return self.cash + sum(self.values.values(), Decimal(0))

    @property
    def positions(self) -> int:
        """Holdings with shares."""
        return len(self.shares)

    def held(self, symbol: str) -> int:
        """Shares of ``symbol`` held after the orders so far."""
        return self.shares.get(symbol, 0)

    def bucket_value(self, bucket: str | None) -> Decimal:
        """The value of every holding in ``bucket``."""
        return sum(
            (v for s, v in self.values.items() if sector_bucket(s, self.sectors.get(s)) == bucket),
            Decimal(0),
        )

    def apply(self, order: PlannedOrder) -> None:
        """Move cash and the holding as ``order`` would when filled."""
        sign = 1 if order.side is Side.BUY else -1
        shares = self.held(order.symbol) + sign * order.shares
        if shares:
            self.shares[order.symbol] = shares
            self.values[order.symbol] = money(order.close * shares)
        else:
            self.shares.pop(order.symbol, None)
            self.values.pop(order.symbol, None)
        self.cash += order.est_cash_change

    def projection(self) -> Projection:
        """The book as it stands in the ledger."""
        total = self.total
        buckets: dict[str, Decimal] = {}
        for symbol, value in self.values.items():
            bucket = sector_bucket(symbol, self.sectors.get(symbol)) or "cash equivalent"
            buckets[bucket] = buckets.get(bucket, Decimal(0)) + value
        return Projection(
            cash=self.cash,
            total_value=total,
            cash_weight=_weight(self.cash, total),
            positions=self.positions,
            weights={s: _weight(v, total) for s, v in sorted(self.values.items())},
            sector_weights={b: _weight(v, total) for b, v in sorted(buckets.items())},
        )


def _weight(part: Decimal, total: Decimal) -> float:
    return float(part / total) if total else 0.0


def cost_rate(costs: Costs) -> Decimal:
    """Slippage plus fee, per unit of value traded."""
    return (Decimal(str(costs.slippage_bps)) + Decimal(str(costs.fee_bps))) / BPS


def planned(
    symbol: str,
    side: Side,
    shares: int,
    requested: int,
    quote: Quote,
    costs: Costs,
    *,
    rationale: str,
    sector: Sector | None,
    origin: Origin = Origin.PM,
    adjustments: Sequence[str] = (),
    levels: tuple[Decimal | None, Decimal | None, Decimal | None] = (None, None, None),
) -> PlannedOrder:
    """An order for ``shares`` priced as the broker will fill it."""
    fill = fill_price(quote.price, side, costs)
    value = money(fill * shares)
    cash = (
        -buy_cost(shares, fill, costs) if side is Side.BUY else sell_proceeds(shares, fill, costs)
    )
    stop, take, target = levels
    return PlannedOrder(
        symbol=symbol,
        side=side,
        shares=shares,
        requested_shares=requested,
        close=quote.price,
        fill_price=fill,
        est_value=value,
        est_fees=fee(value, costs),
        est_cash_change=cash,
        sector=sector,
        origin=origin,
        rationale=rationale,
        stop_loss=stop,
        take_profit=take,
        price_target=target,
        adjustments=list(adjustments),
    )


def in_execution_order(orders: Iterable[PlannedOrder]) -> list[PlannedOrder]:
    """Sells before buys (the PM's, then the sweep's, each in the order given), indexed."""
    rank = {
        (Side.SELL, Origin.PM): 0,
        (Side.SELL, Origin.SWEEP): 1,
        (Side.BUY, Origin.PM): 2,
        (Side.BUY, Origin.SWEEP): 3,
    }
    ordered = sorted(orders, key=lambda o: rank[(o.side, o.origin)])
    return [order.model_copy(update={"index": i}) for i, order in enumerate(ordered)]


def breaches(valuation: Valuation, limits: Limits) -> list[str]:
    """The limits the book breaks before any trade: stated, not forced out by a sale."""
    found = []
    for p in valuation.positions:
        if not p.priced:
            found.append(f"{p.symbol} {p.price_note}; it is not traded in this plan")
        if p.weight > limits.max_position_weight:
            found.append(
                f"{p.symbol} is {p.weight:.1%} of the book, above the "
                f"{limits.max_position_weight:.0%} position limit"
            )
    ledger = Ledger(valuation, {})
    total = valuation.total_value
    for bucket in {sector_bucket(p.symbol, p.sector) for p in valuation.positions} - {None}:
        weight = _weight(ledger.bucket_value(bucket), total)
        if weight > limits.max_sector_weight:
            found.append(
                f"{bucket} is {weight:.1%} of the book, above the "
                f"{limits.max_sector_weight:.0%} sector limit"
            )
    if len(valuation.positions) > limits.max_positions:
        found.append(
            f"the book holds {len(valuation.positions)} positions, above the limit of "
            f"{limits.max_positions}"
        )
    if valuation.cash_weight < limits.min_cash_weight:
        found.append(
            f"cash is {valuation.cash_weight:.1%} of the book, below the "
            f"{limits.min_cash_weight:.0%} floor: buys wait for sells to raise it"
        )
    return found


def _no_close(quote: Quote | QuoteMissing | None, symbol: str) -> str | None:
    if isinstance(quote, Quote):
        return None
    why = quote.reason if quote is not None else "not a holding or candidate of this run"
    return f"no close for {symbol} as of the date ({why}); an order never trades at a guess"


def size_orders(
    valuation: Valuation,
    sells: Sequence[SellOrder],
    buys: Sequence[BuyOrder],
    quotes: Quotes,
    sectors: Mapping[str, Sector | None],
    limits: Limits,
    costs: Costs,
    *,
    cash_reserve: float = 0.0,
) -> OrderPlan:
    """The PM's orders sized to ``limits``; refused orders come back with their reasons."""
    ledger = Ledger(valuation, sectors)
    orders: list[PlannedOrder] = []
    rejected: list[RejectedOrder] = []
    for sell in sells:
        order = _sized_sell(sell, ledger, quotes, costs)
        if isinstance(order, RejectedOrder):
            rejected.append(order)
        else:
            ledger.apply(order)
            orders.append(order)
    after_sells = ledger.total
    redeemable = _redeemable(ledger, quotes, costs)
    floor_weight = max(limits.min_cash_weight, cash_reserve)
    floor = money(Decimal(str(floor_weight)) * after_sells)
    # Everything left to trade (the buys, then the sweep) can cost at most this much.
    pool = max(ledger.cash, Decimal(0)) + redeemable
    cap_base = after_sells - 2 * cost_rate(costs) * pool - costs.fee_min * (len(buys) + 2)
    sold = {o.symbol for o in orders}
    for buy in buys:
        order = _sized_buy(buy, ledger, quotes, costs, limits, cap_base, (floor, redeemable), sold)
        if isinstance(order, RejectedOrder):
            rejected.append(order)
        else:
            ledger.apply(order)
            orders.append(order)
    return OrderPlan(
        orders=in_execution_order(orders),
        rejected=rejected,
        notes=breaches(valuation, limits),
        projected=ledger.projection(),
        limits=limits,
        costs=costs,
        cash_floor=floor,
    )


def _redeemable(ledger: Ledger, quotes: Quotes, costs: Costs) -> Decimal:
    """What selling every T-bill share would bring: cash the buys may count on."""
    quote = quotes.get(TBILL_ETF)
    held = ledger.held(TBILL_ETF)
    if not held or not isinstance(quote, Quote):
        return Decimal(0)
    return sell_proceeds(held, fill_price(quote.price, Side.SELL, costs), costs)


def _sized_sell(
    sell: SellOrder, ledger: Ledger, quotes: Quotes, costs: Costs
) -> PlannedOrder | RejectedOrder:
    symbol = sell.ticker

    def refuse(reason: str) -> RejectedOrder:
        return RejectedOrder(symbol=symbol, side=Side.SELL, shares=sell.shares, reason=reason)

    if symbol in CASH_EQUIVALENTS:
        return refuse(f"{symbol} is the cash sweep's: the PM does not trade it")
    held = ledger.held(symbol)
    if not held:
        return refuse(f"the book holds no {symbol}")
    quote = quotes.get(symbol)
    missing = _no_close(quote, symbol)
    if missing or not isinstance(quote, Quote):
        return refuse(missing or "")
    shares = min(sell.shares, held)
    notes = (
        [f"asked to sell {sell.shares} shares, the book holds {held}: selling {held}"]
        if shares < sell.shares
        else []
    )
    return planned(
        symbol,
        Side.SELL,
        shares,
        sell.shares,
        quote,
        costs,
        rationale=sell.rationale,
        sector=ledger.sectors.get(symbol),
        adjustments=notes,
    )


def _sized_buy(
    buy: BuyOrder,
    ledger: Ledger,
    quotes: Quotes,
    costs: Costs,
    limits: Limits,
    cap_base: Decimal,
    funding: tuple[Decimal, Decimal],
    sold: set[str],
) -> PlannedOrder | RejectedOrder:
    """The buy at the most shares every limit allows, or refused with the limits that bind.

    ``funding`` is the cash floor to keep and what the T-bills held would redeem."""
    symbol = buy.ticker

    def refuse(reason: str) -> RejectedOrder:
        return RejectedOrder(symbol=symbol, side=Side.BUY, shares=buy.shares, reason=reason)

    if symbol in CASH_EQUIVALENTS:
        return refuse(f"{symbol} is the cash sweep's: the PM does not trade it")
    if symbol in sold:
        return refuse(f"{symbol} is also sold in this plan")
    quote = quotes.get(symbol)
    missing = _no_close(quote, symbol)
    if missing or not isinstance(quote, Quote):
        return refuse(missing or "")
    if not ledger.held(symbol) and ledger.positions >= limits.max_positions:
        return refuse(
            f"a new position would make {ledger.positions + 1}, above the limit of "
            f"{limits.max_positions}"
        )
    close, sector = quote.price, ledger.sectors.get(symbol)
    bucket = sector_bucket(symbol, sector)
    fill = fill_price(close, Side.BUY, costs)
    position_cap = money(Decimal(str(limits.max_position_weight)) * cap_base)
    sector_cap = money(Decimal(str(limits.max_sector_weight)) * cap_base)
    in_position, in_sector = ledger.values.get(symbol, Decimal(0)), ledger.bucket_value(bucket)
    floor, redeemable = funding
    budget = ledger.cash + redeemable - floor
    limits_met = [
        (
            _whole(position_cap - in_position, close),
            f"the {limits.max_position_weight:.0%} position limit ({position_cap:,.2f}) with "
            f"{in_position:,.2f} already held",
        ),
        (
            _whole(sector_cap - in_sector, close),
            f"the {limits.max_sector_weight:.0%} limit on {bucket} ({sector_cap:,.2f}) with "
            f"{in_sector:,.2f} already in it",
        ),
        (
            affordable(budget, fill, costs),
            f"the cash floor ({floor:,.2f} kept uninvested): {max(budget, Decimal(0)):,.2f} "
            f"to spend at {fill} a share with fees",
        ),
    ]
    shares = min([buy.shares, *(allowed for allowed, _ in limits_met)])
    binding = [why for allowed, why in limits_met if allowed < buy.shares and allowed == shares]
    if shares <= 0:
        return refuse("no share fits " + " and ".join(binding))
    notes = [f"scaled from {buy.shares} to {shares} shares by {why}" for why in binding]
    stop, stop_note = _within(buy.stop_loss, close, STOP_BAND, "stop loss", "below")
    take, take_note = _within(buy.take_profit, close, TAKE_BAND, "take profit", "above")
    target = price(buy.price_target) if buy.price_target else None
    return planned(
        symbol,
        Side.BUY,
        shares,
        buy.shares,
        quote,
        costs,
        rationale=buy.rationale,
        sector=sector,
        adjustments=notes + [n for n in (stop_note, take_note) if n],
        levels=(stop, take, target),
    )


def _whole(room: Decimal, close: Decimal) -> int:
    """Whole shares at ``close`` that fit in ``room`` (none if it is negative)."""
    return max(0, math.floor(room / close))


def _within(
    level: float, close: Decimal, band: tuple[Decimal, Decimal], name: str, side: str
) -> tuple[Decimal, str | None]:
    """``level`` moved into ``band`` × close when outside it, with the note that says so."""
    low, high = (price(close * edge) for edge in band)
    asked = price(level)
    kept = min(max(asked, low), high)
    if kept == asked:
        return asked, None
    lo_pct, hi_pct = (abs(1 - edge) for edge in band)
    span = f"{min(lo_pct, hi_pct):.0%}-{max(lo_pct, hi_pct):.0%} {side} the close {close}"
    return kept, f"{name} {asked} moved to {kept}: it must sit {span}"
