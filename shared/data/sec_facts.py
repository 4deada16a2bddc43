"""SEC XBRL company facts as statements known at ``as_of``: each period in the version filed
last on or before it.

``companyfacts`` lists, per concept and unit, every value every filing reported: a quarter's
revenue appears in its own 10-Q, again as a comparative a year later, and again in a 10-K/A
that restates it. Each entry carries the period (``start``/``end``; an instant has ``end``
only), the filing (``accn``, ``form``, ``filed``) and the filing's own fiscal labels
(``fy``/``fp``, which describe the filing, not the period). So, for ``as_of``:

- an entry counts once its filing was public: its acceptance time where the submissions
  list gives it (``accepted``), else the end of its filing day in New York, never earlier;
- of the entries for one period, the one filed last counts: before a restatement the first
  value, after it the restated one, never a version filed later;
- a statement is a period end's items; it became public when the newest of the versions it
  uses did (``reported_at``), and its fiscal label is the one of the first filing that
  reported the period (its own 10-Q or 10-K).

Income and cash-flow items are durations: a quarter is a period of about three months. A
10-Q reports cash flows year to date, so a quarter missing as such is the difference of two
year-to-date periods that start on the same day. Balance items are instants.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from dataclasses import dataclass
from datetime import UTC, date, datetime, time
from zoneinfo import ZoneInfo

from pydantic import BaseModel, ConfigDict

from shared.data.contracts import Statement, StatementKind

NEW_YORK = ZoneInfo("America/New_York")
QUARTER_DAYS = range(80, 101)
"""A duration this long is one quarter."""
YEAR_DAYS = range(350, 380)
"""A duration this long is one fiscal year (52 or 53 weeks, or a calendar year)."""

CONCEPTS: dict[StatementKind, dict[str, tuple[str, ...]]] = {
    StatementKind.INCOME: {
        "revenue": (
            "Revenues",
            "RevenueFromContractWithCustomerExcludingAssessedTax",
            "SalesRevenueNet",
        ),
        "gross_profit": ("GrossProfit",),
        "operating_income": ("OperatingIncomeLoss",),
        "net_income": ("NetIncomeLoss",),
        "eps_diluted": ("EarningsPerShareDiluted",),
    },
    StatementKind.BALANCE: {
        "total_assets": ("Assets",),
        "total_liabilities": ("Liabilities",),
        "total_equity": ("StockholdersEquity",),
        "cash": ("CashAndCashEquivalentsAtCarryingValue",),
        "total_debt": ("LongTermDebt", "LongTermDebtNoncurrent"),
        "shares_outstanding": ("CommonStockSharesOutstanding",),
    },
    StatementKind.CASH_FLOW: {
        "operating_cash_flow": ("NetCashProvidedByUsedInOperatingActivities",),
        "investing_cash_flow": ("NetCashProvidedByUsedInInvestingActivities",),
        "financing_cash_flow": ("NetCashProvidedByUsedInFinancingActivities",),
        "capital_expenditure": ("PaymentsToAcquirePropertyPlantAndEquipment",),
    },
}
"""Our line items (``contracts.LINE_ITEMS``) → the us-gaap concepts that carry them, the first
one a company reports winning. Free cash flow is computed: operating less capital spending."""
UNITS = ("USD", "USD/shares", "shares")


class Fact(BaseModel):
    """One value as one filing reported it."""

    model_config = ConfigDict(extra="ignore", frozen=True)

    start: date | None = None
    end: date
    val: float
    accn: str
    form: str
    filed: date
    fy: int | None = None
    fp: str | None = None


@dataclass(frozen=True)
class Version:
    """A fact with the moment its filing became public."""

    fact: Fact
    public_at: datetime


def public_at(fact: Fact, accepted: Mapping[str, datetime]) -> datetime:
    """When ``fact``'s filing was public: its acceptance time, or the end of its filing day."""
    known = accepted.get(fact.accn)
    if known is not None:
        return known
    return datetime.combine(fact.filed, time(23, 59, 59), NEW_YORK).astimezone(UTC)


def concept_facts(facts: Mapping[str, object], concept: str) -> list[Fact]:
    """Every entry of a us-gaap ``concept`` in the first of ``UNITS`` it is reported in."""
    gaap = facts.get("us-gaap", {})
    units = gaap.get(concept, {}).get("units", {}) if isinstance(gaap, dict) else {}
    for unit in UNITS:
        if unit in units:
            return [Fact.model_validate(entry) for entry in units[unit]]
    return []


