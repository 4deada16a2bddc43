"""What a news row says: its kind, topics and headline, rendered from the row's numbers.

Headlines are templates filled in at read time: the news table (``news``) stays
a few numeric arrays, and a read renders only the items it returns.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from datetime import datetime
from enum import IntEnum

import numpy as np
import pandas as pd

from shared.data.contracts import NewsItem
from shared.data.sim.factors import utc_datetime
from shared.data.sim.statements import Books
from shared.data.sim.tables import EventTable
from shared.data.sim.universe import COMPANIES, SYMBOLS


class Kind(IntEnum):
    """What a news row reports; decides its topics and headline templates."""

    PREVIEW = 0
    EARNINGS = 1
    RECAP = 2
    SHOCK = 3
    ROUTINE = 4
    MARKETS = 5
    CENTRAL_BANK = 6
    INFLATION = 7
    JOBS = 8
    GEOPOLITICS = 9
    ENERGY = 10


TOPICS: dict[Kind, tuple[str, ...]] = {
    Kind.PREVIEW: ("earnings",),
    Kind.EARNINGS: ("earnings",),
    Kind.RECAP: ("earnings", "markets"),
    Kind.SHOCK: ("company",),
    Kind.ROUTINE: ("company",),
    Kind.MARKETS: ("markets", "macro"),
    Kind.CENTRAL_BANK: ("central-bank", "macro"),
    Kind.INFLATION: ("macro", "inflation"),
    Kind.JOBS: ("macro", "labor"),
    Kind.GEOPOLITICS: ("geopolitics",),
    Kind.ENERGY: ("energy", "commodities"),
}
ALL_TOPICS: tuple[str, ...] = tuple(sorted({t for topics in TOPICS.values() for t in topics}))

_SOURCES = ("SimWire", "The Mock Ledger", "Paper Street Journal", "Fictional Finance Daily")

_SHOCK_UP = (
    ("{name} wins multi-year supply contract", "{name} ({symbol}) disclosed a multi-year agreement with a large customer late on {day}."),
    ("{name} raises full-year outlook", "{name} ({symbol}) lifted its revenue guidance for the year, citing strong demand."),
    ("{name} wins patent ruling against a rival", "A court upheld the key patents of {name} ({symbol}) and barred a competitor's copies."),
    ("Regulators clear {name}'s flagship product", "{name} ({symbol}) received approval it had been waiting on for its main product line."),
    ("{name} expands into a fast-growing market", "{name} ({symbol}) said it will enter a new market with a partner that already has customers there."),
)  # fmt: skip
_SHOCK_DOWN = (
    ("{name} faces regulatory probe", "Regulators opened an inquiry into the accounting practices of {name} ({symbol})."),
    ("{name} cuts full-year outlook", "{name} ({symbol}) lowered its guidance, citing weaker orders."),
    ("{name} CEO resigns unexpectedly", "The chief executive of {name} ({symbol}) stepped down effective immediately."),
    ("{name} recalls products after defect reports", "{name} ({symbol}) announced a voluntary recall affecting part of its product range."),
    ("{name} loses its largest customer", "A major customer said it would not renew its contract with {name} ({symbol})."),
)  # fmt: skip
_ROUTINE_TEMPLATES = (
    ("{name} launches new product line", "{name} ({symbol}) introduced an update to its core offering."),
    ("{name} to present at industry conference", "Management of {name} ({symbol}) will present at an investor conference next month."),
    ("Analyst initiates coverage of {name}", "A brokerage started covering {name} ({symbol}) with a neutral view."),
    ("{name} announces partnership", "{name} ({symbol}) entered a distribution partnership in a new region."),
    ("{name} declares quarterly dividend", "The board of {name} ({symbol}) declared its regular quarterly dividend."),
    ("{name} names new chief technology officer", "{name} ({symbol}) appointed an industry veteran to lead its technology."),
    ("{name} opens new facility", "{name} ({symbol}) opened a facility it says will add capacity next year."),
    ("{name} holds annual shareholder meeting", "Shareholders of {name} ({symbol}) re-elected the board."),
)  # fmt: skip
_GEOPOLITICS_TEMPLATES = (  # title, summary, tone (the sentiment it carries)
    ("Trade tensions escalate between major economies", "New tariffs were threatened on a range of industrial goods.", -0.5),
    ("Border standoff raises regional security concerns", "Troop movements near a disputed border drew international calls for restraint.", -0.6),
    ("Election outcome brings policy uncertainty", "A contested election in a large economy clouded the outlook for fiscal policy.", -0.3),
    ("Sanctions widened against a commodity exporter", "Allied governments extended sanctions to more sectors of the exporter's economy.", -0.4),
    ("Peace talks make progress", "Negotiators reported progress toward ending a long-running regional conflict.", 0.4),
    ("Trade agreement signed between major partners", "The agreement lowers tariffs on manufactured goods over five years.", 0.5),
    ("Summit ends with joint statement on cooperation", "Leaders pledged closer coordination on trade and security.", 0.3),
)  # fmt: skip
_ENERGY_UP = (
    ("Oil jumps as major producers agree to cut output", "Producers agreed late on {day} to curb supply from next month."),
    ("Pipeline outage tightens crude supply", "A major pipeline shut after a leak; operators gave no restart date."),
)  # fmt: skip
_ENERGY_DOWN = (
    ("Oil slides as inventories swell", "Weekly data showed stockpiles rising for a third straight week."),
    ("Producers signal higher output", "Large producers said they would raise supply to defend market share."),
)  # fmt: skip
_RATE_TEMPLATES = (
    ("Fed cuts rates; funds rate near {a:.2f}%", "The central bank lowered its policy rate by {abs_b:.2f} points."),
    ("Fed holds rates steady near {a:.2f}%", "The central bank left its policy rate unchanged; it moved {abs_b:.2f} points since the last meeting."),
    ("Fed raises rates; funds rate near {a:.2f}%", "The central bank raised its policy rate by {abs_b:.2f} points, citing a firm labour market."),
)  # fmt: skip


ROUTINE_HEADLINES = len(_ROUTINE_TEMPLATES)
GEOPOLITICS_TONES: tuple[float, ...] = tuple(tone for _, _, tone in _GEOPOLITICS_TEMPLATES)


@dataclass(frozen=True)
class _Row:
    """One news row's numbers, with what its headline needs to look up."""

    template: int
    a: float
    b: float
    company: int
    quarter: int
    period: np.datetime64
    published: datetime
    books: Books

    def company_fields(self) -> dict[str, str]:
        company = COMPANIES[self.company]
        return {"name": company.name, "symbol": company.symbol, "day": f"{self.published:%b %d}"}

    @property
    def month(self) -> str:
        return f"{pd.Timestamp(self.period):%B %Y}"


