"""Quarterly books and earnings reports: drawn before prices, since reports move them.

Each quarter a company's revenue follows its trend and margins their norm,
pushed up or down by one surprise draw; the consensus estimate is what the
trend and norm predict, so the reported EPS beats or misses it by exactly what
the draw did, and the price reacts to that on the session after the report
(reports come after the close). Balance sheets roll forward from earnings, so
periods chain: equity = last equity + net income - distributions, and
assets = liabilities + equity exactly (whole dollars, so no rounding gap).
Cash-flow statements reconcile the change in cash, with investing the plug.

Four quarters are reported before the world starts, so a trailing P/E exists
on its first day; they are never priced.
"""

from __future__ import annotations

from dataclasses import dataclass
from datetime import date, timedelta

import numpy as np
import pandas as pd

from shared.data.contracts import LINE_ITEMS, Statement, StatementKind
from shared.data.sim.factors import Market, at_utc, utc_datetime
from shared.data.sim.universe import COMPANIES, CompanyParams

_PRE_WORLD_QUARTERS = 4  # reported before the start, so TTM figures exist from day one
_LATEST_PRE_WORLD_END = timedelta(days=60)  # a quarter ending this long before start is reported
_LAG_JITTER = 3  # days either side of a company's usual report lag
_ANNUAL_EXTRA_DAYS = 10  # a year-end (10-K) report comes later than a quarterly one
_REPORT_HOUR, _REPORT_MINUTE = 21, 5  # after the 16:00 New York close (EST), in UTC

_SURPRISE_MEAN = 0.3  # companies guide low, so beats outnumber misses
_SURPRISE_SCALE = 0.8  # scale of the Student-t(4) surprise draw: fat-tailed blowouts
_REVENUE_PER_SURPRISE = 0.012  # log revenue beat per unit of surprise draw
_MARGIN_PER_SURPRISE = 0.05  # relative operating-margin beat per unit of surprise draw
_REVENUE_NOISE = 0.005  # log revenue miss the surprise draw does not explain
_MARGIN_NOISE = 0.01  # relative gross-margin noise (operating margins get twice it)
_TREND_NOISE = 0.015  # quarterly log noise of the revenue trend analysts track
_WORKING_CAPITAL_NOISE = 0.02  # operating cash flow's swing around earnings, share of revenue
_SEASONALITY = 0.03  # log spread of the four quarters' seasonal revenue factors
_TAX_RATE = 0.21
_INTEREST_RATE = 0.04  # annual rate on debt
_EQUITY_REVERSION = 0.25  # share of the gap to target equity closed by buybacks or issues a quarter
_MAX_DEBT_SHARE = 0.9  # debt is at most this share of liabilities
_BALANCE_ADJUSTMENT = 0.3  # share of the gap to its target ratio debt or cash closes a quarter
_RATIO_NOISE = 0.05  # log noise of those targets
_ASSET_NOISE = 0.005  # quarterly log noise of total assets around their revenue-based level
_DEPRECIATION = 0.05  # depreciation and amortisation, as a share of revenue
_EPS_FLOOR = 0.05  # USD; below this |estimate| a relative surprise is meaningless
_PS_FLOOR = 1.0  # price/sales used to size a loss-making company instead of P/E

_REACTION_PER_SURPRISE = 0.4  # overnight log move per unit of relative EPS surprise
_REACTION_CLIP = 0.5  # surprises beyond +/-50% move the price no more
_REACTION_NOISE = 0.015  # what the headline number does not explain

_SIM_ONLY_ITEMS = {  # beyond the shared LINE_ITEMS: what the surprise and the payout were
    StatementKind.INCOME: ("eps_estimate",),
    StatementKind.BALANCE: (),
    StatementKind.CASH_FLOW: ("dividends_paid",),
}
ITEMS: dict[StatementKind, tuple[str, ...]] = {
    kind: LINE_ITEMS[kind] + _SIM_ONLY_ITEMS[kind] for kind in StatementKind
}
"""The line items of each statement: every vendor's names, then the sim's own."""


@dataclass(frozen=True)
class Books:
    """All companies' quarters: arrays over (company, quarter) unless said otherwise."""

    period_end: np.ndarray  # (quarters,) datetime64[D]
    fiscal: tuple[str, ...]  # (quarters,) e.g. "2012Q3"
    reported_ns: np.ndarray  # when the report and all three statements became public
    report_session: np.ndarray  # session of the report, -1 if before or after the world
    reaction: np.ndarray  # session whose open prices it in, -1 if none in the world
    in_world: np.ndarray  # reported by the world's last session
    surprise: np.ndarray  # (eps - eps_estimate) / |eps_estimate|
    reaction_jump: np.ndarray  # overnight log move it causes
    shares: np.ndarray  # (companies,) shares outstanding
    items: dict[str, np.ndarray]  # line item -> values


