"""Sizing the PM's orders to the limits, the cash sweep, prioritisation and the paper broker."""

from __future__ import annotations

from collections.abc import Sequence
from datetime import UTC, datetime
from decimal import Decimal
from pathlib import Path

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from shared.agents.scan.schemas import Conviction, StockToInvestigate, ThesisAngle
from shared.data.contracts import TBILL_ETF, Sector
from shared.data.router import DEFAULT_ROUTES, DataRouter
from shared.data.sim import SimVendor
from shared.portfolio.broker import PaperBroker, trade_key
from shared.portfolio.constraints import Ledger, size_orders
from shared.portfolio.costs import Costs
from shared.portfolio.limits import Limits, sector_bucket
from shared.portfolio.market import MarketReader, Quote, QuoteMissing
from shared.portfolio.models import Holding, Portfolio, Side
from shared.portfolio.orders import BuyOrder, OrderPlan, Origin, SellOrder
from shared.portfolio.prioritize import LessonMatch, prioritize
from shared.portfolio.store import PortfolioStore
from shared.portfolio.sweep import sweep_cash
from shared.portfolio.valuation import Valuation, value_book

AS_OF = datetime(2012, 6, 1, tzinfo=UTC)
LIMITS = Limits()
COSTS = Costs(fee_bps=1, slippage_bps=5)
IT, ENERGY, UTIL = Sector.INFORMATION_TECHNOLOGY, Sector.ENERGY, Sector.UTILITIES


def _quote(symbol: str, price: float) -> Quote:
    return Quote(symbol=symbol, price=Decimal(str(price)), bar_time=AS_OF, vendor="t")


QUOTES: dict[str, Quote | QuoteMissing] = {
    **{s: _quote(s, 50) for s in ("IT1", "IT2", "IT3", "EN1", "EN2", "UT1", "UT2", "HC1", "NEW")},
    TBILL_ETF: _quote(TBILL_ETF, 100),
    "GONE": QuoteMissing(symbol="GONE", reason="delisted"),
}
SECTORS: dict[str, Sector | None] = {
    "IT1": IT, "IT2": IT, "IT3": IT, "EN1": ENERGY, "EN2": ENERGY, "UT1": UTIL, "UT2": UTIL,
    "HC1": Sector.HEALTH_CARE, "NEW": None, TBILL_ETF: None, "GONE": ENERGY,
}  # fmt: skip


def _book(cash: float, held: dict[str, int]) -> Valuation:
    book = Portfolio(
        name="t", initial_cash=Decimal(100_000), cash=Decimal(str(cash)), created_at=AS_OF
    )
    holdings = [
        Holding(
            symbol=s, shares=n, avg_cost=Decimal(50), sector=SECTORS.get(s), opened_at=AS_OF,
            updated_at=AS_OF,
        )
        for s, n in held.items()
    ]  # fmt: skip
    return value_book(book, holdings, QUOTES, AS_OF)


def _buy(ticker: str, shares: int) -> BuyOrder:
    return BuyOrder(
        ticker=ticker, shares=shares, stop_loss=45, take_profit=60, rationale=f"buy {ticker}"
    )


def _plan(
    book: Valuation,
    sells: Sequence[SellOrder] = (),
    buys: Sequence[BuyOrder] = (),
    cash_reserve: float = 0.0,
) -> OrderPlan:
    sized = size_orders(
        book, sells, buys, QUOTES, SECTORS, LIMITS, COSTS, cash_reserve=cash_reserve
    )
    return sweep_cash(sized, book, QUOTES, SECTORS)


def _final(book: Valuation, plan: OrderPlan) -> Ledger:
    ledger = Ledger(book, SECTORS)
    for order in plan.orders:
        ledger.apply(order)
    return ledger


def _assert_within_limits(ledger: Ledger) -> None:
    total = ledger.total
    assert ledger.cash >= Decimal(str(LIMITS.min_cash_weight)) * total
    assert ledger.positions <= LIMITS.max_positions
    for symbol, value in ledger.values.items():
        assert value <= Decimal(str(LIMITS.max_position_weight)) * total, symbol
    for bucket in {sector_bucket(s, ledger.sectors.get(s)) for s in ledger.values} - {None}:
        assert ledger.bucket_value(bucket) <= Decimal(str(LIMITS.max_sector_weight)) * total


def test_a_buy_above_the_position_limit_is_scaled_to_it_and_explained() -> None:
    plan = _plan(_book(100_000, {}), buys=[_buy("IT1", 1000)])

    [order] = [o for o in plan.orders if o.origin is Origin.PM]
    # 15% of 100,000 less a cost bound is just under 15,000: 299 shares at 50.
    assert order.shares == 299 and order.requested_shares == 1000
    assert "scaled from 1000 to 299 shares by the 15% position limit" in order.adjustments[0]
    assert order.fill_price == Decimal("50.025")  # 5 bps of slippage
    _assert_within_limits(_final(_book(100_000, {}), plan))


