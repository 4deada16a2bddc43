"""Risk metrics of the book against values worked out by hand, and the cases that have none."""

from __future__ import annotations

import math
from datetime import UTC, date, datetime, timedelta
from decimal import Decimal

import pytest

from shared.data.contracts import Sector
from shared.portfolio.market import Closes, Quote, QuoteMissing
from shared.portfolio.models import Holding, Portfolio
from shared.portfolio.risk import MIN_RETURNS, measure_risk
from shared.portfolio.valuation import Valuation, value_book

AS_OF = datetime(2012, 6, 1, tzinfo=UTC)
DAYS = [date(2012, 1, 2) + timedelta(days=i) for i in range(40)]
RETURNS = [0.02, -0.01] * 10
"""20 daily returns: mean 0.005; every deviation ±0.015."""


def _path(returns: list[float], start: float = 100.0) -> list[float]:
    closes = [start]
    for r in returns:
        closes.append(closes[-1] * (1 + r))
    return closes


def _closes(symbol: str, closes: list[float]) -> Closes:
    return Closes(symbol=symbol, dates=DAYS[: len(closes)], closes=closes)


def _book(cash: str, held: dict[str, tuple[int, float, Sector | None]]) -> Valuation:
    book = Portfolio(initial_cash=Decimal(cash), cash=Decimal(cash), name="t", created_at=AS_OF)
    holdings = [
        Holding(
            symbol=s, shares=n, avg_cost=Decimal(str(p)), sector=sec, opened_at=AS_OF,
            updated_at=AS_OF,
        )
        for s, (n, p, sec) in held.items()
    ]  # fmt: skip
    quotes = {
        s: Quote(symbol=s, price=Decimal(str(p)), bar_time=AS_OF, vendor="t")
        for s, (_, p, _) in held.items()
    }
    return value_book(book, holdings, quotes, AS_OF)


ONE = _book("0", {"AAA": (1, _path(RETURNS)[-1], Sector.ENERGY)})
NO_RF = QuoteMissing(symbol="SGOV", reason="not in the test data")


def test_metrics_of_a_one_stock_book_match_the_hand_computation() -> None:
    bench = _closes("^GSPC", _path([r / 2 for r in RETURNS]))
    report = measure_risk(
        ONE, {"AAA": _closes("AAA", _path(RETURNS))}, bench, NO_RF, benchmark_symbol="^GSPC"
    )

    # stdev: sqrt(20 x 0.015^2 / 19) = 0.0153897; √252 = 15.8745.
    assert report.observations == 20
    assert report.mean_daily_return.value == pytest.approx(0.005)
    assert report.annualised_volatility.value == pytest.approx(0.244302, rel=1e-5)
    assert report.sharpe.value == pytest.approx(5.15749, rel=1e-5)
    # Downside deviation: sqrt(10 x 0.01^2 / 20) = 0.00707107 over all 20 days.
    assert report.sortino.value == pytest.approx(11.2250, rel=1e-5)
    # k = ceil(0.05 x 20) = 1: the worst day, -1%.
    assert report.var_95_1d.value == pytest.approx(0.01)
    assert report.var_95_1d_amount.value == pytest.approx(0.01 * float(ONE.total_value))
    assert report.max_drawdown.value == pytest.approx(0.01)
    assert report.beta.value == pytest.approx(2.0)
    assert report.risk_free.startswith("0") and any("risk-free" in n for n in report.notes)
    assert report.sector_weights == {"Energy": 1.0, "cash": 0.0}


def test_the_t_bill_return_is_the_risk_free_rate() -> None:
    tbill = _closes("SGOV", _path([0.0001] * 20))
    report = measure_risk(
        ONE, {"AAA": _closes("AAA", _path(RETURNS))}, NO_RF, tbill, benchmark_symbol="^GSPC"
    )

    assert report.sharpe.value == pytest.approx(0.0049 / 0.0153897 * math.sqrt(252), rel=1e-5)
    assert report.risk_free == "SGOV daily returns"
    assert report.beta.value is None and "not in the test data" in (report.beta.reason or "")