def build_books(rng: np.random.Generator, params: CompanyParams, market: Market) -> Books:
    """Every company's quarters from four before the world's start to its end."""
    ends = _quarter_ends(market.days[0].item(), market.days[-1].item())
    n, q = len(COMPANIES), len(ends)
    reported_ns, report_session = _schedule(rng, params, market, ends)
    draw = rng.standard_t(4, (n, q)) * _SURPRISE_SCALE + _SURPRISE_MEAN
    estimate_revenue = _trend_revenue(rng, params, ends)
    revenue = estimate_revenue * np.exp(
        _REVENUE_PER_SURPRISE * draw + rng.normal(0, _REVENUE_NOISE, (n, q))
    )
    gross_margin = params.gross_margin[:, None] * np.exp(rng.normal(0, _MARGIN_NOISE, (n, q)))
    margin = params.operating_margin[:, None] * (
        1 + _MARGIN_PER_SURPRISE * draw + rng.normal(0, 2 * _MARGIN_NOISE, (n, q))
    )
    gross_profit = np.round(revenue * gross_margin)
    operating_income = np.minimum(np.round(revenue * margin), gross_profit)
    items = _roll_forward(rng, params, estimate_revenue, revenue, operating_income)
    estimate_net = _after_interest_and_tax(
        estimate_revenue * params.operating_margin[:, None], items.pop("interest")
    )
    shares = _shares(params, items["net_income"][:, :_PRE_WORLD_QUARTERS], revenue)
    eps = np.round(items["net_income"] / shares[:, None], 2)  # one share class: basic = diluted
    eps_estimate = np.round(estimate_net / shares[:, None], 2)
    surprise = (eps - eps_estimate) / np.maximum(np.abs(eps_estimate), _EPS_FLOOR)
    reaction_jump = _REACTION_PER_SURPRISE * np.clip(surprise, -_REACTION_CLIP, _REACTION_CLIP)
    reaction_jump += rng.normal(0, _REACTION_NOISE, (n, q))
    reaction = np.where(
        (report_session >= 0) & (report_session + 1 < market.size), report_session + 1, -1
    )
    items.update(
        revenue=np.round(revenue),
        gross_profit=gross_profit,
        operating_income=operating_income,
        eps_diluted=eps,
        eps_estimate=eps_estimate,
        shares_outstanding=np.repeat(shares[:, None], q, axis=1),
    )
    return Books(
        period_end=ends,
        fiscal=tuple(f"{d.year}Q{(d.month - 1) // 3 + 1}" for d in ends.tolist()),
        reported_ns=reported_ns,
        report_session=report_session,
        reaction=reaction,
        in_world=reported_ns <= market.end_ns,
        surprise=surprise,
        reaction_jump=reaction_jump,
        shares=shares,
        items=items,
    )


def _quarter_ends(start: date, end: date) -> np.ndarray:
    """Calendar quarter ends: the last few reported before ``start``, then all up to ``end``."""
    before = pd.date_range(
        end=start - _LATEST_PRE_WORLD_END, periods=_PRE_WORLD_QUARTERS, freq="QE"
    )
    return pd.date_range(before[0], end, freq="QE").to_numpy().astype("datetime64[D]")


def _schedule(
    rng: np.random.Generator, params: CompanyParams, market: Market, ends: np.ndarray
) -> tuple[np.ndarray, np.ndarray]:
    """When each quarter is reported (after the close) and on which session, -1 if pre-world."""
    n, q = len(COMPANIES), len(ends)
    year_end = np.array([d.month == 12 for d in ends.tolist()])
    lag = params.report_lag[:, None] + rng.integers(-_LAG_JITTER, _LAG_JITTER + 1, (n, q))
    lag = lag + _ANNUAL_EXTRA_DAYS * year_end
    wanted = np.busday_offset(ends[None, :] + lag.astype("timedelta64[D]"), 0, roll="forward")
    session = np.searchsorted(market.days, wanted, side="left")
    before_world = wanted < market.days[0]
    in_world = ~before_world & (session < market.size)
    day = np.where(in_world, market.days[np.minimum(session, market.size - 1)], wanted)
    return at_utc(day, _REPORT_HOUR, _REPORT_MINUTE), np.where(in_world, session, -1)