def test_the_sector_limit_binds_across_holdings_of_the_sector() -> None:
    book = _book(71_000, {"IT1": 290, "IT2": 290})  # 29% in IT already
    plan = _plan(book, buys=[_buy("IT3", 200)])

    [order] = [o for o in plan.orders if o.symbol == "IT3"]
    assert order.shares == 119  # 35% of 100,000 less a cost bound, less the 29,000 held
    assert "35% limit on Information Technology" in order.adjustments[0]
    _assert_within_limits(_final(book, plan))


def test_the_cash_floor_binds_when_the_book_is_nearly_invested() -> None:
    held = dict.fromkeys(("IT1", "EN1", "EN2", "UT1", "UT2", "HC1", "NEW"), 260)
    book = _book(9_000, held)  # 7 x 13,000 in stocks, 9% cash
    plan = _plan(book, buys=[_buy("IT3", 100)])

    [order] = [o for o in plan.orders if o.symbol == "IT3"]
    # 9,000 less the 5,000 floor buys 79 shares at 50.025 with fees.
    assert order.shares == 79
    assert "the cash floor" in " ".join(order.adjustments)
    _assert_within_limits(_final(book, plan))


def test_a_sixteenth_position_is_refused_but_adding_to_one_is_not() -> None:
    held = {f"S{i:02d}": 1 for i in range(15)}
    quotes = QUOTES | {s: _quote(s, 50) for s in held}
    book = value_book(
        Portfolio(name="t", initial_cash=Decimal(100_000), cash=Decimal(99_250), created_at=AS_OF),
        [
            Holding(symbol=s, shares=1, avg_cost=Decimal(50), opened_at=AS_OF, updated_at=AS_OF)
            for s in held
        ],
        quotes,
        AS_OF,
    )
    sized = size_orders(
        book, [], [_buy("IT1", 10), _buy("S03", 10)], quotes, SECTORS, LIMITS, COSTS
    )

    assert [o.symbol for o in sized.orders] == ["S03"]
    [refused] = sized.rejected
    assert refused.symbol == "IT1" and "above the limit of 15" in refused.reason
    swept = sweep_cash(sized, book, quotes, SECTORS)
    assert "no sweep: the book already holds 15 positions" in swept.notes


def test_orders_without_a_close_or_a_holding_are_refused_with_the_reason() -> None:
    book = _book(50_000, {"IT1": 100})
    plan = _plan(
        book,
        sells=[
            SellOrder(ticker="EN1", shares=5, rationale="x"),
            SellOrder(ticker="IT1", shares=500, rationale="exit"),
        ],
        buys=[_buy("GONE", 5), _buy(TBILL_ETF, 5)],
    )

    reasons = {r.symbol: r.reason for r in plan.rejected}
    assert reasons["EN1"] == "the book holds no EN1"
    assert "no close for GONE as of the date (delisted)" in reasons["GONE"]
    assert "cash sweep's" in reasons[TBILL_ETF]
    [sell] = [o for o in plan.orders if o.symbol == "IT1"]
    assert sell.shares == 100 and "the book holds 100: selling 100" in sell.adjustments[0]


def test_stops_and_targets_are_moved_into_their_bands() -> None:
    order = BuyOrder(ticker="IT1", shares=10, stop_loss=30, take_profit=51, rationale="x")
    plan = _plan(_book(100_000, {}), buys=[order])

    [bought] = [o for o in plan.orders if o.symbol == "IT1"]
    assert bought.stop_loss == Decimal("42.5") and bought.take_profit == Decimal("55")
    assert any("stop loss 30.000000 moved to 42.500000" in note for note in bought.adjustments)


def test_sells_come_first_then_buys_each_with_its_index() -> None:
    book = _book(20_000, {"IT1": 100, "EN1": 100})
    plan = _plan(
        book, sells=[SellOrder(ticker="EN1", shares=100, rationale="exit")], buys=[_buy("UT1", 50)]
    )

    assert [(o.index, o.side, o.symbol) for o in plan.orders][:2] == [
        (0, Side.SELL, "EN1"),
        (1, Side.BUY, "UT1"),
    ]


