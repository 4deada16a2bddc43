"""What the data layer serves for one symbol as of one time, kind by kind: which vendor
answered, what it returned, and why every vendor before it in the chain did not.

`quantdesk data check` prints it; it reads through the same router the tools workers build,
so what it shows is what an agent of a run with that ``as_of`` would read.
"""

from __future__ import annotations

from collections.abc import Callable, Iterator
from dataclasses import dataclass
from datetime import UTC, date, datetime, timedelta
from typing import Any

from pydantic import BaseModel, Field
from pydantic_core import to_jsonable_python

from shared.data.contracts import DataKind, DataVendor, Sector, StatementKind
from shared.data.router import DataRouter
from shared.errors import QuantdeskError
from shared.market.bars import Timeframe

WINDOW = timedelta(days=30)
"""How far back the windowed kinds (news, posts, insider trades) look."""
TIME_FIELDS = ("time", "published_at", "posted_at", "reported_at", "filed_at", "released_at")
"""The fields that date a record: the latest of them is shown per kind."""


@dataclass(frozen=True)
class CheckQuery:
    """What is asked of every kind."""

    symbol: str
    as_of: datetime
    series: str = "CPI"
    sector: Sector = Sector.INFORMATION_TECHNOLOGY


READS: dict[DataKind, Callable[[DataVendor, CheckQuery], object]] = {
    DataKind.OHLCV: lambda v, q: v.ohlcv(q.symbol, Timeframe.D1, q.as_of, 30),
    DataKind.NEWS: lambda v, q: v.news(q.as_of, WINDOW, symbol=q.symbol),
    DataKind.SOCIAL: lambda v, q: v.social(q.symbol, q.as_of, WINDOW),
    DataKind.FUNDAMENTALS: lambda v, q: v.fundamentals(q.symbol, q.as_of),
    DataKind.STATEMENTS: lambda v, q: v.statements(q.symbol, StatementKind.INCOME, q.as_of),
    DataKind.INSIDER: lambda v, q: v.insider(q.symbol, q.as_of, WINDOW),
    DataKind.SECTORS: lambda v, q: v.sectors(q.as_of),
    DataKind.INDUSTRY: lambda v, q: v.industry(q.sector, q.as_of),
    DataKind.MOVERS: lambda v, q: v.movers(q.as_of),
    DataKind.INDICES: lambda v, q: v.indices(q.as_of),
    DataKind.MACRO: lambda v, q: v.macro(q.series, q.as_of),
    DataKind.UNIVERSE: lambda v, q: v.universe(q.as_of),
}
"""One read per kind, the one its tools make most."""


class KindCheck(BaseModel):
    """One kind's outcome."""

    kind: DataKind
    vendor: str | None = Field(description="the vendor that answered; None when none did")
    records: int = Field(0, description="records returned (points of a series, movers...)")
    latest: datetime | date | None = Field(None, description="the latest date on a record")
    passed: list[str] = Field(description="each vendor before the one that answered, and why")
    problem: str = Field("", description="why no vendor answered")
    data: Any = Field(None, description="the records, as JSON")


def check(router: DataRouter, query: CheckQuery, kinds: list[DataKind]) -> list[KindCheck]:
    """Each of ``kinds`` read through ``router`` as of ``query.as_of``."""
    return [_check_kind(router, query, kind) for kind in kinds]


def _check_kind(router: DataRouter, query: CheckQuery, kind: DataKind) -> KindCheck:
    read = READS[kind]
    try:
        routed = router.call(kind, lambda vendor: read(vendor, query), as_of=query.as_of)
    except QuantdeskError as error:
        return KindCheck(kind=kind, vendor=None, passed=[], problem=str(error))
    records = list(records_of(routed.value))
    dates = [when for record in records for when in dates_of(record)]
    return KindCheck(
        kind=kind,
        vendor=routed.vendor,
        records=len(records),
        latest=max(dates, key=_comparable, default=None),
        passed=list(routed.passed),
        data=to_jsonable_python(routed.value),
    )


def records_of(value: object) -> Iterator[object]:
    """The records of an answer: its items, or the records a model lists (a series' points,
    the movers of each list), or the model itself."""
    if isinstance(value, list | tuple):
        for item in value:
            yield from records_of(item)
        return
    if isinstance(value, BaseModel):
        groups = [
            field
            for field in vars(value).values()
            if isinstance(field, list) and field and all(isinstance(i, BaseModel) for i in field)
        ]
        if groups:
            for group in groups:
                yield from records_of(group)
            return
    yield value


def dates_of(record: object) -> Iterator[datetime | date]:
    """Every date a record carries in ``TIME_FIELDS``."""
    for name in TIME_FIELDS:
        when = getattr(record, name, None)
        if isinstance(when, datetime | date):
            yield when


def _comparable(when: datetime | date) -> datetime:
    """A date as the start of its day in UTC, so dates and times compare."""
    if isinstance(when, datetime):
        return when
    return datetime(when.year, when.month, when.day, tzinfo=UTC)