def test_cash_dampens_the_books_returns_and_a_drawdown_is_peak_to_trough() -> None:
    # 100 cash + 1 share: 100 -> 150 -> 75 -> 100; the book goes 200 -> 250 -> 175 -> 200.
    closes = [100.0, 150.0, 75.0, 100.0] + [100.0] * (MIN_RETURNS - 2)
    book = _book("100", {"AAA": (1, 100.0, None)})
    report = measure_risk(
        book, {"AAA": _closes("AAA", closes)}, NO_RF, NO_RF, benchmark_symbol="^GSPC"
    )

    assert report.daily_returns[:3] == pytest.approx([0.25, -0.3, 25 / 175])
    assert report.max_drawdown.value == pytest.approx(0.3)
    assert report.sector_weights == {"unclassified": 0.5, "cash": 0.5}
    assert report.largest_sector == "unclassified"


def test_holdings_correlate_on_the_days_they_share() -> None:
    book = _book("0", {h: (1, 100.0, Sector.UTILITIES) for h in ("AAA", "BBB", "CCC")})
    history = {
        "AAA": _closes("AAA", _path(RETURNS)),
        "BBB": _closes("BBB", _path([2 * r for r in RETURNS])),
        "CCC": _closes("CCC", _path([-r for r in RETURNS])),
    }
    report = measure_risk(book, history, NO_RF, NO_RF, benchmark_symbol="^GSPC")

    pairs = {(c.a, c.b): c.value.value for c in report.correlations}
    assert pairs == pytest.approx({("AAA", "BBB"): 1.0, ("AAA", "CCC"): -1.0, ("BBB", "CCC"): -1.0})
    assert report.average_correlation.value == pytest.approx(-1 / 3)


def test_too_little_history_is_stated_not_invented() -> None:
    short = _closes("AAA", _path(RETURNS[:9]))
    report = measure_risk(ONE, {"AAA": short}, NO_RF, NO_RF, benchmark_symbol="^GSPC")

    assert report.observations == 9
    for metric in (report.annualised_volatility, report.sharpe, report.var_95_1d, report.beta):
        assert metric.value is None
        assert metric.reason == "only 9 daily returns in the window (at least 20 are needed)"


def test_a_holding_without_history_is_left_out_and_named() -> None:
    book = _book("0", {"AAA": (1, 100.0, None), "ZZZ": (1, 5.0, None)})
    missing = QuoteMissing(symbol="ZZZ", reason="delisted")
    report = measure_risk(
        book,
        {"AAA": _closes("AAA", _path(RETURNS)), "ZZZ": missing},
        NO_RF,
        NO_RF,
        benchmark_symbol="^GSPC",
    )

    assert report.annualised_volatility.value is not None
    assert "ZZZ is left out of the series metrics: delisted" in report.notes


def test_an_all_cash_book_has_no_risk_and_no_ratio() -> None:
    report = measure_risk(_book("1000", {}), {}, NO_RF, NO_RF, benchmark_symbol="^GSPC")

    assert report.annualised_volatility.value == 0.0 and report.var_95_1d.value == 0.0
    assert report.beta.value == 0.0 and report.max_drawdown.value == 0.0
    assert report.sharpe.value is None and "all-cash" in (report.sharpe.reason or "")
    assert report.sortino.value is None
    assert report.sector_weights == {"cash": 1.0}


def test_a_book_that_only_gains_has_no_downside_deviation() -> None:
    rising = _closes("AAA", _path([0.01, 0.02] * 10))
    report = measure_risk(ONE, {"AAA": rising}, NO_RF, NO_RF, benchmark_symbol="^GSPC")

    assert report.sortino.value is None and "no downside" in (report.sortino.reason or "")
    assert report.var_95_1d.value == pytest.approx(-0.01)