def test_an_all_cash_book_sweeps_into_t_bills_up_to_the_position_limit() -> None:
    book = _book(100_000, {})
    plan = _plan(book)

    [sweep] = plan.orders
    assert sweep.symbol == TBILL_ETF and sweep.origin is Origin.SWEEP and sweep.side is Side.BUY
    assert sweep.shares == 149  # 15% of ~99,998 at 100
    assert "as far as the position limit allows" in sweep.rationale
    final = _final(book, plan)
    _assert_within_limits(final)
    assert plan.projected.cash_weight > 0.8


def test_a_full_book_sweeps_only_the_cash_above_the_floor() -> None:
    held = dict.fromkeys(("IT1", "EN1", "EN2", "UT1", "UT2", "HC1", "NEW"), 240)
    book = _book(16_000, held)  # 84,000 invested, 16% cash
    plan = _plan(book)

    [sweep] = plan.orders
    assert sweep.side is Side.BUY and sweep.symbol == TBILL_ETF
    final = _final(book, plan)
    _assert_within_limits(final)
    # Only the floor stays in cash: within one T-bill share of 5%.
    assert final.cash - Decimal("0.05") * final.total < 101


def test_buys_are_funded_by_redeeming_t_bills() -> None:
    held = dict.fromkeys(("IT1", "EN1", "UT1", "UT2", "HC1", "NEW"), 260) | {TBILL_ETF: 140}
    book = _book(6_000, held)  # 78,000 in stocks, 14,000 in T-bills, 6,000 cash
    plan = _plan(book, buys=[_buy("EN2", 120)])

    sides = [(o.symbol, o.side, o.origin) for o in plan.orders]
    assert sides == [
        (TBILL_ETF, Side.SELL, Origin.SWEEP),
        ("EN2", Side.BUY, Origin.PM),
    ]
    assert plan.orders[1].shares == 120
    _assert_within_limits(_final(book, plan))


def test_the_pms_cash_reserve_is_kept_uninvested() -> None:
    buys = [_buy(s, 300) for s in ("IT1", "EN1", "UT1")]
    plan = _plan(_book(100_000, {}), buys=buys, cash_reserve=0.6)

    bought = sum(o.est_value for o in plan.orders if o.origin is Origin.PM)
    assert bought <= Decimal(40_000)
    assert plan.cash_floor == Decimal(60_000)