def _trend_revenue(rng: np.random.Generator, params: CompanyParams, ends: np.ndarray) -> np.ndarray:
    """The revenue analysts expect: a growing random-walk trend times a seasonal factor."""
    n, q = len(COMPANIES), len(ends)
    steps = np.log1p(params.growth)[:, None] / 4 + rng.normal(0, _TREND_NOISE, (n, q))
    steps[:, 0] = 0.0
    season = rng.normal(0, _SEASONALITY, (n, 4))
    season -= season.mean(axis=1, keepdims=True)
    quarter_of_year = np.array([(d.month - 1) // 3 for d in ends.tolist()])
    log_revenue = np.log(params.revenue / 4)[:, None] + np.cumsum(steps, axis=1)
    return np.exp(log_revenue + season[:, quarter_of_year])


def _after_interest_and_tax(operating_income: np.ndarray, interest: np.ndarray) -> np.ndarray:
    pretax = operating_income - interest
    return pretax * np.where(pretax > 0, 1 - _TAX_RATE, 1.0)


def _roll_forward(
    rng: np.random.Generator,
    params: CompanyParams,
    trend: np.ndarray,
    revenue: np.ndarray,
    operating_income: np.ndarray,
) -> dict[str, np.ndarray]:
    """Net income, balance sheet and cash flow, quarter by quarter (each needs the last)."""
    n = revenue.shape[0]
    quarters: dict[str, list[np.ndarray]] = {}
    assets = np.round(params.asset_intensity * 4 * trend[:, 0])
    equity = np.round(params.equity_ratio * assets)
    debt = np.round(params.debt_ratio * assets)
    cash = np.round(params.cash_ratio * assets)
    for k in range(revenue.shape[1]):
        interest = debt * _INTEREST_RATE / 4
        net_income = np.round(_after_interest_and_tax(operating_income[:, k], interest))
        new_assets = np.round(
            params.asset_intensity * 4 * trend[:, k] * np.exp(rng.normal(0, _ASSET_NOISE, n))
        )
        dividends = np.round(params.payout * np.maximum(net_income, 0))
        retained = equity + net_income - dividends
        buyback = np.round(_EQUITY_REVERSION * (retained - params.equity_ratio * new_assets))
        new_equity = retained - buyback
        liabilities = new_assets - new_equity
        new_debt = np.round(
            np.minimum(
                _toward(debt, params.debt_ratio * new_assets, rng.normal(0, _RATIO_NOISE, n)),
                _MAX_DEBT_SHARE * liabilities,
            )
        )
        new_cash = np.round(
            _toward(cash, params.cash_ratio * new_assets, rng.normal(0, _RATIO_NOISE, n))
        )
        operating = np.round(
            net_income
            + _DEPRECIATION * revenue[:, k]
            + rng.normal(0, _WORKING_CAPITAL_NOISE, n) * revenue[:, k]
        )
        financing = (new_debt - debt) - dividends - buyback
        investing = (new_cash - cash) - operating - financing
        for name, value in (
            ("net_income", net_income),
            ("interest", interest),
            ("total_assets", new_assets),
            ("total_liabilities", liabilities),
            ("total_equity", new_equity),
            ("cash", new_cash),
            ("total_debt", new_debt),
            ("operating_cash_flow", operating),
            ("investing_cash_flow", investing),
            ("financing_cash_flow", financing),
            ("free_cash_flow", operating + investing),
            ("dividends_paid", dividends),
        ):
            quarters.setdefault(name, []).append(value)
        assets, equity, debt, cash = new_assets, new_equity, new_debt, new_cash
    return {name: np.column_stack(values) for name, values in quarters.items()}


def _toward(current: np.ndarray, target: np.ndarray, noise: np.ndarray | float) -> np.ndarray:
    """Part way from ``current`` to a noisy ``target``: balances drift, they do not jump."""
    return current + _BALANCE_ADJUSTMENT * (target * np.exp(noise) - current)


def _shares(
    params: CompanyParams, first_year_income: np.ndarray, revenue: np.ndarray
) -> np.ndarray:
    """Shares outstanding that put the pre-world price at the sector's P/E on trailing earnings."""
    trailing = first_year_income.sum(axis=1)
    value = np.maximum(
        params.pe * trailing, _PS_FLOOR * revenue[:, :_PRE_WORLD_QUARTERS].sum(axis=1)
    )
    return np.round(value / params.price, -3)


def statement(books: Books, company: int, quarter: int, kind: StatementKind) -> Statement:
    """One (company, quarter)'s statement of ``kind`` as a record."""
    return Statement(
        symbol=COMPANIES[company].symbol,
        kind=kind,
        fiscal_period=books.fiscal[quarter],
        period_end=books.period_end[quarter].item(),
        reported_at=utc_datetime(books.reported_ns[company, quarter]),
        items={name: float(books.items[name][company, quarter]) for name in ITEMS[kind]},
        simulated=True,
    )