def known_at(
    entries: Iterable[Fact], as_of: datetime, accepted: Mapping[str, datetime]
) -> dict[tuple[date | None, date], Version]:
    """Per period (start, end), the version filed last that was public by ``as_of``."""
    chosen: dict[tuple[date | None, date], Version] = {}
    for fact in entries:
        when = public_at(fact, accepted)
        if when > as_of:
            continue
        key = (fact.start, fact.end)
        if key not in chosen or when >= chosen[key].public_at:
            chosen[key] = Version(fact, when)
    return chosen


Dated = tuple[float, datetime]
"""A value and when the newest filing it comes from was public."""


def quarters(periods: Mapping[tuple[date | None, date], Version]) -> dict[date, Dated]:
    """Quarter end → its value: reported as a quarter, or the difference of two year-to-date
    periods that start on the same day, or a year less its three other quarters (a filer whose
    10-Qs report the quarter alone states the fourth only inside its 10-K's year)."""
    found: dict[date, Dated] = {}
    for (start, end), version in periods.items():
        if start is not None and (end - start).days in QUARTER_DAYS:
            found[end] = (version.fact.val, version.public_at)
    by_start: dict[date, list[tuple[date, Version]]] = {}
    for (start, end), version in periods.items():
        if start is not None:
            by_start.setdefault(start, []).append((end, version))
    for spans in by_start.values():
        spans.sort(key=lambda span: span[0])
        for (shorter_end, shorter), (end, longer) in zip(spans, spans[1:], strict=False):
            if end not in found and (end - shorter_end).days in QUARTER_DAYS:
                public = max(longer.public_at, shorter.public_at)
                found[end] = (longer.fact.val - shorter.fact.val, public)
    for (start, end), year in periods.items():
        if start is None or end in found or (end - start).days not in YEAR_DAYS:
            continue
        inside = [dated for quarter_end, dated in found.items() if start < quarter_end < end]
        if len(inside) == 3:
            public = max(year.public_at, *(when for _, when in inside))
            found[end] = (year.fact.val - sum(value for value, _ in inside), public)
    return found


@dataclass
class _Period:
    """A statement in the making: its items, the newest version used, the first filing."""

    items: dict[str, float]
    reported_at: datetime
    label: str | None


def statements_known_at(
    symbol: str,
    kind: StatementKind,
    facts: Mapping[str, object],
    as_of: datetime,
    accepted: Mapping[str, datetime],
) -> list[Statement]:
    """``kind``'s quarterly statements of ``symbol`` as known at ``as_of``, newest first."""
    built: dict[date, _Period] = {}
    for item, concepts in CONCEPTS[kind].items():
        for concept in concepts:
            entries = concept_facts(facts, concept)
            if entries:
                _add_item(built, item, entries, kind, as_of, accepted)
                break
    if kind is StatementKind.CASH_FLOW:
        for period in built.values():
            spent = period.items.pop("capital_expenditure", None)
            operating = period.items.get("operating_cash_flow")
            if spent is not None and operating is not None:
                period.items["free_cash_flow"] = operating - spent
    return [
        Statement(
            symbol=symbol,
            kind=kind,
            fiscal_period=period.label or f"{end.year}Q{(end.month - 1) // 3 + 1}",
            period_end=end,
            reported_at=period.reported_at,
            items=period.items,
        )
        for end, period in sorted(built.items(), reverse=True)
        if period.items
    ]


def _add_item(
    built: dict[date, _Period],
    item: str,
    entries: list[Fact],
    kind: StatementKind,
    as_of: datetime,
    accepted: Mapping[str, datetime],
) -> None:
    """``item``'s value per period end, as known at ``as_of``, into ``built``."""
    periods = known_at(entries, as_of, accepted)
    if kind is StatementKind.BALANCE:
        values = {end: (v.fact.val, v.public_at) for (_start, end), v in periods.items()}
    else:
        values = quarters(periods)
    first_labels = _first_labels(entries)
    for end, (value, public) in values.items():
        period = built.setdefault(end, _Period({}, public, None))
        period.items[item] = value
        period.reported_at = max(period.reported_at, public)
        period.label = period.label or first_labels.get(end)


def _first_labels(entries: list[Fact]) -> dict[date, str]:
    """Period end → the fiscal label of the first filing that reported it (its own report)."""
    labels: dict[date, str] = {}
    for fact in sorted(entries, key=lambda f: f.filed):
        if fact.end in labels or fact.fy is None or fact.fp is None:
            continue
        quarter = "Q4" if fact.fp == "FY" else fact.fp
        labels[fact.end] = f"{fact.fy}{quarter}"
    return labels