def _pick(
    up: tuple[tuple[str, str], ...], down: tuple[tuple[str, str], ...], row: _Row
) -> tuple[str, str]:
    title, summary = (up if row.a > 0 else down)[row.template % len(up)]
    fields = row.company_fields() if row.company >= 0 else {"day": f"{row.published:%b %d}"}
    return title.format(**fields), summary.format(**fields)


def _routine_text(row: _Row) -> tuple[str, str]:
    title, summary = _ROUTINE_TEMPLATES[row.template]
    return title.format(**row.company_fields()), summary.format(**row.company_fields())


def _earnings_figures(row: _Row) -> tuple[str, float, float, str]:
    """Fiscal period, EPS, estimate, and whether it beat, missed or met."""
    eps = float(row.books.items["eps_diluted"][row.company, row.quarter])
    estimate = float(row.books.items["eps_estimate"][row.company, row.quarter])
    verdict = "beat" if eps > estimate else "missed" if eps < estimate else "met"
    return row.books.fiscal[row.quarter], eps, estimate, verdict


def _preview_text(row: _Row) -> tuple[str, str]:
    period, _, estimate, _ = _earnings_figures(row)
    reported = utc_datetime(row.books.reported_ns[row.company, row.quarter])
    f = row.company_fields()
    return (
        f"{f['name']} to report {period} results on {reported:%b %d}",
        f"{f['name']} ({f['symbol']}) reports after the close; analysts expect EPS of "
        f"${estimate:.2f}.",
    )