@settings(max_examples=60, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(
    cash=st.integers(0, 200_000),
    held=st.dictionaries(st.sampled_from(sorted(SECTORS)), st.integers(1, 600), max_size=6),
    buys=st.lists(
        st.tuples(st.sampled_from(sorted(SECTORS)), st.integers(1, 2_000)),
        max_size=6,
        unique_by=lambda b: b[0],
    ),
)
def test_any_plan_within_limits_stays_within_them_once_filled(
    cash: int, held: dict[str, int], buys: list[tuple[str, int]]
) -> None:
    held = {s: n for s, n in held.items() if s != "GONE"}
    book = _book(cash, held)
    plan = _plan(book, buys=[_buy(s, n) for s, n in buys if s not in held])
    final = _final(book, plan)
    start = Ledger(book, SECTORS)
    if book.cash_weight >= LIMITS.min_cash_weight and _within(start):
        _assert_within_limits(final)
    assert final.cash >= 0


def _within(ledger: Ledger) -> bool:
    try:
        _assert_within_limits(ledger)
    except AssertionError:
        return False
    return True


# --- prioritisation -------------------------------------------------------------------------


def _stock(
    ticker: str, sector: Sector, angle: ThesisAngle, conviction: Conviction
) -> StockToInvestigate:
    return StockToInvestigate(
        ticker=ticker, name=ticker, sector=sector, rationale="r", thesis_angle=angle,
        conviction=conviction,
    )  # fmt: skip


def test_candidates_are_scored_conviction_thesis_diversification_held() -> None:
    book = _book(65_000, {"IT1": 300, "IT2": 300, "EN1": 100})  # IT 30%: near the 35% cap
    stocks = [
        _stock("IT3", IT, ThesisAngle.GROWTH, Conviction.HIGH),
        _stock("UT1", UTIL, ThesisAngle.VALUE, Conviction.MEDIUM),
        _stock("EN1", ENERGY, ThesisAngle.MOMENTUM, Conviction.HIGH),
        _stock("EN2", ENERGY, ThesisAngle.DEFENSIVE, Conviction.LOW),
    ]
    ranked = prioritize(stocks, book, SECTORS, LIMITS).ranked

    scores = {c.ticker: c.score for c in ranked}
    assert scores == {
        "IT3": 3 * 3 * 0.5,  # IT above 70% of its cap
        "UT1": 2 * 2 * 2,  # a new sector
        "EN1": 3 * 2.5 * 1 * 0.5,  # held, sector held
        "EN2": 1 * 1 * 1,
    }
    assert [c.ticker for c in ranked] == ["UT1", "IT3", "EN1", "EN2"]


def test_a_sector_at_its_cap_scores_zero_and_is_dropped() -> None:
    book = _book(30_000, {"IT1": 400, "IT2": 400})  # IT 40%
    result = prioritize(
        [_stock("IT3", IT, ThesisAngle.GROWTH, Conviction.HIGH)], book, SECTORS, LIMITS
    )

    assert result.ranked == [] and result.dropped[0].score == 0
    assert "at its 35% cap" in result.dropped[0].reasons[0]


def test_the_memory_gate_counts_only_lessons_similar_enough() -> None:
    stocks = [_stock(t, UTIL, ThesisAngle.VALUE, Conviction.MEDIUM) for t in ("UT1", "EN2")]
    lessons = {
        "UT1": LessonMatch(
            score=0.55, alpha=-0.04, lesson="Do not buy into a dividend cut.", as_of=AS_OF
        ),
        "EN2": LessonMatch(score=0.12, alpha=-0.20, lesson="unrelated", as_of=AS_OF),
    }
    ranked = {
        c.ticker: c for c in prioritize(stocks, _book(100_000, {}), SECTORS, LIMITS, lessons).ranked
    }

    assert ranked["UT1"].factors["memory"] == 0.5
    assert (
        "lost -4.0% against the benchmark: Do not buy into a dividend cut."
        in ranked["UT1"].reasons[-1]
    )
    assert ranked["EN2"].factors["memory"] == 1.0


# --- the paper broker -----------------------------------------------------------------------


@pytest.fixture(scope="module")
def reader() -> MarketReader:
    return MarketReader(
        DataRouter({"sim": SimVendor()}, {k: ("sim",) for k in DEFAULT_ROUTES}), AS_OF
    )


def test_the_broker_fills_once_per_key_however_often_it_runs(
    tmp_path: Path, reader: MarketReader
) -> None:
    store = PortfolioStore(f"sqlite:///{tmp_path / 'book.db'}")
    store.create("demo", 100_000)
    quotes = reader.quotes(["QBTX", "LMNW", TBILL_ETF, "NOPE"])
    book = value_book(store.get("demo"), [], quotes, AS_OF)
    buys = [_buy_at("QBTX", quotes), _buy_at("LMNW", quotes), _buy_at("NOPE", quotes)]
    sized = size_orders(book, [], buys, quotes, reader.sectors(quotes), LIMITS, COSTS)
    plan = sweep_cash(sized, book, quotes, reader.sectors(quotes))
    broker = PaperBroker(store, reader)

    first = broker.execute("demo", plan.orders, COSTS, run_key="wf-1", as_of=AS_OF)
    again = broker.execute("demo", plan.orders, COSTS, run_key="wf-1", as_of=AS_OF)

    assert [e.new for e in first.executed] == [True] * 3
    assert [e.new for e in again.executed] == [False] * 3
    assert [e.trade for e in again.executed] == [e.trade for e in first.executed]
    assert len(store.trades("demo")) == 3
    assert first.executed[0].trade.key == trade_key("wf-1", 0)
    cash = Decimal(100_000) + sum(e.trade.cash_change for e in first.executed)
    assert store.get("demo").cash == cash
    assert [r.symbol for r in sized.rejected] == ["NOPE"]


def test_a_close_missing_at_execution_refuses_that_order_only(
    tmp_path: Path, reader: MarketReader
) -> None:
    store = PortfolioStore(f"sqlite:///{tmp_path / 'book.db'}")
    store.create("demo", 100_000)
    quotes = reader.quotes(["QBTX"]) | {"ZZZZ": _quote("ZZZZ", 10)}
    book = value_book(store.get("demo"), [], quotes, AS_OF)
    sized = size_orders(
        book, [], [_buy("ZZZZ", 10), _buy_at("QBTX", quotes)], quotes, SECTORS, LIMITS, COSTS
    )
    done = PaperBroker(store, reader).execute(
        "demo", sized.orders, COSTS, run_key="wf", as_of=AS_OF
    )

    [refused] = done.rejected
    assert refused.symbol == "ZZZZ" and refused.index == 0 and "no close" in refused.reason
    assert [e.trade.symbol for e in done.executed] == ["QBTX"]
    assert store.trade(trade_key("wf", 0)) is None


def _buy_at(ticker: str, quotes: dict[str, Quote | QuoteMissing]) -> BuyOrder:
    quote = quotes[ticker]
    close = float(quote.price) if isinstance(quote, Quote) else 10.0
    return BuyOrder(
        ticker=ticker, shares=50, stop_loss=close * 0.9, take_profit=close * 1.2, rationale="t"
    )
