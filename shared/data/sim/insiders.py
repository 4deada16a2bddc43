"""Insider trades: routine sales, the odd purchase, and clusters of buying before big beats.

The clusters are what the Scan's smart-money screen looks for: several insiders
of one company buying in the weeks before a report that beats by a wide margin.
Each trade is filed two business days after it is made (the Form 4 deadline)
and visible only from then.
"""

from __future__ import annotations

import numpy as np

from shared.data.contracts import InsiderTransaction
from shared.data.sim.factors import Market, at_utc, utc_datetime
from shared.data.sim.names import INSIDER_ROLES
from shared.data.sim.prices import Bars
from shared.data.sim.statements import Books
from shared.data.sim.tables import EventTable
from shared.data.sim.universe import COMPANIES

BUY, SELL = 0, 1
_SIDES = ("buy", "sell")
_ROUTINE = (  # side, trades per company per year, median USD value
    (SELL, 3.0, 1.0e6),
    (BUY, 0.4, 2.0e5),
)
_VALUE_SPREAD = 0.8  # log-normal sigma of a trade's value
_CLUSTER_SURPRISE = 0.10  # a beat at least this large may be preceded by insider buying...
_CLUSTER_CHANCE = 0.7  # ...this often
_CLUSTER_BUYERS = (2, 4)  # insiders buying in one cluster, inclusive
_CLUSTER_SESSIONS = (3, 20)  # how many sessions before the report each buys, inclusive
_CLUSTER_VALUE = 3.0e5  # median USD value of each clustered purchase
_FILING_DELAY = 2  # business days from trade to filing
_FILING_HOUR = 22  # filings land in the evening, UTC


def build_insiders(
    rng: np.random.Generator, market: Market, books: Books, stocks: Bars
) -> EventTable:
    """Every insider trade of the world, by filing time."""
    parts = [_routine(rng, market, side, rate, value) for side, rate, value in _ROUTINE]
    parts.append(_clusters(rng, books))
    company, insider, side, session, value = (np.concatenate(c) for c in zip(*parts, strict=True))
    price = np.round(
        (stocks.high + stocks.low + stocks.close)[session, company] / 3, 2
    )  # a typical price of the day, inside its range
    traded = market.days[session]
    filed = np.busday_offset(traded, _FILING_DELAY, roll="forward")
    columns = {
        "company": company,
        "insider": insider,
        "side": side,
        "shares": np.maximum(np.round(value / price, -1), 10),
        "price": price,
        "traded": traded,
        "filed": at_utc(filed, _FILING_HOUR),
    }
    return EventTable.build(columns, time="filed", keys={"company": "company"})


def _routine(
    rng: np.random.Generator, market: Market, side: int, per_year: float, median: float
) -> tuple[np.ndarray, ...]:
    n = len(COMPANIES)
    company = np.repeat(np.arange(n), rng.poisson(per_year * market.years, n))
    count = len(company)
    return (
        company,
        rng.integers(0, len(INSIDER_ROLES), count),
        np.full(count, side),
        rng.integers(0, market.size, count),
        median * np.exp(rng.normal(0, _VALUE_SPREAD, count)),
    )


def _clusters(rng: np.random.Generator, books: Books) -> tuple[np.ndarray, ...]:
    """Purchases by distinct insiders in the weeks before the world's biggest beats."""
    eligible = (books.surprise >= _CLUSTER_SURPRISE) & (
        books.report_session >= _CLUSTER_SESSIONS[1]
    )
    company, quarter = np.nonzero(eligible & (rng.random(books.surprise.shape) < _CLUSTER_CHANCE))
    buyers = rng.integers(_CLUSTER_BUYERS[0], _CLUSTER_BUYERS[1] + 1, len(company))
    # A random order of the roster per cluster; its first ``buyers`` insiders buy.
    order = np.argsort(rng.random((len(company), len(INSIDER_ROLES))), axis=1)
    takes = np.arange(len(INSIDER_ROLES))[None, :] < buyers[:, None]
    cluster, _ = np.nonzero(takes)
    count = len(cluster)
    lead = rng.integers(_CLUSTER_SESSIONS[0], _CLUSTER_SESSIONS[1] + 1, count)
    return (
        company[cluster],
        order[takes],
        np.full(count, BUY),
        books.report_session[company, quarter][cluster] - lead,
        _CLUSTER_VALUE * np.exp(rng.normal(0, _VALUE_SPREAD, count)),
    )


def insider_record(
    table: EventTable, row: int, roster: list[tuple[str, ...]]
) -> InsiderTransaction:
    """One row of the insider table as a record."""
    c = table.columns
    company, insider = int(c["company"][row]), int(c["insider"][row])
    return InsiderTransaction(
        symbol=COMPANIES[company].symbol,
        insider=roster[company][insider],
        role=INSIDER_ROLES[insider],
        side=_SIDES[int(c["side"][row])],
        shares=float(c["shares"][row]),
        price=float(c["price"][row]),
        traded_on=c["traded"][row].item(),
        filed_at=utc_datetime(c["filed"][row]),
        simulated=True,
    )