def _report_text(row: _Row) -> tuple[str, str]:
    period, eps, estimate, verdict = _earnings_figures(row)
    revenue = row.books.items["revenue"][row.company, row.quarter] / 1e9
    f = row.company_fields()
    return (
        f"{f['name']} {verdict} {period} estimates: EPS ${eps:.2f} vs ${estimate:.2f} expected",
        f"{f['name']} ({f['symbol']}) reported revenue of ${revenue:.2f} billion after the close.",
    )


def _recap_text(row: _Row) -> tuple[str, str]:
    period, eps, estimate, verdict = _earnings_figures(row)
    f = row.company_fields()
    return (
        f"{f['symbol']} {'rises' if row.a > 0 else 'falls'} {abs(row.a):.1%} after {period} results",
        f"Shares of {f['name']} moved after it {verdict} estimates "
        f"(EPS ${eps:.2f} vs ${estimate:.2f}).",
    )


def _markets_text(row: _Row) -> tuple[str, str]:
    verb, move = ("rallies", "rises") if row.a > 0 else ("slides", "falls")
    return (
        f"Wall Street {verb} as the S&P 500 {move} {abs(row.a):.1%}",
        f"The S&P 500 closed at {row.b:,.2f}.",
    )


def _rate_text(row: _Row) -> tuple[str, str]:
    title, summary = _RATE_TEMPLATES[row.template]
    return title.format(a=row.a), summary.format(abs_b=abs(row.b))


def _inflation_text(row: _Row) -> tuple[str, str]:
    return (
        f"Core inflation at {row.a:.1f}% in {row.month}",
        f"Consumer prices excluding food and energy rose {row.b:.1f}% from the month before "
        f"and {row.a:.1f}% from a year earlier.",
    )


def _jobs_text(row: _Row) -> tuple[str, str]:
    trend = "rises to" if row.b > 0 else "falls to" if row.b < 0 else "holds at"
    return (
        f"Unemployment rate {trend} {row.a:.1f}% in {row.month}",
        f"The jobless rate was {row.a:.1f}%, {row.b:+.1f} points from the month before.",
    )


def _geopolitics_text(row: _Row) -> tuple[str, str]:
    title, summary, _ = _GEOPOLITICS_TEMPLATES[row.template]
    return title, summary


_RENDER: dict[Kind, Callable[[_Row], tuple[str, str]]] = {
    Kind.PREVIEW: _preview_text,
    Kind.EARNINGS: _report_text,
    Kind.RECAP: _recap_text,
    Kind.SHOCK: lambda row: _pick(_SHOCK_UP, _SHOCK_DOWN, row),
    Kind.ROUTINE: _routine_text,
    Kind.MARKETS: _markets_text,
    Kind.CENTRAL_BANK: _rate_text,
    Kind.INFLATION: _inflation_text,
    Kind.JOBS: _jobs_text,
    Kind.GEOPOLITICS: _geopolitics_text,
    Kind.ENERGY: lambda row: _pick(_ENERGY_UP, _ENERGY_DOWN, row),
}


def news_item(table: EventTable, row: int, books: Books, seed: int) -> NewsItem:
    """One news row as a record, its headline rendered from the row's numbers."""
    c = table.columns
    kind = Kind(int(c["kind"][row]))
    symbol = int(c["symbol"][row])
    published = utc_datetime(c["time"][row])
    numbers = _Row(
        template=int(c["template"][row]),
        a=float(c["a"][row]),
        b=float(c["b"][row]),
        company=symbol if 0 <= symbol < len(COMPANIES) else -1,
        quarter=int(c["quarter"][row]),
        period=c["period"][row],
        published=published,
        books=books,
    )
    title, summary = _RENDER[kind](numbers)
    return NewsItem(
        id=f"sim{seed}-news-{row}",
        published_at=published,
        title=title,
        summary=summary,
        source=_SOURCES[row % len(_SOURCES)],
        symbols=[SYMBOLS[symbol]] if symbol >= 0 else [],
        topics=list(TOPICS[kind]),
        sentiment=round(float(c["sentiment"][row]), 3),
        simulated=True,
    )
